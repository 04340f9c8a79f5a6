"""Notice each rewrite of the stats JSON (by a Dagster run) and give back the new stats."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

Signature = tuple[int, int, int]  # (inode, mtime_ns, size)


def _signature(path: Path) -> Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


@dataclass
class StatsWatch:
    """Polls one stats JSON; a file already there when the watch starts is not news."""

    path: Path
    seen: Signature | None = field(init=False)

    def __post_init__(self) -> None:
        self.seen = _signature(self.path)

    def poll(self) -> dict[str, Any] | None:
        """The stats if the file was rewritten since the last poll, else None."""
        current = _signature(self.path)
        if current is None or current == self.seen:
            return None
        try:
            stats = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None  # writes are atomic (rename), so this is a vanished file: try again
        self.seen = current
        return stats if isinstance(stats, dict) else None
