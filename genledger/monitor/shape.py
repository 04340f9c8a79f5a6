"""The fields of a stats JSON the monitor reads, and their types: a document from elsewhere
(an older writer, a hand edit, a bug) is drawn from the fields that have the right type, and
the others are named in one line instead of crashing the frame."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]
Shape = Check | dict[str, Any] | list[Any]


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _or_null(check: Check) -> Check:
    return lambda v: v is None or check(v)


RATE = {"comp_tokens_per_s": _number, "records_per_s": _number, "eta_s": _or_null(_number)}
QUALITY = {
    "status": _text,
    "failures": [{"check": _text, "count": _whole, "severity": _text}],
    "datasets_by_status": {"*": _whole},
}
BLOCK = {
    "kind": _text,
    "n_prompts": _or_null(_whole),
    "n_done": _whole,
    "progress": _or_null(_number),
    "total_comp": _whole,
    "avg_comp": _or_null(_number),
    "n_tokenized": _whole,
    "total_tokens": _whole,
    "avg_tokens": _or_null(_number),
    "total_reasoning": _or_null(_whole),
    "formats": {"*": _whole},
    "quality": QUALITY,
    "rate": RATE,  # or null
    "files": {"*": {"mtime": _or_null(_text)}},
    "cost_usd": _or_null(_number),
    "cost_projected_usd": _or_null(_number),
    "cost_unpriced": {"n_records": _whole, "models": [_text]},  # or null
    "health": {"drift": [_text], "truncated_share": _or_null(_number)},  # or null
}
STATS = {"generated_at": _or_null(_text), "totals": BLOCK, "datasets": {"*": BLOCK}}
NULLABLE = {"rate", "cost_unpriced", "health"}  # tables that may be null
# Keys a table is of no use without (it is left out whole when one is missing or wrong).
REQUIRED = {
    id(RATE): ("comp_tokens_per_s", "records_per_s"),
    id(QUALITY["failures"][0]): ("check", "count", "severity"),  # type: ignore[index]
}


def conform(stats: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`stats` with every field the monitor reads of the wrong type left out, and where they
    were (`totals.n_done`)."""
    wrong: list[str] = []
    return _table(STATS, stats, "", wrong), wrong


def _table(shape: dict[str, Any], value: dict[str, Any], at: str, wrong: list[str]) -> Any:
    out: dict[str, Any] = {}
    if any(key not in value for key in REQUIRED.get(id(shape), ())):
        wrong.append(at)
        return _DROP
    for key, inner in value.items():
        rule = shape.get(key, shape.get("*"))
        where = f"{at}.{key}" if at else str(key)
        if rule is None:
            out[key] = inner  # a field the monitor does not read
        elif key in NULLABLE and inner is None:
            out[key] = None
        else:
            fitted = _fit(rule, inner, where, wrong)
            if fitted is not _DROP:
                out[key] = fitted
            elif key in REQUIRED.get(id(shape), ()):
                return _DROP
    return out


_DROP = object()


def _fit(rule: Shape, value: Any, at: str, wrong: list[str]) -> Any:
    if isinstance(rule, dict):
        if isinstance(value, dict):
            return _table(rule, value, at, wrong)
    elif isinstance(rule, list):
        if isinstance(value, list):
            items = [_fit(rule[0], v, f"{at}[{i}]", wrong) for i, v in enumerate(value)]
            return [v for v in items if v is not _DROP]
    elif rule(value):
        return value
    wrong.append(at)
    return _DROP
