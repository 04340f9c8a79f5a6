"""Scan one data file from its checkpoint: new lines → records → facts → validated tally.

This is the one place that chooses between the fast decoders (`genledger.fast`) and the
general path (`genledger.parse`), and between the rule evaluations (`genledger.rules`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from genledger.config import Switches
from genledger.fast import rawtext, vector
from genledger.fast.lines import fast_facts
from genledger.fast.parallel import SETTLE_SECONDS, ScanJob
from genledger.fast.rawtext import NOTHING_PLAIN, ReadFlags
from genledger.ledger import account
from genledger.ledger.filescan import FileScan
from genledger.ledger.tally import FileTally
from genledger.parse.jsonline import Malformed
from genledger.parse.line import Facts, facts_of_line
from genledger.parse.table import TableBuilder
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import form_of
from genledger.tail.lines import Block, LongLine, is_blank, line_limit
from genledger.tail.reader import FileReader, FileUnreadable, Span
from genledger.tail.roots import RemoteFile, Source

# 1 MB reads stay in the heap and the CPU caches: ~0.3 s less system time per 800 MB than
# 8 MB ones, measured with benchmarks/run.py (speed levers, docs/performance.md).
READ_CHUNK = 1 << 20
REMOTE_CHUNK = 8 << 20  # one ranged request per 8 MB: the round trips stay few


DEFAULT = Switches()


def scan_file(
    path: Source,
    name: str,
    role: str,
    checkpoint: Checkpoint | None,
    span: Span | None = None,
    switches: Switches = DEFAULT,
    now: float | None = None,
    settle_seconds: float = SETTLE_SECONDS,
) -> FileScan:
    """Read what `path` gained since `checkpoint` (or just `span`) and tally it; never raises
    on bad data. Sealed files (by the name's form) are read whole when new or changed; `now`
    and `settle_seconds` say whether an early end of their stream is final."""
    if form_of(name) != "jsonl":
        from genledger.refresh.sealed import scan_sealed

        when = time.time() if now is None else now
        return scan_sealed(path, name, role, checkpoint, when, settle_seconds, switches)
    try:
        chunk = REMOTE_CHUNK if isinstance(path, RemoteFile) else READ_CHUNK
        with FileReader(path, checkpoint, chunk, span) as reader:
            if role == "prompts":
                delta = FileTally(prompt_lines=non_blank_lines(reader.blocks()))
            else:
                if reader.new_bytes() >= vector.BULK_BYTES:
                    vector.load()
                delta = tally_blocks(reader.blocks(), name, role, switches)
            return FileScan(delta, reader.result())
    except FileUnreadable as exc:
        return FileScan(FileTally(), error=str(exc))


def non_blank_lines(blocks: Iterable[Block]) -> int:
    """Non-blank complete lines: a prompts file's expected records."""
    return sum(block.non_blank() for block in blocks)


CHUNK_ROWS = 20_000  # rows validated at a time (speed levers): memory flat in the file size


def scan_job(job: ScanJob, span: Span | None = None) -> FileScan:
    """`scan_file` of one job of the parallel lever (`genledger.fast.parallel`)."""
    return scan_file(
        job.path,
        job.name,
        job.role,
        job.checkpoint,
        span,
        job.switches,
        job.now,
        job.settle_seconds,
    )


def line_facts(
    content: bytes, role: str, flags: ReadFlags = NOTHING_PLAIN, switches: Switches = DEFAULT
) -> list[Facts]:
    """The facts of a non-blank line: the fast decoders' when they can tell, else the general
    path's (equal by tests); raises `Malformed` as the general path does."""
    facts = fast_facts(content, role, flags, switches) if switches.fast else None
    return facts_of_line(content, role) if facts is None else facts


def tally_blocks(
    blocks: Iterable[Block], name: str, role: str, switches: Switches = DEFAULT
) -> FileTally:
    """The tally of the records on the complete lines of `blocks` (a responses or tokenized
    file), validated `CHUNK_ROWS` rows at a time."""
    done, builder = FileTally(), TableBuilder(role, name)
    texts = role == "responses"  # tokenized shapes hold no long texts
    for block in blocks:
        if type(block) is LongLine:
            reason = f"line longer than {line_limit()} bytes ({block.length} bytes, skipped)"
            builder.add_malformed(block.number + 1, block.offset, reason)
            continue
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
            done = done + tally_table(builder, switches)
            builder = TableBuilder(role, name)
    return done + tally_table(builder, switches)


def tally_table(builder: TableBuilder, switches: Switches = DEFAULT) -> FileTally:
    """Validate the rows collected so far (nothing to do for none)."""
    if not len(builder):
        return FileTally()
    responses = builder.role == "responses"
    if switches.rules == "pandera":  # pandas and pandera load only when asked for
        frame = builder.frame()
        return account.responses_by_frame(frame) if responses else account.tokenized_by_frame(frame)
    if responses:
        return account.responses_by_rows(builder.rows)
    return account.tokenized_by_rows(builder.rows)
