"""What one frame of the monitor shows: the last good stats and everything around them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genledger.monitor.fmt import parse_time


@dataclass(frozen=True)
class MonitorState:
    """Everything `render` needs; nothing in it changes while a frame is drawn."""

    path: Path | str  # a local stats file, or its sftp:// / s3:// URL
    stats: dict[str, Any] | None
    now: float
    stale_after: float = 600.0
    width: int = 80
    stats_mtime: float | None = None  # of the file the stats came from
    message: str = ""  # why there are no stats, or what went wrong since the last good read
    collecting: str = ""  # "--collect" status line, empty when not collecting
    ascii_only: bool = False

    @property
    def updated_at(self) -> float | None:
        """When the stats were generated (their own timestamp, else the file's mtime)."""
        generated = parse_time((self.stats or {}).get("generated_at"))
        return generated if generated is not None else self.stats_mtime

    @property
    def age(self) -> float | None:
        """Seconds since the stats were generated."""
        updated = self.updated_at
        return None if updated is None else max(0.0, self.now - updated)

    @property
    def stale(self) -> bool:
        """The stats are older than the threshold."""
        age = self.age
        return age is not None and age > self.stale_after

    @property
    def newest_write(self) -> float | None:
        """The latest mtime of any data file the stats saw."""
        times = [
            parse_time(entry.get("mtime"))
            for data in (self.stats or {}).get("datasets", {}).values()
            for entry in (data.get("files") or {}).values()
            if isinstance(entry, dict)
        ]
        known = [t for t in times if t is not None]
        return max(known) if known else None
