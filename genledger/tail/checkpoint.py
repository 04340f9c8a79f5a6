"""Per-file checkpoints: where the next refresh resumes, and whether it may resume at all."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from genledger.tail.fingerprint import Fingerprint, checksum
from genledger.tail.roots import Handle


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Position after the last complete line, plus what identifies the bytes before it: the
    file's fingerprint (its head: the first complete line, `\n` included; of a sealed file,
    its first `HEAD_BYTES`) and a checksum of the window that ends at the offset."""

    offset: int = 0
    lines: int = 0
    file: Fingerprint = field(default_factory=Fingerprint)
    tail_start: int = 0  # start of the re-checked window that ends at `offset`
    tail_sum: str | None = None
    unsettled: bool = False  # a sealed file whose stream ended early, not yet an error
    pending: int = 0  # a sealed file's decoded bytes after its last complete line
    # genledger's own clock (POSIX seconds) when it first saw the file at this size and
    # mtime: settling is timed from here too, so an mtime in the future still settles
    since: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form for the state file (`dataclasses.asdict`'s, without its deep
        copies: they were half the cost of saving 50,000 shards' records)."""
        out = {name: getattr(self, name) for name in CHECKPOINT_FIELDS}
        out["file"] = {name: getattr(self.file, name) for name in FINGERPRINT_FIELDS}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        """Inverse of `to_dict`, ignoring unknown keys; a value of the wrong type raises
        TypeError (a damaged state record is read again, never trusted)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for key, value in known.items():
            if key != "file" and not _fits(getattr(START, key), value):
                raise TypeError(f"checkpoint {key}: {value!r}")
        if "file" in known:
            known["file"] = Fingerprint.from_dict(known["file"])
        return cls(**known)


START = Checkpoint()
CHECKPOINT_FIELDS = tuple(f.name for f in fields(Checkpoint))
FINGERPRINT_FIELDS = tuple(f.name for f in fields(Fingerprint))


def _fits(default: Any, value: Any) -> bool:
    """`value` has the type of the field whose default is `default`."""
    if isinstance(default, bool):
        return type(value) is bool
    if isinstance(default, float):
        return type(value) in (int, float)
    if isinstance(default, int):
        return type(value) is int
    return value is None or isinstance(value, str)  # the checksums


def seen_since(old: Checkpoint | None, now_seen: Fingerprint, now: float) -> float:
    """When genledger first saw the file as `now_seen` shows it (its size and mtime): the
    old checkpoint's time when both are unchanged, else `now`."""
    if old is None or not old.since:
        return now
    unchanged = (old.file.size, old.file.mtime_ns) == (now_seen.size, now_seen.mtime_ns)
    return old.since if unchanged else now


def unchanged_as_listed(cp: Checkpoint, size: int, mtime_ns: int, node: tuple[int, int]) -> bool:
    """A local file the walk listed at the size, mtime (ns) and (device, inode) of its
    checkpoint, read to its end and settled: nothing to read, and no need to open it (a write
    moves the mtime; 50,000 unchanged shards cost their listing only)."""
    seen = cp.file
    return (
        (seen.size, seen.mtime_ns, seen.node) == (size, mtime_ns, node)
        and seen.head_sum is not None
        and not cp.unsettled
    )


def resume_decision(cp: Checkpoint, handle: Handle) -> tuple[int, str]:
    """Return (start offset, why): resume at `cp.offset`, or 0 when the file was replaced."""
    seen = cp.file
    if cp.offset == 0:
        return 0, "new" if seen.head_sum is None and seen.size == 0 else "from start"
    if handle.identity is not None and handle.identity != seen.node:
        return 0, "replaced (new inode)"
    if handle.identity is None and (handle.size, handle.mtime_ns) == (seen.size, seen.mtime_ns):
        # A remote file as it was (same size and mtime): no bytes spent re-checking it.
        return cp.offset, "unchanged"
    if handle.size < cp.offset:
        return 0, "truncated"
    if checksum(handle.read_at(0, seen.head_len)) != seen.head_sum:
        return 0, "replaced (first line changed)"
    tail = handle.read_at(cp.tail_start, cp.offset - cp.tail_start)
    if checksum(tail) != cp.tail_sum:
        return 0, "rewritten (bytes before the checkpoint changed)"
    if handle.size == seen.size and handle.mtime_ns == seen.mtime_ns:
        return cp.offset, "unchanged"
    return cp.offset, "appended"
