"""How a notification words the run-health rules: what moved, from what to what, against
which threshold (the checks carry it as their `detail`; docs/notifications.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Block = dict[str, Any]


def _pct(share: float | None) -> str:
    return "?" if share is None else f"{share:.1%}"


def _share_over(found: int, of: str, share: Any, what: str, threshold: Any) -> str:
    """`N of M things (share) what; threshold T`: a share checked against its setting."""
    return f"{found:,} of {of} ({_pct(share)}) {what}; threshold {_pct(threshold)}"


def _truncated(block: Block, settings: Any) -> str:
    h = block.get("health") or {}
    records = f"{block.get('n_done', 0):,} records"
    limit = getattr(settings, "truncated_share", None)
    share = h.get("truncated_share")
    return _share_over(h.get("truncated", 0), records, share, "stopped at the token limit", limit)


def _duplicates(block: Block, settings: Any) -> str:
    h = block.get("health") or {}
    answers = f"{h.get('answers', 0):,} answers"
    limit = getattr(settings, "duplicate_share", None)
    share = h.get("duplicate_share")
    return _share_over(
        h.get("duplicate_outputs", 0), answers, share, "repeat an earlier one", limit
    )


def _drift(block: Block, settings: Any) -> str:
    moved = (block.get("health") or {}).get("drift") or []
    return "; ".join(moved) + " (first window → latest)" if moved else ""


def _unmasked(block: Block, settings: Any) -> str:
    found = (block.get("quality") or {}).get("prompt_not_masked", 0)
    return f"{found:,} of {block.get('n_tokenized', 0):,} samples train on every token"


def _over_length(block: Block, settings: Any) -> str:
    found = (block.get("quality") or {}).get("over_length", 0)
    limit = getattr(settings, "max_seq_len", None)
    return f"{found:,} of {block.get('n_tokenized', 0):,} samples longer than {limit} tokens"


WORDING: dict[str, Callable[[Block, Any], str]] = {
    "truncated_outputs": _truncated,
    "duplicate_outputs": _duplicates,
    "output_drift": _drift,
    "prompt_not_masked": _unmasked,
    "over_length": _over_length,
}


def detail(rules: list[str], block: Block, settings: Any) -> str:
    """One line about the failing run-health rules among `rules` ('' when none is)."""
    failing = {f["check"] for f in (block.get("quality") or {}).get("failures", [])}
    parts = [WORDING[r](block, settings) for r in rules if r in WORDING and r in failing]
    return "; ".join(p for p in parts if p)[:300]
