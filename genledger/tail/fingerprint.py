"""File identity: how genledger recognises a file it has seen (Vector-style fingerprints).

One type, `Fingerprint`, is what the tailer's checkpoints, the sealed files' marks and the
Dagster sensor's cursor all keep of a file: its size and mtime, its (device, inode) where the
file system has them (0 elsewhere: remote files), and a checksum of its first bytes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, Protocol

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


class Opened(Protocol):
    """An open file as a root gives it (`genledger.tail.roots.Handle`)."""

    size: int
    mtime_ns: int
    identity: tuple[int, int] | None

    def read_at(self, offset: int, length: int) -> bytes:
        """The bytes at [offset, offset+length)."""
        ...


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What identifies a file without reading it all."""

    size: int = 0
    mtime_ns: int = 0
    device: int = 0  # (device, inode): (0, 0) where the file system has no inode
    inode: int = 0
    head_len: int = 0  # bytes checksummed at the start
    head_sum: str | None = None

    @property
    def node(self) -> tuple[int, int]:
        """(device, inode)."""
        return self.device, self.inode

    def as_list(self) -> list[Any]:
        """A JSON-able form (a sensor cursor keeps one per file)."""
        return list(astuple(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fingerprint:
        """From `dataclasses.asdict` form; a value of the wrong type raises TypeError."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for key, value in known.items():
            fits = (
                value is None or isinstance(value, str)
                if key == "head_sum"
                else (type(value) is int)
            )
            if not fits:
                raise TypeError(f"fingerprint {key}: {value!r}")
        return cls(**known)


def fingerprint(handle: Opened, head_len: int, head: bytes | None = None) -> Fingerprint:
    """The fingerprint of an open file with a checksum of its first `head_len` bytes (`head`:
    those bytes, when the caller has them already)."""
    if head is None:
        head = handle.read_at(0, min(head_len, handle.size))
    device, inode = handle.identity or (0, 0)
    return Fingerprint(handle.size, handle.mtime_ns, device, inode, len(head), checksum(head))
