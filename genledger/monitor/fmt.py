"""Short, fixed-shape strings for numbers, rates, durations and ages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

DASH = "\N{EN DASH}"


def count(n: Any) -> str:
    """12,345; '?' when unknown."""
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else "?"


def percent(progress: Any) -> str:
    """80.0%; a dash when the expected total is unknown."""
    return f"{progress * 100:.1f}%" if isinstance(progress, int | float) else DASH


def compact(x: float) -> str:
    """A rate in at most 6 characters: 0.42, 12.3, 812, 12.3k, 1.23M."""
    if x == 0:
        return "0"
    if x < 10:
        return f"{x:.2f}"
    if x < 1_000:
        return f"{x:.1f}" if x < 100 else f"{x:.0f}"
    for limit, suffix in ((1e6, "k"), (1e9, "M"), (1e12, "G")):
        if x < limit:
            scaled = x / (limit / 1_000)
            return f"{scaled:.1f}{suffix}" if scaled < 100 else f"{scaled:.0f}{suffix}"
    return f"{x:.2g}"


def usd(x: float) -> str:
    """Dollars in a few characters: $0.42, $12.30, $812, $12.3k, $1.23M."""
    if x < 100:
        return f"${x:.2f}"
    return "$" + compact(x)


def duration(seconds: float) -> str:
    """45s, 12m05s, 3h07m, 2d04h."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3_600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86_400:
        return f"{s // 3_600}h{s % 3_600 // 60:02d}m"
    return f"{s // 86_400}d{s % 86_400 // 3_600:02d}h"


def parse_time(value: Any) -> float | None:
    """An ISO-8601 timestamp from the stats JSON as POSIX seconds (None if unparseable)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def bar(progress: Any, width: int, ascii_only: bool = False) -> str:
    """A text progress bar; blank dots when the expected total is unknown."""
    full, empty = ("#", "-") if ascii_only else ("█", "░")
    if not isinstance(progress, int | float):
        return "·" * width if not ascii_only else "." * width
    filled = int(min(max(progress, 0.0), 1.0) * width)  # full only when done
    return full * filled + empty * (width - filled)
