"""Count the records on complete lines or rows: the one place that chooses how a record is
decoded (the fast decoders of `genledger.fast`, else the general path of `genledger.parse`)
and whether the pandera audit checks the books' pass (`genledger.rules.audit`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import orjson

from genledger.fast import jsonlines, rawtext, vector
from genledger.fast.columns import code_of, taker
from genledger.fast.events import decoded
from genledger.fast.lines import FastDecoder, fast_decoder
from genledger.fast.rawtext import NOTHING_PLAIN, ReadFlags
from genledger.ledger.arraybooks import COLUMN_ROWS, Taker, column_account, columns_used
from genledger.ledger.books import account
from genledger.ledger.chain import Chain
from genledger.ledger.prompts import PromptIds, PromptKey
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line
from genledger.parse.schema import Facts
from genledger.parse.table import TableBuilder
from genledger.refresh.assemble import Assembler
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.tail.lines import Block, LongLine, is_blank

CHUNK_ROWS = 20_000  # rows counted at a time: memory flat in the file size

LineFacts = Callable[[bytes, ReadFlags], list[Facts]]


class LineReader:
    """The facts of a non-blank line: the fast decoders' when they can tell, else the general
    path's (equal by tests); raises `Malformed` as the general path does."""

    def __init__(self, role: str, reading: Reading = DEFAULT_READING) -> None:
        self.role = role
        self.reading = reading
        self.made = False
        self.decoder: FastDecoder | None = None

    def fast(self) -> FastDecoder | None:
        """The fast decoder (None: switched off), made at the first line (a refresh with
        nothing new never builds the typed decoders); a file starts with the typed tier
        awake."""
        if not self.made:
            self.made = True
            switches = self.reading.switches
            if switches.fast:
                self.decoder = fast_decoder(self.role, self.reading.formats, switches)
                self.decoder.wake()
        return self.decoder

    def __call__(self, content: bytes, flags: ReadFlags = NOTHING_PLAIN) -> list[Facts]:
        decoder = self.decoder if self.made else self.fast()
        found = decoder.facts(content, flags) if decoder is not None else None
        if found is None:
            return facts_of_line(content, self.role, self.reading.formats)
        return found


def line_reader(role: str, reading: Reading = DEFAULT_READING) -> LineReader:
    """A `LineReader` of `role` under `reading`."""
    return LineReader(role, reading)


def line_facts(
    content: bytes, role: str, flags: ReadFlags = NOTHING_PLAIN, reading: Reading = DEFAULT_READING
) -> list[Facts]:
    """`line_reader(role, reading)` applied to one line."""
    return line_reader(role, reading)(content, flags)


def non_blank_lines(blocks: Iterable[Block]) -> int:
    """Non-blank complete lines: a prompts file's expected records."""
    return sum(block.non_blank() for block in blocks)


def prompt_tally(
    blocks: Iterable[Block], reading: Reading = DEFAULT_READING, name: str = ""
) -> FileTally:
    """A prompts file's non-blank lines and the id of each (`ledger.prompts`), and the lines
    that are no JSON (named by `name` and line); a block that spells no key an id could be
    under, and is JSON line by line, is counted without decoding a line."""
    key = PromptKey(reading.prompt_key)
    found = PromptIds(key, name)
    markers = key.markers
    for block in blocks:
        if not any(block.data.find(m, 0, block.end) >= 0 for m in markers) and (
            jsonlines.all_json(block.data, block.end, block.offset == 0) or _json_lines(block)
        ):
            found.add_lines(block.non_blank())
            continue
        for number, _, content in block.rows():
            if not is_blank(content):
                found.add_line(number, content)
    return found.tally()


def _json_lines(block: Block) -> bool:
    """Every non-blank line of `block` is JSON (the one decode needed to say so); the
    definition of `fast.jsonlines.all_json`, which answers most blocks in C."""
    for _, _, content in block.rows():
        if not is_blank(content):
            try:
                orjson.loads(content)
            except orjson.JSONDecodeError:
                return False
    return True


