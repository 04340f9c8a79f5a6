"""Stream events into requests while a file's lines are counted: the one place a line's
facts are handed to the stream assembler (`genledger.ledger.streams`).

A line whose facts are a stream event (or a record that may end an open stream) is decoded
again here and fed to the file's `StreamState`; a request it settles becomes rows of the
books: one `stream_chunk` row per event, then the request's own facts, read by the
declarations from its final object exactly as a reply that was never streamed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from genledger.ledger.books import account
from genledger.ledger.streams import Partial, StreamState, request_object
from genledger.ledger.tally import FileTally
from genledger.parse.formats import response_facts
from genledger.parse.jsonline import records_of
from genledger.parse.schema import FRAGMENT, RESPONSES, Facts
from genledger.parse.streams import INCOMPLETE, event_family, is_neutral
from genledger.parse.table import TableBuilder
from genledger.refresh.reading import DEFAULT_READING, Reading

NAMES = [column.name for column in RESPONSES.facts]
CHUNK, FORMAT = NAMES.index("stream_chunk"), NAMES.index("format")  # read on every line


def request_facts(p: Partial, reading: Reading = DEFAULT_READING) -> list[Facts]:
    """The rows of a settled request: its events, then its facts (an unfinished stream is a
    failed request, `stream ended without its final event`)."""
    events = 0 if p.acc.get("n") == 1 and "o" in p.acc else int(p.acc.get("n", 0))
    if p.absorbed:
        return [FRAGMENT] * events
    facts: Any = response_facts(request_object(p), reading.formats)
    if p.incomplete:
        facts = facts._replace(
            failed_request=True,
            request_detail=INCOMPLETE,
            missing_detail=None,
            count_raw=None,
            n_samples=0,
        )
    return [FRAGMENT] * events + [facts]


@dataclass(frozen=True)
class StreamBooks:
    """Accounts the requests a merge of two stretches settles (picklable: it travels with a
    forked worker's tally)."""

    name: str
    reading: Reading = DEFAULT_READING

    def __call__(self, done: list[Partial]) -> FileTally:
        """The tally of the settled requests."""
        builder = TableBuilder("responses", self.name)
        for p in done:
            for item, facts in enumerate(request_facts(p, self.reading)):
                builder.add(p.line, p.offset, item, facts)
        if not builder.rows:
            return FileTally()
        return FileTally.accounted(account("responses", self.reading.params)(builder.rows))


class Assembler:
    """The stream state of one stretch being read, and its requests' rows."""

    def __init__(self, name: str, reading: Reading, anchored: bool) -> None:
        self.state = StreamState(anchored=anchored)
        self.books = StreamBooks(name, reading)

    def takes(self, facts: list[Facts]) -> bool:
        """Whether a line's records must be read as stream events (cheap: the facts only)."""
        state = self.state
        for fact in facts:
            if fact[CHUNK] or (fact[FORMAT] is not None and state.wants(fact[FORMAT])):
                return True
        return False

    def line(
        self, builder: TableBuilder, number: int, offset: int, content: bytes, facts: list[Facts]
    ) -> None:
        """Feed a line's records (events, or records that may end a stream) and add the rows
        of every request they settle; other records are added as they are."""
        records = records_of(content)
        for item, (obj, fact) in enumerate(zip(records, facts, strict=True)):
            chunk, form = fact[CHUNK], fact[FORMAT]
            family = event_family(obj) if chunk else None
            if chunk and (family is None or is_neutral(family, obj)):
                builder.add(number, offset, item, fact)  # an event of no request
                continue
            if family is not None and self.state.absorbs(family, obj):
                builder.add(number, offset, item, fact)  # its request ended at an error
                continue
            if family is None and not self.state.wants(form):
                builder.add(number, offset, item, fact)
                continue
            for p in self.state.feed(family, obj, number, offset, form):
                for index, row in enumerate(request_facts(p, self.books.reading)):
                    builder.add(p.line, p.offset, index, row)
