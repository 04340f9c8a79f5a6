"""Scan one data file from its checkpoint: new lines → records → facts → the books' tally.

Plain JSONL files are tailed here; sealed ones (gzip, zstd, Parquet) are read whole by
`refresh.sealed`. How records are decoded and counted is chosen in `refresh.count`.
"""

from __future__ import annotations

import time

from genledger.fast import vector
from genledger.ledger.tally import FileTally
from genledger.refresh.count import prompt_tally, tally_blocks
from genledger.refresh.filescan import FileScan
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import form_of
from genledger.tail.reader import FileReader, FileUnreadable, Span
from genledger.tail.roots import RemoteFile, Source

# 1 MB reads stay in the heap and the CPU caches: ~0.3 s less system time per 800 MB than
# 8 MB ones, measured with benchmarks/run.py (speed levers, docs/performance.md).
READ_CHUNK = 1 << 20
REMOTE_CHUNK = 8 << 20  # one ranged request per 8 MB: the round trips stay few


def scan_file(
    path: Source,
    name: str,
    role: str,
    checkpoint: Checkpoint | None,
    span: Span | None = None,
    reading: Reading = DEFAULT_READING,
    now: float | None = None,
) -> FileScan:
    """Read what `path` gained since `checkpoint` (or just `span`) and tally it; never raises
    on bad data. Sealed files (by the name's form) are read whole when new or changed; `now`
    says whether an early end of their stream has settled."""
    if form_of(name) != "jsonl":
        # imported here: a refresh of plain JSONL files never needs it (nor its Parquet and
        # decompression readers)
        from genledger.refresh.sealed import scan_sealed

        when = time.time() if now is None else now
        return scan_sealed(path, name, role, checkpoint, when, reading)
    try:
        chunk = REMOTE_CHUNK if isinstance(path, RemoteFile) else READ_CHUNK
        with FileReader(path, checkpoint, chunk, span, reading.max_line_bytes) as reader:
            if role == "prompts":
                delta = prompt_tally(reader.blocks(), reading, name)
            else:
                if reader.new_bytes() >= vector.BULK_BYTES:
                    vector.load()
                delta = tally_blocks(reader.blocks(), name, role, reading)
            return FileScan(delta, reader.result())
    except FileUnreadable as exc:
        return FileScan(FileTally(), error=str(exc))
