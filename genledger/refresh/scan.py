"""Scan one data file from its checkpoint: new lines → records → facts → validated tally."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from genledger.fast import rawtext, vector
from genledger.fast.lines import line_facts
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.table import TableBuilder
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.lines import is_blank
from genledger.tail.reader import FileReader, FileUnreadable, ReadResult, Span


@dataclass
class FileScan:
    """The outcome of reading one file: what it added, or why it could not be read."""

    delta: FileTally
    read: ReadResult | None = None
    error: str | None = None

    @property
    def restarted(self) -> bool:
        """The delta replaces the file's earlier counts instead of adding to them."""
        return self.read is None or self.read.restarted


# 1 MB reads stay in the heap and the CPU caches: ~0.3 s less system time per 800 MB than
# 8 MB ones, measured with benchmarks/run.py (speed levers, docs/performance.md).
READ_CHUNK = 1 << 20


def scan_file(
    path: Path, name: str, role: str, checkpoint: Checkpoint | None, span: Span | None = None
) -> FileScan:
    """Read what `path` gained since `checkpoint` (or just `span`) and tally it; never raises
    on bad data."""
    try:
        with FileReader(path, checkpoint, READ_CHUNK, span) as reader:
            if role == "prompts":
                delta = FileTally(prompt_lines=_non_blank_lines(reader))
            else:
                if reader.new_bytes() >= vector.BULK_BYTES:
                    vector.load()
                delta = _tally_lines(reader, name, role)
            return FileScan(delta, reader.result())
    except FileUnreadable as exc:
        return FileScan(FileTally(), error=str(exc))


def _non_blank_lines(reader: FileReader) -> int:
    return sum(not is_blank(row[2]) for block in reader.blocks() for row in block.rows())


CHUNK_ROWS = 20_000  # rows validated at a time (speed levers): memory flat in the file size


def _tally_lines(reader: FileReader, name: str, role: str) -> FileTally:
    done, builder = FileTally(), TableBuilder(role, name)
    texts = role == "responses"  # tokenized shapes hold no long texts
    for block in reader.blocks():
        flags = rawtext.inspect(block.data, block.end) if texts else rawtext.NOTHING_PLAIN
        for number, offset, content in block.rows():
            if is_blank(content):
                continue
            try:
                # Same facts as records_of + response_facts/tokenized_facts, faster
                # (genledger/fast/lines.py).
                facts = line_facts(content, role, flags)
            except Malformed as exc:
                builder.add_malformed(number, offset, str(exc))
                continue
            for item, fact in enumerate(facts):
                builder.add(number, offset, item, fact)
        if len(builder) >= CHUNK_ROWS:  # tallies add up exactly (tally.py), chunk by chunk
            done, builder = done + _tally(builder), TableBuilder(role, name)
    return done + _tally(builder)


def _tally(builder: TableBuilder) -> FileTally:
    if not len(builder):
        return FileTally()
    # pandas and pandera load only where pandera is wanted; elsewhere their mirror runs
    # (genledger/rules/rows.py, same tallies).
    from genledger.rules.rows import tally_rows

    return tally_rows(builder)
