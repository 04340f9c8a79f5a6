"""Rates and ETA from a bounded history of refreshes (filled in by the monitor issue)."""

from __future__ import annotations

from typing import Any

from genledger.state import DatasetRecord


def update_rates(block: dict[str, Any], record: DatasetRecord, now: float) -> None:
    """Append a sample to the record's history and set `block["rate"]`."""
    block["rate"] = None


def total_rate(blocks: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The run-wide rate from the datasets' rates."""
    return None
