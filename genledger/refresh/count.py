"""Count the records on complete lines or rows: the one place that chooses how a record is
decoded (the fast decoders of `genledger.fast`, else the general path of `genledger.parse`)
and whether the pandera audit checks the books' pass (`genledger.rules.audit`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from genledger.fast import rawtext
from genledger.fast.lines import FastDecoder, fast_decoder
from genledger.fast.rawtext import NOTHING_PLAIN, ReadFlags
from genledger.ledger.books import account
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line
from genledger.parse.schema import Facts
from genledger.parse.table import TableBuilder
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.tail.lines import Block, is_blank

CHUNK_ROWS = 20_000  # rows counted at a time: memory flat in the file size

LineFacts = Callable[[bytes, ReadFlags], list[Facts]]


def line_reader(role: str, reading: Reading = DEFAULT_READING) -> LineFacts:
    """The facts of a non-blank line: the fast decoders' when they can tell, else the general
    path's (equal by tests); raises `Malformed` as the general path does."""
    formats = reading.formats
    fast: FastDecoder | None = None
    if reading.switches.fast:
        fast = fast_decoder(role, formats, reading.switches)

    def facts(content: bytes, flags: ReadFlags = NOTHING_PLAIN) -> list[Facts]:
        found = fast.facts(content, flags) if fast is not None else None
        return facts_of_line(content, role, formats) if found is None else found

    return facts


def line_facts(
    content: bytes, role: str, flags: ReadFlags = NOTHING_PLAIN, reading: Reading = DEFAULT_READING
) -> list[Facts]:
    """`line_reader(role, reading)` applied to one line."""
    return line_reader(role, reading)(content, flags)


def non_blank_lines(blocks: Iterable[Block]) -> int:
    """Non-blank complete lines: a prompts file's expected records."""
    return sum(block.non_blank() for block in blocks)


def tally_blocks(
    blocks: Iterable[Block], name: str, role: str, reading: Reading = DEFAULT_READING
) -> FileTally:
    """The tally of the records on the complete lines of `blocks` (a responses or tokenized
    file), counted `CHUNK_ROWS` rows at a time."""
    done, builder = FileTally(), TableBuilder(role, name)
    facts_of = line_reader(role, reading)
    texts = role == "responses"  # tokenized shapes hold no long texts
    for block in blocks:
        flags = rawtext.inspect(block.data, block.end) if texts else rawtext.NOTHING_PLAIN
        for number, offset, content in block.rows():
            if is_blank(content):
                continue
            try:
                facts = facts_of(content, flags)
            except Malformed as exc:
                builder.add_malformed(number, offset, str(exc))
                continue
            for item, fact in enumerate(facts):
                builder.add(number, offset, item, fact)
        if len(builder) >= CHUNK_ROWS:  # tallies add up exactly (ledger.tally), chunk by chunk
            done = done + tally_table(builder, reading)
            builder = TableBuilder(role, name)
    return done + tally_table(builder, reading)


def tally_table(builder: TableBuilder, reading: Reading = DEFAULT_READING) -> FileTally:
    """The books' pass over the rows collected so far (nothing to do for none); with the
    audit switch on, pandera validates the same rows and must find the same failures."""
    return tally_rows(builder.role, builder.rows, reading)


def tally_rows(
    role: str, rows: list[tuple[Any, ...]], reading: Reading = DEFAULT_READING
) -> FileTally:
    """`tally_table` of row tuples (position columns, then facts)."""
    if not rows:
        return FileTally()
    tally = FileTally.accounted(account(role)(rows))
    if reading.switches.audit:  # pandas and pandera load only when asked for
        from genledger.rules.audit import audit

        audit(role, rows, tally.failures)
    return tally
