"""Stall detection: an incomplete dataset whose responses stopped growing, and its resumption."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genledger.config import NotifySettings
from genledger.notify.model import Alert, Kind

StallState = dict[str, dict[str, Any]]  # dataset -> {"signal", "since", "stalled"}


@dataclass(frozen=True)
class Progress:
    """How far one dataset has come, as seen now."""

    dataset: str
    n_done: int
    n_prompts: int | None
    response_bytes: int

    @property
    def incomplete(self) -> bool:
        """Known to be unfinished; an unknown total never counts as incomplete."""
        return self.n_prompts is not None and self.n_done < self.n_prompts


def read_stats(path: Path | None) -> dict[str, Any] | None:
    """The stats JSON, or None while it does not exist yet or cannot be read."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def progress_from_stats(stats: dict[str, Any], data_root: Path | None = None) -> list[Progress]:
    """One `Progress` per inference dataset: counts from the stats, sizes from the files now."""
    root = data_root or (Path(stats["data_root"]) if stats.get("data_root") else None)
    found = []
    for name, block in (stats.get("datasets") or {}).items():
        if not isinstance(block, dict) or block.get("kind") != "inference":
            continue
        n_prompts = block.get("n_prompts")
        found.append(
            Progress(
                dataset=name,
                n_done=int(block.get("n_done") or 0),
                n_prompts=int(n_prompts) if isinstance(n_prompts, int) else None,
                response_bytes=_response_bytes(root, name, block.get("files") or {}),
            )
        )
    return found


def _response_bytes(root: Path | None, dataset: str, files: dict[str, Any]) -> int:
    """Current sizes of the responses files: stat them, fall back to the stats' own numbers."""
    total = 0
    for name, info in files.items():
        if not isinstance(info, dict) or info.get("role", "responses") != "responses":
            continue
        try:
            total += (root / dataset / name).stat().st_size if root else int(info["bytes"])
        except (OSError, KeyError, TypeError, ValueError):
            total += int(info.get("bytes") or 0)
    return total


def decide_stalls(
    progress: list[Progress], state: StallState, settings: NotifySettings, now: float
) -> tuple[list[Alert], StallState]:
    """Stalled/resumed alerts, once per transition, and the state after this look."""
    after: StallState = {}
    alerts = []
    for seen in progress:
        signal = [seen.response_bytes, seen.n_done]
        before = state.get(seen.dataset)
        if before is None or before["signal"] != signal:
            if before is not None and before.get("stalled"):
                alerts.append(_alert(Kind.RESUMED, seen, now - float(before["since"])))
            after[seen.dataset] = {"signal": signal, "since": now, "stalled": False}
            continue
        entry = dict(before)
        quiet_s = now - float(before["since"])
        if seen.incomplete and not before.get("stalled") and quiet_s >= settings.stall_minutes * 60:
            alerts.append(_alert(Kind.STALLED, seen, quiet_s))
            entry["stalled"] = True
        after[seen.dataset] = entry
    return alerts, after


def _alert(kind: Kind, seen: Progress, quiet_s: float) -> Alert:
    minutes = round(quiet_s / 60)
    done = f"{seen.n_done}/{seen.n_prompts} done" if seen.n_prompts is not None else ""
    detail = (
        f"no new responses for {minutes} min; {done}"
        if kind == Kind.STALLED
        else f"responses growing again after {minutes} min; {done}"
    )
    return Alert(
        kind=kind,
        dataset=seen.dataset,
        severity="error" if kind == Kind.STALLED else "info",
        check="responses_growing",
        failure_count=(seen.n_prompts or 0) - seen.n_done,
        detail=detail,
    )
