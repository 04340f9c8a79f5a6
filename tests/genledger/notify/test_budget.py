"""Budget news: the projection over a budget once (warn), the spending over it once (error)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from genledger.config import BudgetSettings, Config
from genledger.notify.budget import RUN, decide_budgets
from genledger.notify.model import Kind, Message
from genledger.notify.render import json_body, title
from genledger.refresh.collect import refresh

from ..conftest import jl

T0 = 1_794_000_000


def anthropic(rid: str) -> dict[str, Any]:
    """One priced record (every one alike: each costs the same)."""
    return {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20_000, "output_tokens": 4_000},
    }


class Run:
    """A dataset of `expected` prompts, written a few records at a time, and its refreshes."""

    def __init__(self, tmp_path: Path, expected: int) -> None:
        self.folder = tmp_path / "data" / "ds"
        self.folder.mkdir(parents=True)
        (self.folder / "prompts.jsonl").write_bytes(jl(*({"p": i} for i in range(expected))))
        self.config = Config(
            data_root=tmp_path / "data", stats_path=tmp_path / "s.json", state_dir=tmp_path / "st"
        )
        self.written = 0

    def write(self, n: int) -> dict[str, Any]:
        """Append `n` records; the stats after a refresh."""
        with (self.folder / "raw_responses.jsonl").open("ab") as out:
            out.write(jl(*(anthropic(f"r{self.written + i}") for i in range(n))))
        os.utime(self.folder / "raw_responses.jsonl", (T0, T0))
        self.written += n
        return refresh(self.config).stats


def test_the_projection_then_the_spending_over_a_budget_are_news_once_each(
    tmp_path: Path,
) -> None:
    run = Run(tmp_path, expected=10)
    stats = run.write(2)
    per_record = stats["datasets"]["ds"]["cost_usd"] / 2
    config = replace(run.config, budgets={"ds": per_record * 5.5})  # 5.5 records' worth

    alerts, state = decide_budgets(config, stats, {})
    assert [(a.kind, a.severity, a.dataset) for a in alerts] == [
        (Kind.PROJECTED_OVER_BUDGET, "warn", "ds")
    ]
    assert "projected" in alerts[0].detail and "2/10 done" in alerts[0].detail
    alerts, state = decide_budgets(config, run.write(3), state)  # 5 spent: still under
    assert alerts == []
    alerts, state = decide_budgets(config, run.write(1), state)  # 6 spent: over
    assert [(a.kind, a.severity) for a in alerts] == [(Kind.OVER_BUDGET, "error")]
    assert alerts[0].detail.startswith("spent $")
    alerts, state = decide_budgets(config, run.write(1), state)
    assert alerts == [], "news once"


def test_a_raised_budget_makes_crossing_it_news_again_and_the_run_budget_reads_the_totals(
    tmp_path: Path,
) -> None:
    run = Run(tmp_path, expected=4)
    stats = run.write(4)
    spent = stats["totals"]["cost_usd"]
    config = replace(run.config, budget=BudgetSettings(run_usd=spent / 2))
    alerts, state = decide_budgets(config, stats, {})
    assert [(a.kind, a.dataset) for a in alerts] == [(Kind.OVER_BUDGET, RUN)]
    raised = replace(config, budget=BudgetSettings(run_usd=spent * 0.75))
    alerts, state = decide_budgets(raised, stats, state)
    assert [a.kind for a in alerts] == [Kind.OVER_BUDGET]
    enough = replace(config, budget=BudgetSettings(run_usd=spent * 2))
    assert decide_budgets(enough, stats, {})[0] == []


def test_a_budget_message_says_over_budget_with_the_numbers(tmp_path: Path) -> None:
    run = Run(tmp_path, expected=4)
    stats = run.write(4)
    config = replace(run.config, budgets={"ds": stats["datasets"]["ds"]["cost_usd"] / 3})
    alerts, _ = decide_budgets(config, stats, {})
    message = Message(id="x", created_at="now", alerts=tuple(alerts))
    assert title(message) == "genledger ERROR: over budget — ds"
    body = json_body(message, None)
    assert body["alerts"][0]["kind"] == "over_budget"
    assert body["alerts"][0]["check"] == "cost_within_budget"
    assert "$" in body["text"] and "budget" in body["text"]
