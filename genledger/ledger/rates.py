"""Rates and ETA from a bounded history of refreshes kept in each dataset's state record.

A sample is `[time, n_done, total_comp]`, one per refresh. Rates are differences between
samples, never counts divided by elapsed time, so a backlog found by the first refresh never
shows up as an absurd rate. Counts that went down (a file replaced by a shorter one, rotated
away or vanished), a truncated file, or a clock that went back start the history again
instead of producing a negative rate. A file replaced by a longer one keeps the history: some
writers rewrite their whole output each time, and that growth is real progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from genledger.ledger.records import DatasetRecord

WINDOW_S = 300.0  # the "recent" rate looks this far back
MIN_SPAN_S = 0.25  # two samples closer than this give no rate (timer noise, not throughput)
MAX_SAMPLES = 64  # the history is thinned beyond this; the first sample is always kept
RESET_READS = ("truncated",)

Sample = list[float]


def update_rates(
    block: Mapping[str, Any], record: DatasetRecord, now: float
) -> dict[str, Any] | None:
    """Append a sample (of `block`'s counts) to the record's history; the dataset's rate."""
    sample = [float(now), float(block["n_done"]), float(block["total_comp"])]
    history = [] if _must_reset(record, sample) else list(record.history)
    if history and history[-1][0] == sample[0]:
        history.pop()  # two refreshes at the same instant: the later counts win
    history.append(sample)
    record.history = _bounded(history, now)
    return dataset_rate(record.history, block["n_prompts"], block["n_done"])


def _must_reset(record: DatasetRecord, sample: Sample) -> bool:
    if not record.history:
        return False
    last = record.history[-1]
    if sample[0] < last[0] or sample[1] < last[1] or sample[2] < last[2]:
        return True  # the clock went back or counts shrank: old samples no longer compare
    return any(f.last_read.startswith(RESET_READS) for f in record.files.values())


def _bounded(history: list[Sample], now: float) -> list[Sample]:
    """Keep the first sample, the last one before the window, and those inside it."""
    cutoff = now - WINDOW_S
    before = [i for i, s in enumerate(history) if s[0] <= cutoff]
    anchor = before[-1] if before else 0
    kept = [history[0], *history[max(anchor, 1) :]] if len(history) > 1 else history
    while len(kept) > MAX_SAMPLES:
        # Thin the middle evenly; the origin and the newest sample always stay.
        kept = [kept[0], *kept[1:-1:2], kept[-1]]
    return kept


def _per_second(new: Sample, old: Sample) -> tuple[float, float, float]:
    span = new[0] - old[0]
    return span, (new[1] - old[1]) / span, (new[2] - old[2]) / span


def _window_base(history: list[Sample]) -> Sample:
    cutoff = history[-1][0] - WINDOW_S
    before = [s for s in history if s[0] <= cutoff]
    return before[-1] if before else history[0]


def eta_seconds(n_prompts: int | None, n_done: int, records_per_s: float) -> float | None:
    """Remaining records over the rate; None when the total is unknown or nothing moves."""
    if n_prompts is None:
        return None
    remaining = n_prompts - n_done
    if remaining <= 0:
        return 0.0
    return remaining / records_per_s if records_per_s > 0 else None


def dataset_rate(
    history: list[Sample], n_prompts: int | None, n_done: int
) -> dict[str, Any] | None:
    """The `rate` block of one dataset, or None until the history spans `MIN_SPAN_S`."""
    if len(history) < 2 or history[-1][0] - history[0][0] < MIN_SPAN_S:
        return None
    last = history[-1]
    base = _window_base(history)
    if last[0] - base[0] < MIN_SPAN_S:
        base = history[0]
    window_s, records_per_s, tokens_per_s = _per_second(last, base)
    start_s, start_records, start_tokens = _per_second(last, history[0])
    return {
        "records_per_s": records_per_s,
        "comp_tokens_per_s": tokens_per_s,
        "eta_s": eta_seconds(n_prompts, n_done, records_per_s),
        "window_s": window_s,
        "since_start": {
            "records_per_s": start_records,
            "comp_tokens_per_s": start_tokens,
            "span_s": start_s,
        },
        "samples": len(history),
    }


def total_rate(blocks: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The run-wide rate: dataset rates summed; ETA only if every expected total is known."""
    rated = [b["rate"] for b in blocks.values() if b.get("rate") is not None]
    if not rated:
        return None
    inference = [b for b in blocks.values() if b["kind"] == "inference"]
    expected = [b["n_prompts"] for b in inference]
    n_prompts = sum(expected) if inference and None not in expected else None
    n_done = sum(b["n_done"] for b in inference)
    records_per_s = sum(r["records_per_s"] for r in rated)
    return {
        "records_per_s": records_per_s,
        "comp_tokens_per_s": sum(r["comp_tokens_per_s"] for r in rated),
        "eta_s": eta_seconds(n_prompts, n_done, records_per_s),
        "since_start": {
            "records_per_s": sum(r["since_start"]["records_per_s"] for r in rated),
            "comp_tokens_per_s": sum(r["since_start"]["comp_tokens_per_s"] for r in rated),
        },
        "datasets_rated": len(rated),
    }
