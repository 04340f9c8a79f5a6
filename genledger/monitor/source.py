"""Reading the stats file safely while something else replaces it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genledger.ledger import jsonio
from genledger.monitor.shape import conform
from genledger.tail.roots import DataRootError

Signature = tuple[int, int, int]  # inode, mtime_ns, size


@dataclass(frozen=True)
class Reading:
    """One attempt at reading the stats: the document, or why there is none."""

    stats: dict[str, Any] | None
    mtime: float | None = None
    problem: str = ""


def signature(path: Path | str) -> Signature | None:
    """What changes whenever the file is replaced or rewritten (None when absent)."""
    if isinstance(path, str):
        try:
            return _remote(path).stat_signature()
        except DataRootError:
            return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def read_stats(path: Path | str) -> Reading:
    """Read and parse the stats JSON from one open file (one inode, even mid-replace); a URL
    (`sftp://`, `s3://`) is read through its remote root."""
    try:
        if isinstance(path, str):
            mtime, raw = _remote(path).read()
        else:
            with path.open("rb") as handle:
                mtime = os.fstat(handle.fileno()).st_mtime
                raw = handle.read()
    except FileNotFoundError:
        return Reading(None, problem="no stats file yet")
    except OSError as exc:
        return Reading(None, problem=f"cannot read it: {exc.strerror or exc}")
    except DataRootError as exc:
        return Reading(None, problem=str(exc))
    if not raw.strip():
        return Reading(None, mtime, "the stats file is empty")
    try:
        stats = jsonio.loads(raw)
    except (ValueError, RecursionError):
        return Reading(None, mtime, "the stats file is incomplete or not JSON")
    if not isinstance(stats, dict) or not isinstance(stats.get("datasets"), dict):
        return Reading(None, mtime, "not a genledger stats JSON")
    stats, wrong = conform(stats)
    if wrong:
        more = f" and {len(wrong) - 3} more" if len(wrong) > 3 else ""
        problem = f"fields of an unexpected type, left out: {', '.join(wrong[:3])}{more}"
        return Reading(stats, mtime, problem)
    return Reading(stats, mtime)


class _RemoteStats:
    """A stats file on a remote root (the URL of the file itself)."""

    def __init__(self, url: str) -> None:
        from genledger.tail.remote import RemoteRoot

        self.root = RemoteRoot.from_url(url)

    def stat_signature(self) -> Signature | None:
        found = self.root.stat(self.root.base)
        return None if found is None else (0, found[1], found[0])

    def read(self) -> tuple[float, bytes]:
        handle = self.root.open(self.root.base)
        try:
            return handle.mtime_ns / 1e9, handle.read_at(0, handle.size)
        finally:
            handle.close()


def _remote(url: str) -> _RemoteStats:
    return _RemoteStats(url)


class StatsSource:
    """Polls the stats file; keeps the last good reading when a new one is unusable."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.last_good: Reading | None = None
        self.problem = ""
        self.note = ""  # about the good reading shown (fields left out)
        self._seen: Signature | None = None
        self._polled = False

    def poll(self) -> bool:
        """Re-read if the file changed since the last poll; True when there is news."""
        current = signature(self.path)
        if self._polled and current == self._seen:
            return False
        self._polled, self._seen = True, current
        reading = read_stats(self.path)
        if reading.stats is not None:
            self.last_good, self.problem = reading, ""
            self.note = reading.problem
        else:
            self.problem = reading.problem
        return True
