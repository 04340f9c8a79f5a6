"""Budgets: news when the projected cost first exceeds a budget (warn) and when the cost spent
does (error), once each (docs/cost.md, docs/notifications.md).

The numbers are the stats JSON's (`cost_usd`, `cost_projected_usd`); the budgets are the
configuration's (`[budget] run_usd`, `[datasets."X"] budget_usd`). What people were told lives
in the caller's state (a sensor cursor), keyed by the budget and its amount: raising a budget
makes crossing it news again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from genledger.config import Config
from genledger.ledger.summary import usd
from genledger.notify.model import Alert, Kind

RUN = "(run)"  # the whole run's budget, beside the datasets' own
CHECK = "cost_within_budget"
BudgetState = dict[str, dict[str, Any]]  # budget name -> {"usd", "level"}
PROJECTED, SPENT = 1, 2  # how far over a budget: the projection, the cost itself


@dataclass(frozen=True)
class Budget:
    """One budget and the block of the stats JSON it limits."""

    name: str  # a dataset, or RUN
    usd: float
    block: dict[str, Any]


def budgets(config: Config, stats: dict[str, Any]) -> list[Budget]:
    """The configured budgets whose block the stats hold."""
    found = []
    if config.budget.run_usd is not None and isinstance(stats.get("totals"), dict):
        found.append(Budget(RUN, config.budget.run_usd, stats["totals"]))
    datasets = stats.get("datasets") or {}
    for name, amount in sorted(config.budgets.items()):
        if isinstance(datasets.get(name), dict):
            found.append(Budget(name, amount, datasets[name]))
    return found


def _level(budget: Budget) -> int:
    spent, projected = budget.block.get("cost_usd"), budget.block.get("cost_projected_usd")
    if isinstance(spent, int | float) and spent > budget.usd:
        return SPENT
    if isinstance(projected, int | float) and projected > budget.usd:
        return PROJECTED
    return 0


def decide_budgets(
    config: Config, stats: dict[str, Any], state: BudgetState
) -> tuple[list[Alert], BudgetState]:
    """Alerts for budgets crossed since people were last told, and the state after."""
    after: BudgetState = {}
    alerts = []
    for budget in budgets(config, stats):
        told = state.get(budget.name, {})
        level = told.get("level", 0) if told.get("usd") == budget.usd else 0
        now = _level(budget)
        if now > level:
            alerts.append(_alert(budget, now))
            level = now
        after[budget.name] = {"usd": budget.usd, "level": level}
    return alerts, after


def _alert(budget: Budget, level: int) -> Alert:
    block = budget.block
    spent, projected = block.get("cost_usd"), block.get("cost_projected_usd")
    limit = usd(budget.usd)
    if level == SPENT:
        detail = f"spent {usd(spent)} > budget {limit}"
        detail += f" (projected {usd(projected)})" if projected is not None else ""
    else:
        detail = f"projected {usd(projected)} > budget {limit} (spent {usd(spent)} so far"
        detail += f", {block.get('n_done', 0):,}/{block.get('n_prompts')} done)"
    unpriced = (block.get("cost_unpriced") or {}).get("n_records") or 0
    if unpriced:
        detail += f"; {unpriced:,} records unpriced, not counted"
    return Alert(
        kind=Kind.OVER_BUDGET if level == SPENT else Kind.PROJECTED_OVER_BUDGET,
        dataset=budget.name,
        severity="error" if level == SPENT else "warn",
        check=CHECK,
        failure_count=1,
        detail=detail,
    )
