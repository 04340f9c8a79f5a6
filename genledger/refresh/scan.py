"""Scan one data file from its checkpoint: new lines → records → facts → validated tally.

This is the one place that chooses between the fast decoders (`genledger.fast`) and the
general path (`genledger.parse`), and between the rule evaluations (`genledger.rules`).
"""

from __future__ import annotations

from pathlib import Path

from genledger.config import Switches
from genledger.fast import rawtext, vector
from genledger.fast.lines import fast_facts
from genledger.fast.parallel import ScanJob
from genledger.fast.rawtext import NOTHING_PLAIN, ReadFlags
from genledger.ledger import account
from genledger.ledger.filescan import FileScan
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.line import Facts, facts_of_line
from genledger.parse.table import TableBuilder
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.lines import is_blank
from genledger.tail.reader import FileReader, FileUnreadable, Span

# 1 MB reads stay in the heap and the CPU caches: ~0.3 s less system time per 800 MB than
# 8 MB ones, measured with benchmarks/run.py (speed levers, docs/performance.md).
READ_CHUNK = 1 << 20


DEFAULT = Switches()


def scan_file(
    path: Path,
    name: str,
    role: str,
    checkpoint: Checkpoint | None,
    span: Span | None = None,
    switches: Switches = DEFAULT,
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
                delta = _tally_lines(reader, name, role, switches)
            return FileScan(delta, reader.result())
    except FileUnreadable as exc:
        return FileScan(FileTally(), error=str(exc))


def _non_blank_lines(reader: FileReader) -> int:
    return sum(not is_blank(row[2]) for block in reader.blocks() for row in block.rows())


CHUNK_ROWS = 20_000  # rows validated at a time (speed levers): memory flat in the file size


def scan_job(job: ScanJob, span: Span | None = None) -> FileScan:
    """`scan_file` of one job of the parallel lever (`genledger.fast.parallel`)."""
    return scan_file(job.path, job.name, job.role, job.checkpoint, span, job.switches)


def line_facts(
    content: bytes, role: str, flags: ReadFlags = NOTHING_PLAIN, switches: Switches = DEFAULT
) -> list[Facts]:
    """The facts of a non-blank line: the fast decoders' when they can tell, else the general
    path's (equal by tests); raises `Malformed` as the general path does."""
    facts = fast_facts(content, role, flags, switches) if switches.fast else None
    return facts_of_line(content, role) if facts is None else facts


def _tally_lines(reader: FileReader, name: str, role: str, switches: Switches) -> FileTally:
    done, builder = FileTally(), TableBuilder(role, name)
    texts = role == "responses"  # tokenized shapes hold no long texts
    for block in reader.blocks():
        flags = rawtext.inspect(block.data, block.end) if texts else rawtext.NOTHING_PLAIN
        for number, offset, content in block.rows():
            if is_blank(content):
                continue
            try:
                facts = line_facts(content, role, flags, switches)
            except Malformed as exc:
                builder.add_malformed(number, offset, str(exc))
                continue
            for item, fact in enumerate(facts):
                builder.add(number, offset, item, fact)
        if len(builder) >= CHUNK_ROWS:  # tallies add up exactly (tally.py), chunk by chunk
            done = done + _tally(builder, switches)
            builder = TableBuilder(role, name)
    return done + _tally(builder, switches)


def _tally(builder: TableBuilder, switches: Switches) -> FileTally:
    if not len(builder):
        return FileTally()
    responses = builder.role == "responses"
    if switches.rules == "pandera":  # pandas and pandera load only when asked for
        frame = builder.frame()
        return account.responses_by_frame(frame) if responses else account.tokenized_by_frame(frame)
    if responses:
        return account.responses_by_rows(builder.rows)
    return account.tokenized_by_rows(builder.rows)
