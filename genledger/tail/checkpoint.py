"""Per-file checkpoints: where the next refresh resumes, and whether it may resume at all."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from genledger.tail.fingerprint import checksum, read_at


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Position after the last complete line, plus what identifies the bytes before it."""

    offset: int = 0
    lines: int = 0
    head_len: int = 0  # bytes of the first complete line, its `\n` included
    head_sum: str | None = None
    tail_start: int = 0  # start of the re-checked window that ends at `offset`
    tail_sum: str | None = None
    size: int = 0
    mtime_ns: int = 0
    device: int = 0
    inode: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form for the state file."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        """Inverse of `to_dict`, ignoring unknown keys."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


START = Checkpoint()


def resume_decision(cp: Checkpoint, st: os.stat_result, fd: int) -> tuple[int, str]:
    """Return (start offset, why): resume at `cp.offset`, or 0 when the file was replaced."""
    if cp.offset == 0:
        return 0, "new" if cp.head_sum is None and cp.size == 0 else "from start"
    if (st.st_dev, st.st_ino) != (cp.device, cp.inode):
        return 0, "replaced (new inode)"
    if st.st_size < cp.offset:
        return 0, "truncated"
    if checksum(read_at(fd, 0, cp.head_len)) != cp.head_sum:
        return 0, "replaced (first line changed)"
    tail = read_at(fd, cp.tail_start, cp.offset - cp.tail_start)
    if checksum(tail) != cp.tail_sum:
        return 0, "rewritten (bytes before the checkpoint changed)"
    if st.st_size == cp.size and st.st_mtime_ns == cp.mtime_ns:
        return cp.offset, "unchanged"
    return cp.offset, "appended"
