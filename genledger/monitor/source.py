"""Reading the stats file safely while something else replaces it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

Signature = tuple[int, int, int]  # inode, mtime_ns, size


@dataclass(frozen=True)
class Reading:
    """One attempt at reading the stats: the document, or why there is none."""

    stats: dict[str, Any] | None
    mtime: float | None = None
    problem: str = ""


def signature(path: Path) -> Signature | None:
    """What changes whenever the file is replaced or rewritten (None when absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def read_stats(path: Path) -> Reading:
    """Read and parse the stats JSON from one open file (one inode, even mid-replace)."""
    try:
        with path.open("rb") as handle:
            mtime = os.fstat(handle.fileno()).st_mtime
            raw = handle.read()
    except FileNotFoundError:
        return Reading(None, problem="no stats file yet")
    except OSError as exc:
        return Reading(None, problem=f"cannot read it: {exc.strerror or exc}")
    if not raw.strip():
        return Reading(None, mtime, "the stats file is empty")
    try:
        stats = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return Reading(None, mtime, "the stats file is incomplete or not JSON")
    if not isinstance(stats, dict) or not isinstance(stats.get("datasets"), dict):
        return Reading(None, mtime, "not a genledger stats JSON")
    return Reading(stats, mtime)


class StatsSource:
    """Polls the stats file; keeps the last good reading when a new one is unusable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_good: Reading | None = None
        self.problem = ""
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
        else:
            self.problem = reading.problem
        return True
