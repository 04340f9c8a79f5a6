"""Sealed shards as real writers make them: gzip, zstd (one or many members), Parquet."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

FORMS = ("jsonl", "jsonl.gz", "jsonl.zst", "parquet")


def jsonl(records: list[Any]) -> bytes:
    """JSON lines, one per record."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def gz(data: bytes, members: int = 1) -> bytes:
    """`data` gzip-compressed, split into `members` concatenated members (as `cat a.gz b.gz`)."""
    cut = len(data) // members
    parts = [data[i * cut : (i + 1) * cut if i < members - 1 else None] for i in range(members)]
    return b"".join(gzip.compress(p, mtime=0) for p in parts)


def zst(data: bytes, frames: int = 1) -> bytes:
    """`data` zstd-compressed, in `frames` concatenated frames."""
    cut = len(data) // frames
    parts = [data[i * cut : (i + 1) * cut if i < frames - 1 else None] for i in range(frames)]
    return b"".join(zstandard.ZstdCompressor().compress(p) for p in parts)


def gzip_being_written(data: bytes) -> bytes:
    """What a gzip writer that flushed after `data` has put on disk: no end-of-stream yet."""
    out = io.BytesIO()
    writer = gzip.GzipFile(fileobj=out, mode="wb", mtime=0)
    writer.write(data)
    writer.flush()  # a sync flush: every byte written so far decodes, the trailer is missing
    return out.getvalue()


def zstd_being_written(data: bytes) -> bytes:
    """A zstd frame flushed after `data`, not yet ended."""
    compressor = zstandard.ZstdCompressor().compressobj()
    return compressor.compress(data) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)


def parquet(records: list[dict[str, Any]], row_group_size: int | None = None) -> bytes:
    """The records as one Parquet file (struct columns for nested objects)."""
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(records), out, row_group_size=row_group_size)
    return out.getvalue()


def encode(records: list[dict[str, Any]], form: str) -> bytes:
    """The records stored in one of the four forms."""
    if form == "parquet":
        return parquet(records)
    data = jsonl(records)
    if form == "jsonl.gz":
        return gz(data)
    if form == "jsonl.zst":
        return zst(data)
    return data


def write(path: Path, data: bytes, *, replace: bool = True) -> None:
    """Write a whole shard: through a temp file and `os.replace` (new inode), or in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if replace:
        tmp = path.with_name(f".{path.name}.new")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    else:
        with path.open("wb") as handle:
            handle.write(data)