def tally_blocks(
    blocks: Iterable[Block], name: str, role: str, reading: Reading = DEFAULT_READING
) -> FileTally:
    """The tally of the records on the complete lines of `blocks` (a responses or tokenized
    file), counted `CHUNK_ROWS` rows at a time."""
    chain, builder = Chain(), TableBuilder(role, name)
    facts_of = line_reader(role, reading)
    texts = role == "responses"  # tokenized shapes hold no long texts
    lifted = _lifted_lines(role, reading)
    streams: Assembler | None = None
    for block in blocks:
        if streams is None and texts:  # a read from the file's start has nothing before it
            streams = Assembler(name, reading, anchored=block.offset == 0)
        if type(block) is LongLine:
            limit = reading.max_line_bytes
            reason = f"line longer than {limit} bytes ({block.length} bytes, skipped)"
            builder.add_malformed(block.number + 1, block.offset, reason)
            continue
        if lifted is not None:
            _tally_lifted(block, builder, lifted, facts_of)
        else:
            flags = rawtext.inspect(block.data, block.end) if texts else rawtext.NOTHING_PLAIN
            _tally_rows(block, builder, facts_of, flags, streams)
        if len(builder) >= CHUNK_ROWS:  # tallies add up exactly (ledger.tally), chunk by chunk
            chain.add(tally_table(builder, reading))  # its id and key lists copied once
            builder = TableBuilder(role, name)
    chain.add(tally_table(builder, reading))
    done = chain.tally()
    if streams is not None:
        done.streams, done.books = streams.state, streams.books
    return done


def _tally_rows(
    block: Block,
    builder: TableBuilder,
    facts_of: LineReader,
    flags: ReadFlags,
    streams: Assembler | None = None,
) -> None:
    """Add the records of a block's lines (or their Malformed reasons) to `builder`. Runs of
    the usual chat lines are walked by the native tier in C (`FastDecoder.native_walk`: rows
    straight into the builder) while no stream is being read; each line it stops at is read
    as below, then the walk goes on (after `WALK_PATIENCE` lines in a row it could not take,
    not again in this block). While events are coming (`Assembler.eager`), a line is
    scanned in C first (`Assembler.delta`), else decoded and read as an event there, else
    its decoded object goes on with it to `_tally_line`. Any other line is read in the shape
    of the one before by `FastDecoder.run_reader` (the same facts, fewer steps), else by
    `_tally_line`; after a line the run reader could not read (or without one), the next
    `RUN_REST` lines take `_tally_line` (a file switching shapes line by line pays few
    decodes twice)."""
    decoder = facts_of.fast()
    run = decoder.run_reader(flags) if decoder is not None else None
    rest = RUN_REST
    add = builder.add
    data, end = block.data, block.end
    start, before, stalls = 0, block.number, 0
    while start < end:
        walk = None
        if decoder is not None and stalls < WALK_PATIENCE and not (streams and streams.eager):
            walk = decoder.native_walk(flags)
        if walk is not None and decoder is not None:
            went, before = walk(data, start, end, before, block.offset, builder.file, builder.rows)
            stalls = 0 if went > start else stalls + 1
            if went > start:
                decoder.misses = 0  # as the run reader's reads: the typed tier read them
            start = went
            if start >= end:
                block.walked(before)  # its line count known: no count of the read's bytes
                return
        if walk is not None or (decoder is not None and stalls < WALK_PATIENCE):
            # the line it stopped at, or one that may make the chat shape the last: then on
            following = data.find(b"\n", start, end) + 1
            rows = block.rows(start, before, following)
            start, before = following, before + 1
            stalls += walk is None
        else:
            rows, start = block.rows(start, before), end
        for number, offset, content in rows:
            if streams is not None and streams.eager:
                if streams.delta(builder, number, offset, content):
                    continue  # a delta or a neutral event, read in C
                obj = decoded(content)  # a blank line decodes to none
                if obj is None and not is_blank(content):
                    # no single object, so no event: the lines after it take the fact
                    # decoders and the walk (an array's events are read from its facts)
                    streams.eager = False
                if obj is None or not streams.event(builder, number, offset, obj):
                    _tally_line(builder, number, offset, content, facts_of, flags, streams, obj)
            elif run is not None and (fact := run(content)) is not None:
                if streams is not None and streams.takes(facts := [fact]):
                    streams.line(builder, number, offset, content, facts)
                else:
                    add(number, offset, 0, fact)
            else:
                if run is not None:
                    run, rest = None, RUN_REST
                _tally_line(builder, number, offset, content, facts_of, flags, streams)
                rest -= 1
                if not rest and decoder is not None:
                    run, rest = decoder.run_reader(flags), RUN_REST


