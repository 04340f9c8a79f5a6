"""The dashboard's columns, declared once, and which of them fit a terminal's width."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rich.cells import cell_len

from genledger.ledger.summary import worst_failure
from genledger.monitor import fmt

BAR_WIDTH = 10
NAME_MAX = 64
WARMING_UP = "…"  # a rate needs two refreshes some time apart


@dataclass(frozen=True)
class Row:
    """One dataset's block of the stats JSON (or the totals block) and how to label it."""

    name: str
    data: dict[str, Any]
    is_total: bool = False
    ascii_only: bool = False

    @property
    def pretokenized(self) -> bool:
        """Only tokenized files: no responses, no completion rate."""
        return not self.is_total and self.data.get("kind") == "pretokenized"

    @property
    def rate(self) -> dict[str, Any] | None:
        """The `rate` block, if the stats have one yet."""
        rate = self.data.get("rate")
        return rate if isinstance(rate, dict) else None

    @property
    def status(self) -> str:
        """ok, warn or error."""
        return str((self.data.get("quality") or {}).get("status", "ok"))


@dataclass(frozen=True)
class Column:
    """A column: header, how to fill a cell, and how eagerly it is dropped when narrow."""

    key: str
    header: str
    priority: float  # lower survives narrower terminals
    cell: Callable[[Row], str]
    justify: Literal["left", "right"] = "right"
    max_width: int = 40
    min_width: int = 0  # > 0: the column may shrink to this (with an ellipsis) to fit
    keep_share: float = 0.0  # ...but never below this share of the terminal's width
    only_if: Callable[[Row], bool] | None = None  # shown when some row has something to show


def _name(row: Row) -> str:
    return row.name


def _bar(row: Row, width: int = BAR_WIDTH) -> str:
    return fmt.bar(row.data.get("progress"), width, row.ascii_only)


def cell_text(column: Column, row: Row, width: int) -> str:
    """The cell's text for a column `width` wide (a bar is drawn to fit, not cut)."""
    return _bar(row, width) if column.key == "bar" else column.cell(row)


def _pct(row: Row) -> str:
    return fmt.percent(row.data.get("progress"))


def _done(row: Row) -> str:
    if row.pretokenized:
        return f"{fmt.count(row.data.get('n_tokenized'))} rows"
    return f"{fmt.count(row.data.get('n_done'))}/{fmt.count(row.data.get('n_prompts'))}"


def _tokens(row: Row) -> str:
    key = "total_tokens" if row.pretokenized else "total_comp"
    value = row.data.get(key)
    if not isinstance(value, int):
        return "?"
    return f"{value:,}" if value < 100_000 else fmt.compact(value)


def _avg(row: Row) -> str:
    value = row.data.get("avg_tokens" if row.pretokenized else "avg_comp")
    return f"{value:,.0f}" if isinstance(value, int | float) else fmt.DASH


def _speed(row: Row) -> str:
    if row.pretokenized:
        return fmt.DASH
    rate = row.rate
    return WARMING_UP if rate is None else fmt.compact(float(rate["comp_tokens_per_s"]))


def _eta(row: Row) -> str:
    if row.pretokenized:
        return fmt.DASH
    rate = row.rate
    progress = row.data.get("progress")
    if isinstance(progress, int | float) and progress >= 1:
        return "done"
    if row.data.get("n_prompts") is None:
        return "?"  # the expected total is unknown: no ETA, ever
    if rate is None:
        return WARMING_UP
    eta = rate.get("eta_s")
    if eta is None:
        return "stalled" if not rate.get("records_per_s") else fmt.DASH
    return fmt.duration(float(eta))


