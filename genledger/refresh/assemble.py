"""Stream events into requests while a file's lines (or a Parquet shard's rows) are counted: the
one place their facts are handed to the stream assembler (`genledger.ledger.streams`).

A line whose facts are a stream event (or a record that may end an open stream) is decoded
again here and fed to the file's `StreamState`; a request it settles becomes rows of the
books: one `stream_chunk` row per event, then the request's own facts, read by the
declarations from its final object exactly as a reply that was never streamed.
"""

from __future__ import annotations

from typing import Any

from genledger.ledger.streambooks import CHUNK, FORMAT, StreamBooks, request_facts
from genledger.ledger.streams import StreamState
from genledger.parse.jsonline import records_of
from genledger.parse.schema import Facts
from genledger.parse.streams import CLOSER_FORMATS, event_family, fold, is_neutral
from genledger.parse.table import TableBuilder
from genledger.refresh.reading import Reading


class Assembler:
    """The stream state of one stretch being read, and its requests' rows."""

    def __init__(self, name: str, reading: Reading, anchored: bool) -> None:
        self.state = StreamState(anchored=anchored)
        self.books = StreamBooks(name, reading.formats, reading.params)

    def takes(self, facts: list[Facts]) -> bool:
        """Whether a line's records must be read as stream events (cheap: the facts only)."""
        for fact in facts:
            if fact[CHUNK]:
                return True
            form = fact[FORMAT]
            if form in CLOSER_FORMATS and self.state.wants(form):
                return True
        return False

    def line(
        self, builder: TableBuilder, number: int, offset: int, content: bytes, facts: list[Facts]
    ) -> None:
        """Feed a line's records (events, or records that may end a stream) and add the rows
        of every request they settle; other records are added as they are."""
        self.records(builder, number, offset, records_of(content), facts)

    def records(
        self,
        builder: TableBuilder,
        number: int,
        offset: int,
        records: list[Any],
        facts: list[Facts],
    ) -> None:
        """`line` of records already decoded (a Parquet row is one record)."""
        for item, (obj, fact) in enumerate(zip(records, facts, strict=True)):
            chunk, form = fact[CHUNK], fact[FORMAT]
            family = event_family(obj) if chunk else None
            # an event is folded once: the neutral test and the state read the same fold
            acc = None if family is None else fold(family, obj)
            if chunk and (family is None or is_neutral(family, obj, acc)):
                builder.add(number, offset, item, fact)  # an event of no request
                continue
            if family is not None and self.state.absorbs(family, obj):
                builder.add(number, offset, item, fact)  # its request ended at an error
                continue
            if family is None and not self.state.wants(form):
                builder.add(number, offset, item, fact)
                continue
            for p in self.state.feed(family, obj, number, offset, form, acc):
                for index, row in enumerate(request_facts(p, self.books.formats)):
                    builder.add(p.line, p.offset, index, row)