# lines in a row the walk could not take (it stopped there, or did not apply) before the rest
# of a block is read as above
WALK_PATIENCE = 4


RUN_REST = 16  # lines read one by one before the run reader is asked for again


def _tally_line(
    builder: TableBuilder,
    number: int,
    offset: int,
    content: bytes,
    facts_of: LineFacts,
    flags: ReadFlags = NOTHING_PLAIN,
    streams: Assembler | None = None,
    obj: dict[str, Any] | None = None,
) -> None:
    """Add one line's records (or its Malformed reason) to `builder`; blank lines hold none;
    stream events go to `streams`, which adds the rows of the requests they settle. `obj`:
    the line's one object, when it was decoded already (`_tally_rows`)."""
    if is_blank(content):
        return
    try:
        facts = facts_of(content, flags)
    except Malformed as exc:
        builder.add_malformed(number, offset, str(exc))
        return
    if streams is not None and streams.takes(facts):
        streams.line(builder, number, offset, content, facts, obj)
        return
    for item, fact in enumerate(facts):
        builder.add(number, offset, item, fact)


LiftedLine = Callable[[bytes, int, int], list[Facts] | None]


def _lifted_lines(role: str, reading: Reading) -> LiftedLine | None:
    """The lifted tier of tokenized lines, read in place (`FastDecoder.lifted_line`): not
    copying 51 kB samples out of their reads saved 5-8 % of their scan."""
    if role != "tokenized" or not (reading.switches.fast and reading.switches.lift):
        return None
    return fast_decoder(role, reading.formats, reading.switches).lifted_line


def _tally_lifted(
    block: Block, builder: TableBuilder, lifted: LiftedLine, facts_of: LineFacts
) -> None:
    """The records of a block's tokenized lines: each line's lifted facts read in place; a
    line the lifted tier cannot tell is cut out and read as any other."""
    data = block.data
    for number, offset, start, stop in block.spans():
        facts = lifted(data, start, stop)
        if facts is None:
            _tally_line(builder, number, offset, data[start:stop], facts_of)
            continue
        for item, fact in enumerate(facts):
            builder.add(number, offset, item, fact)


def tally_table(builder: TableBuilder, reading: Reading = DEFAULT_READING) -> FileTally:
    """The books' pass over the rows collected so far (nothing to do for none); with the
    audit switch on, pandera validates the same rows and must find the same failures."""
    return tally_rows(builder.role, builder.rows, reading)


@cache
def _taker(role: str) -> Taker:
    """The columns the books of `role` read, taken out of rows by `fast.columns`."""
    used = tuple((n, code_of(role, n, how == "read")) for n, how in columns_used(role))
    return taker(role, used)


def tally_rows(
    role: str, rows: list[tuple[Any, ...]], reading: Reading = DEFAULT_READING
) -> FileTally:
    """`tally_table` of row tuples (position columns, then facts): a chunk of
    `COLUMN_ROWS` or more by the books' pass over columns (`ledger.arraybooks`; a speed
    lever, off with the fast decoders, and where numpy is not loaded already: its import
    costs more than a few chunks save) where its columns are clean, else by the row pass."""
    if not rows:
        return FileTally()
    done = None
    if reading.switches.fast and len(rows) >= COLUMN_ROWS and vector.numpy_loaded():
        done = column_account(role, _taker(role), reading.params)(rows)  # None: the row pass
    tally = FileTally.accounted(done or account(role, reading.params)(rows))
    if reading.switches.audit:  # pandas and pandera load only when asked for
        from genledger.rules.audit import audit

        audit(role, rows, tally.failures, dict(reading.params))
    return tally
