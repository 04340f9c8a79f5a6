"""Stream events into requests while a file's lines (or a Parquet shard's rows) are counted: the
one place their facts are handed to the stream assembler (`genledger.ledger.streams`).

A line whose facts are a stream event (or a record that may end an open stream) is fed to the
file's `StreamState`; a request it settles becomes rows of the books: one `stream_chunk` row per
event, then the request's own facts, read by the declarations from its final object exactly as
a reply that was never streamed.

Events come in runs: after an event (`eager`), the next line is decoded first
(`genledger.fast.events.decoded`) and, when it is an event too, read here without the fact
decoders (its facts are `FRAGMENT`: the general path names every event so before reading
anything else, `parse.formats.response_facts`); the event's family and its fold and tests
are found once, by the reader generated for its key set (`genledger.fast.events.event_kind`),
and an event that carries on the latest request of its family is written into it in place
(`StreamState.extend`), the rest fed (`StreamState.feed`). Before all that, a line is
scanned in C (`delta`, `genledger.fast.deltas`): the usual delta is written into its request
there and a neutral event adds its row, without a decode. A line that is no event goes on to
the fact decoders, and its decoded object is reused if it must be fed. With the fast decoders
off (`Switches.fast`), every line and event takes the definitions.
"""

from __future__ import annotations

from typing import Any

from genledger.fast.deltas import KINDS, delta_of
from genledger.fast.events import READERS, FinalFacts, event_kind
from genledger.ledger.streambooks import CHUNK, FORMAT, StreamBooks, request_facts
from genledger.ledger.streams import StreamState
from genledger.parse.jsonline import records_of
from genledger.parse.schema import FRAGMENT, Facts
from genledger.parse.streams import CLOSER_FORMATS, Event, Family, event_family, read_event
from genledger.parse.table import TableBuilder
from genledger.refresh.reading import Reading


class Assembler:
    """The stream state of one stretch being read, and its requests' rows."""

    def __init__(self, name: str, reading: Reading, anchored: bool) -> None:
        self.state = StreamState(anchored=anchored)
        self.books = StreamBooks(name, reading.formats, reading.params)
        # with the fast decoders off, every line takes the general path and every event its
        # definitions (`parse.streams.read_event`)
        self.fast = reading.switches.fast
        self.eager = self.fast  # the next line may be an event: try it as one first
        self.readers = READERS if self.fast else None
        # the final objects of the requests settled here: by the typed shapes, when they hold
        self.final = FinalFacts(reading.formats, reading.switches) if self.fast else None
        self.deltas = delta_of if self.fast else None  # the C scan of the usual deltas

    def delta(self, builder: TableBuilder, number: int, offset: int, content: bytes) -> bool:
        """`event` of a line the C scan reads (`fast.deltas`): a neutral event (its row
        alone), or a delta that `extend` would write into the latest open request of its
        family (written in); True. False (nothing done) for any other line: `event` reads it."""
        found = None if self.deltas is None else self.deltas(content)
        if found is None:
            return False
        kind, key, model, text, reasoning, tools = found
        if text is None and reasoning is None and tools is None:  # no request's: a row alone
            builder.add(number, offset, 0, FRAGMENT)
            return True
        name, target = KINDS[kind].name, None
        for p in self.state.open:
            if p.family == name:
                if p.finished:
                    return False
                target = p
        if target is None or (key is not None and key != target.key):
            return False
        acc = target.acc
        # what `combine_into` keeps first must be there already (then nothing else changes)
        if "x" in acc or "o" in acc or (model and "m" not in acc) or (key and "i" not in acc):
            return False
        acc["n"] += 1
        if text is not None:
            acc["t"] = acc.get("t", "") + text
        if reasoning is not None:
            acc["r"] = acc.get("r", "") + reasoning
        if tools is not None:
            acc["tl"] = acc.get("tl", "") + tools
        target.line, target.offset = number, offset
        return True

    def takes(self, facts: list[Facts]) -> bool:
        """Whether a line's records must be read as stream events (cheap: the facts only)."""
        for fact in facts:
            if fact[CHUNK]:
                return True
            form = fact[FORMAT]
            if form in CLOSER_FORMATS and self.state.wants(form):
                return True
        return False

    def event(self, builder: TableBuilder, number: int, offset: int, obj: dict[str, Any]) -> bool:
        """Read `obj` (a line's one object) if it is a stream event, adding the rows of the
        requests it settles; False (nothing done) when it is none."""
        if self.readers is None:  # the definitions
            family = event_family(obj)
            event = None if family is None else read_event(family, obj)
        else:  # a reader made for the event's key set, found with its family
            kind = event_kind(obj)
            family, event = (None, None) if kind is None else (kind[0], kind[1](obj))
        self.eager = family is not None
        if family is None or event is None:
            return False
        self._event(builder, number, offset, 0, obj, FRAGMENT, family, event)
        return True

    def line(
        self,
        builder: TableBuilder,
        number: int,
        offset: int,
        content: bytes,
        facts: list[Facts],
        obj: dict[str, Any] | None = None,
    ) -> None:
        """Feed a line's records (events, or records that may end a stream) and add the rows
        of every request they settle; other records are added as they are. `obj`: the line's
        one object, when `first_read` decoded it already."""
        records = records_of(content) if obj is None else [obj]
        self.records(builder, number, offset, records, facts)

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
            family = event_family(obj) if fact[CHUNK] else None
            if family is not None:
                self.eager = self.fast
                readers = self.readers
                event = read_event(family, obj) if readers is None else readers[family.name](obj)
                self._event(builder, number, offset, item, obj, fact, family, event)
            elif fact[CHUNK] or not self.state.wants(fact[FORMAT]):
                builder.add(number, offset, item, fact)  # an event of no request, or a record
            else:  # a record that may end a stream: the next line may be an event again
                self.eager = self.fast
                self._settled(builder, self.state.feed(None, obj, number, offset, fact[FORMAT]))

    def _event(
        self,
        builder: TableBuilder,
        number: int,
        offset: int,
        item: int,
        obj: dict[str, Any],
        fact: Facts,
        family: Family,
        event: Event,
    ) -> None:
        """One event (`event`: its fold and tests): its row alone when it belongs to no
        request (or to one an error ended), else fed to the state."""
        state = self.state
        if event.neutral or (state.ended and state.absorbs(family, obj)):
            builder.add(number, offset, item, fact)
            return
        if self.fast and state.extend(family, event, number, offset):
            return  # it carried on the latest request (most events do)
        done = state.feed(family, obj, number, offset, fact[FORMAT], event)
        if done:
            self._settled(builder, done)

    def _settled(self, builder: TableBuilder, done: list[Any]) -> None:
        """Add the rows of the requests an event or record settled."""
        for p in done:
            builder.add_all(p.line, p.offset, request_facts(p, self.books.formats, self.final))