def _formats(row: Row) -> str:
    formats = row.data.get("formats") or {}
    total = sum(formats.values()) or 1
    top = sorted(formats.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{name} {n / total:.0%}" for name, n in top) or fmt.DASH


def _has_reasoning(row: Row) -> bool:
    return isinstance(row.data.get("total_reasoning"), int)


def _reasoning(row: Row) -> str:
    """The share of completion tokens that were hidden reasoning, where the records say."""
    reasoning, total = row.data.get("total_reasoning"), row.data.get("total_comp")
    if not isinstance(reasoning, int) or not isinstance(total, int) or not total:
        return fmt.DASH
    return f"{reasoning / total:.0%}"


def _has_cost(row: Row) -> bool:
    unpriced = (row.data.get("cost_unpriced") or {}).get("n_records")
    return row.data.get("cost_usd") is not None or bool(unpriced)


def _cost(row: Row) -> str:
    """`$ spent / $ projected`; `+` after a figure that leaves unpriced records out."""
    if row.pretokenized:
        return fmt.DASH
    spent, projected = row.data.get("cost_usd"), row.data.get("cost_projected_usd")
    more = "+" if (row.data.get("cost_unpriced") or {}).get("n_records") else ""
    left = "?" if spent is None else fmt.usd(spent) + more
    right = "?" if projected is None else fmt.usd(projected) + more
    return f"{left} / {right}"


def _audited(row: Row) -> int | None:
    """Records whose own usage numbers disagree (the `usage_inconsistent` audit)."""
    found = (row.data.get("quality") or {}).get("usage_inconsistent")
    return found if isinstance(found, int) else None


def _has_audit(row: Row) -> bool:
    return bool(_audited(row))


def _audit(row: Row) -> str:
    found = _audited(row)
    return fmt.count(found) if found else fmt.DASH


def _has_health(row: Row) -> bool:
    return isinstance(row.data.get("health"), dict) and not row.pretokenized


def _drift(row: Row) -> str:
    """What moved since the run's start (the first window against the latest), else the
    share cut at the token limit."""
    health = row.data.get("health") or {}
    moved = health.get("drift") or []
    if moved:
        return moved[0] + (f" (+{len(moved) - 1})" if len(moved) > 1 else "")
    share = health.get("truncated_share")
    return f"cut {share:.0%}" if isinstance(share, int | float) and share else fmt.DASH


def _status(row: Row) -> str:
    status = row.status.upper()
    if row.is_total:
        by_status = (row.data.get("quality") or {}).get("datasets_by_status") or {}
        parts = [f"{by_status[s]} {s}" for s in ("error", "warn") if by_status.get(s)]
        return " ".join([status, ", ".join(parts)]).strip()
    failure = worst_failure(row.data.get("quality") or {})
    return f"{status} {failure}".strip()


# Display order; `priority` decides what stays when the terminal is narrow.
COLUMNS = (
    Column("dataset", "dataset", 0, _name, "left", NAME_MAX, min_width=12, keep_share=0.4),
    Column("bar", "", 6, _bar, "left", min_width=4),
    Column("pct", "%", 1, _pct),
    Column("done", "done/expected", 5, _done),
    Column("tokens", "tokens", 7, _tokens),
    Column("avg", "avg", 8, _avg),
    Column("speed", "tok/s", 3, _speed),
    Column("eta", "ETA", 4, _eta),
    Column("reasoning", "think", 10, _reasoning, only_if=_has_reasoning),
    Column("cost", "$ spent / projected", 8.5, _cost, only_if=_has_cost),
    Column("formats", "formats", 9, _formats, "left", 32, min_width=12),
    Column("audit", "usage!", 11, _audit, only_if=_has_audit),
    Column("drift", "drift", 11, _drift, "left", 40, min_width=8, only_if=_has_health),
    Column("status", "status", 2, _status, "left", 48, min_width=5),
)


ESSENTIAL = 2  # columns of this priority or better are placed first, at their minimum


KEY_FIGURES = 4  # name, percent, status, tok/s, ETA: what a frame is for
# A long name widens only after the figures have their place (it is cut with "…" until then).
WIDEN_LATE = {"dataset": KEY_FIGURES + 0.5}


def shown(rows: list[Row]) -> tuple[Column, ...]:
    """The columns with something to show for these rows (a reasoning share only when known,
    the audit's count only when some record's numbers disagree)."""
    return tuple(c for c in COLUMNS if c.only_if is None or any(c.only_if(r) for r in rows))


def _natural(rows: list[Row]) -> dict[str, int]:
    return {
        c.key: min(c.max_width, max(cell_len(c.header), *(cell_len(c.cell(r)) for r in rows)))
        for c in shown(rows)
    }


def width_for_key_figures(rows: list[Row], gap: int = 1) -> int:
    """How wide a frame must be to show the key-figure columns uncut."""
    natural = _natural(rows)
    key = [natural[c.key] for c in shown(rows) if c.priority <= KEY_FIGURES]
    return sum(key) + gap * (len(key) - 1)


def fit(rows: list[Row], width: int, gap: int = 1) -> list[tuple[Column, int]]:
    """The columns that fit in `width` (by priority), with their widths, in display order."""
    columns = shown(rows)
    by_priority = sorted(columns, key=lambda c: c.priority)
    natural = _natural(rows)
    floor = {
        c.key: min(natural[c.key], max(c.min_width, int(c.keep_share * width)))
        if c.min_width
        else natural[c.key]
        for c in columns
    }
    chosen: dict[str, int] = {}

    def spare(joining: bool) -> int:
        used = sum(chosen.values()) + gap * max(0, len(chosen) - 1)
        return width - used - (gap if joining and chosen else 0)

    for column in by_priority:  # the essentials first, as narrow as they may be
        if column.priority <= ESSENTIAL and floor[column.key] <= spare(joining=True):
            chosen[column.key] = floor[column.key]
    steps = sorted(columns, key=lambda c: WIDEN_LATE.get(c.key, c.priority))
    for column in steps:
        if column.key in chosen:  # then the essentials widen, in order of priority
            grow = natural[column.key] - chosen[column.key]
            chosen[column.key] += max(0, min(grow, spare(joining=False)))
        elif column.priority > ESSENTIAL:  # and the rest join while they fit
            size = min(natural[column.key], spare(joining=True))
            if size >= floor[column.key]:
                chosen[column.key] = size
    return [(c, chosen[c.key]) for c in columns if c.key in chosen]
