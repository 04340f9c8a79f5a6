"""A pure function from the monitor's state to one frame: header, dataset table, totals."""

from __future__ import annotations

import time
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from genledger.monitor import fmt
from genledger.monitor.columns import Row, cell_text, fit, width_for_key_figures
from genledger.monitor.state import MonitorState
from genledger.terminal import printable

STATUS_STYLE = {"error": "bold red", "warn": "yellow", "ok": "green"}
ROW_STYLE = {"error": "red"}


def render(state: MonitorState) -> RenderableType:
    """One frame; never raises on a stats JSON of unexpected shape."""
    parts: list[RenderableType] = [_line(t, state.width) for t in _header(state)]
    if state.stats is None:
        waiting = Text("waiting for stats", style="bold yellow")
        waiting.append(printable(f": {state.message or 'nothing readable yet'}"))
        parts.append(_line(waiting, state.width))
        return Group(*parts)
    parts.append(_table(state))
    if state.message:
        parts.append(_line(Text(printable(state.message), style="yellow"), state.width))
    return Group(*parts)


def _line(text: Text, width: int) -> Text:
    """A line that never wraps: cut with an ellipsis at the terminal's width."""
    text.no_wrap = True
    text.overflow = "ellipsis"
    if width:
        text.truncate(width, overflow="ellipsis")
    return text


def _header(state: MonitorState) -> list[Text]:
    title = Text()
    if state.stale:
        title.append(" STALE ", style="bold white on red")
        title.append(" ")
    title.append("genledger", style="bold")
    if state.stats is not None:
        title.append(f" · {len((state.stats or {}).get('datasets') or {})} datasets")
    age = state.age
    if age is None:
        title.append(" · no stats yet")
    else:
        clock = time.strftime("%H:%M:%S", time.gmtime(state.updated_at or 0))
        title.append(" · updated ")
        title.append(f"{fmt.duration(age)} ago", style="bold red" if state.stale else "")
        title.append(f" ({clock}Z)")
    written = state.newest_write
    if written is not None:
        title.append(f" · last write {fmt.duration(max(0.0, state.now - written))} ago")
    lines = [title, Text(printable(str(state.path)), style="dim")]
    if state.collecting:
        lines.append(Text(printable(state.collecting), style="dim"))
    return lines


def frame_width(state: MonitorState, limit: int = 200) -> int:
    """For output that cannot wrap (a pipe): widen past `state.width` to keep the key figures."""
    rows, total = _rows(state)
    return max(state.width, min(limit, width_for_key_figures([*rows, total])))


def _rows(state: MonitorState) -> tuple[list[Row], Row]:
    stats: dict[str, Any] = state.stats or {}
    rows = [
        Row(str(name), data, ascii_only=state.ascii_only)
        for name, data in (stats.get("datasets") or {}).items()
        if isinstance(data, dict)
    ]
    return rows, Row("total", stats.get("totals") or {}, is_total=True, ascii_only=state.ascii_only)


def _table(state: MonitorState) -> Table:
    rows, total = _rows(state)
    table = Table(
        box=box.SIMPLE,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        show_footer=True,
        header_style="bold",
        footer_style="bold",
    )
    columns = fit([*rows, total], state.width)
    for column, width in columns:
        table.add_column(
            column.header,
            footer=_cell(column.key, cell_text(column, total, width), total),
            justify=column.justify,
            width=width,
            no_wrap=True,
            overflow="ellipsis",
        )
    for row in rows:
        table.add_row(
            *(_cell(c.key, cell_text(c, row, w), row) for c, w in columns),
            style=ROW_STYLE.get(row.status),
        )
    return table


def _cell(key: str, value: str, row: Row) -> Text:
    if key == "status":
        return Text(value, style=STATUS_STYLE.get(row.status, ""))
    if key == "eta" and value == "stalled":
        return Text(value, style="yellow")
    return Text(value)
