"""Run health in the stats JSON (docs/stats-json.md): truncation, output lengths, duplicate
answers, drift from the run's start; and the rules weighed by a share (`[health]`).

`truncated_outputs` and `duplicate_outputs` find their rows like any rule (the books' pass,
the dataset's answer keys) but fail only when their share of the dataset passes the
configured threshold: below it their failures are dropped here, so the stats JSON, the exit
code, the Dagster checks and the notifications all see the same verdict. `output_drift`
compares the dataset's first window with its latest (`ledger.window`).
"""

from __future__ import annotations

from typing import Any

from genledger.config import HealthSettings
from genledger.ledger.quantiles import Quantiles
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows, drift, window_block
from genledger.rules.result import RuleTally

DEFAULT_HEALTH = HealthSettings()
RESPONSE_FILES = "raw_responses*.jsonl"  # how examples name all response shards at once
DRIFT_MEASURES = ("latest window", "first window")


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def answers(tally: FileTally) -> int:
    """Records with a visible answer (their keys kept)."""
    return sum(len(h) for h in tally.hashes.values())


def health_block(
    tally: FileTally, windows: Windows | None, failures: dict[str, RuleTally]
) -> dict[str, Any]:
    """A dataset's `health` (its summed tally, its windows, its raw dataset failures)."""
    duplicates = failures.get("duplicate_outputs", RuleTally()).count
    truncated = failures.get("truncated_outputs", RuleTally()).count  # before it is weighed
    quantiles = tally.quantiles.get("output_tokens", Quantiles())
    first = windows.first_block() if windows is not None else None
    latest = window_block(windows.latest) if windows is not None else None
    return {
        "truncated": truncated,
        "truncated_share": _share(truncated, tally["records"]),
        "output_tokens": quantiles.summary(),
        "answers": answers(tally),
        "duplicate_outputs": duplicates,
        "duplicate_share": _share(duplicates, answers(tally)),
        "first_window": first,
        "latest_window": latest,
        "drift": drift(first, latest) if _comparable(windows) else [],
    }


def _comparable(windows: Windows | None) -> bool:
    """Both windows are full: the first is frozen, the latest holds as many records."""
    return (
        windows is not None
        and len(windows.first) >= windows.limit
        and len(windows.latest) >= windows.limit
    )


def weighed(
    failures: dict[str, RuleTally], health: dict[str, Any], settings: HealthSettings
) -> dict[str, RuleTally]:
    """`failures` with the share rules kept only above their thresholds, and the drift."""
    out = dict(failures)
    share = health.get("truncated_share")
    if share is None or share <= settings.truncated_share:
        out.pop("truncated_outputs", None)
    share = health.get("duplicate_share")
    if share is None or share <= settings.duplicate_share:
        out.pop("duplicate_outputs", None)
    moved = health.get("drift") or []
    if moved:
        examples = [
            {"file": RESPONSE_FILES, "line": 0, "reason": f"{what} ({_windows(health)})"}
            for what in moved[:5]
        ]
        out["output_drift"] = RuleTally(len(moved), examples)
    return out


def _windows(health: dict[str, Any]) -> str:
    first, latest = health["first_window"], health["latest_window"]
    return f"first {first['records']:,} records → latest {latest['records']:,}"


def total_health(
    blocks: list[dict[str, Any]], output_tokens: dict[str, int] | None
) -> dict[str, Any]:
    """The totals' `health`: counts summed, shares of the sums (windows are per dataset),
    `output_tokens`: the quantiles merged over every dataset's files."""
    found = [b["health"] for b in blocks if b.get("health")]
    truncated = sum(h["truncated"] for h in found)
    duplicates = sum(h["duplicate_outputs"] for h in found)
    records = sum(b["n_done"] for b in blocks if b.get("health"))
    answered = sum(h["answers"] for h in found)
    return {
        "truncated": truncated,
        "truncated_share": _share(truncated, records),
        "output_tokens": output_tokens,
        "answers": answered,
        "duplicate_outputs": duplicates,
        "duplicate_share": _share(duplicates, answered),
        "first_window": None,
        "latest_window": None,
        "drift": [],
    }
