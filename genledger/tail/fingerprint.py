"""Content fingerprints: how a checkpoint recognises the file it was taken on (Vector-style)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TAIL_WINDOW = 4096  # bytes of the last complete line re-checked before resuming


def checksum(data: bytes) -> str:
    """A short stable checksum of some bytes."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def read_at(fd: int, offset: int, length: int) -> bytes:
    """Read exactly the bytes at [offset, offset+length) (fewer if the file is shorter)."""
    parts: list[bytes] = []
    while length > 0:
        part = os.pread(fd, length, offset)
        if not part:
            break
        parts.append(part)
        offset += len(part)
        length -= len(part)
    return b"".join(parts)


@contextmanager
def opened(path: Path | str) -> Iterator[int]:
    """A read-only descriptor of `path`, closed on exit; raises OSError when it cannot open."""
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)
