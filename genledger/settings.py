"""The schema of genledger.toml: every table and key it may hold, each value's type and range.

`validate` checks a parsed file against it and returns the values normalised (lists as tuples,
numbers as floats where a float is meant); `genledger.config` builds its dataclasses from them.
Anything else is an error naming the file, the key and what was expected: an unknown key or
table anywhere (a typo such as `[tokenised]` or `stats_pth` would otherwise be ignored), a
value of the wrong type, a number out of range (`retries = -5` sent no alert ever, `nan` is
not a time), two user formats of one name (one named like a built-in format is refused where
the declarations are read, `genledger.parse.declarations`, downstream of this module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# The keys of a user's `[[formats]]` table (docs/formats.md); their paths are parsed by
# `genledger.parse.declarations`.
FORMAT_KEYS = (
    "name", "completion_tokens", "prompt_tokens", "reasoning_tokens", "cached_tokens",
    "finish_reason", "id", "text", "detect", "failed_when", "samples", "float_counts",
)  # fmt: skip


class SettingsError(ValueError):
    """A value of the file is not what the schema allows; the message names the key."""


@dataclass(frozen=True)
class Value:
    """One key's value: what is expected (in words), the test, and its normal form."""

    expected: str
    accepts: Callable[[Any], bool]
    normal: Callable[[Any], Any] = lambda v: v


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def number(minimum: float, above: bool = False) -> Value:
    """A finite number >= `minimum` (> with `above`), as a float."""
    sign = ">" if above else ">="
    return Value(
        f"a number {sign} {minimum:g}",
        lambda v: _number(v) and (v > minimum if above else v >= minimum),
        float,
    )


def whole(minimum: int, maximum: int | None = None) -> Value:
    """A whole number in [minimum, maximum]."""
    words = f"a whole number >= {minimum}" + (f" and <= {maximum}" if maximum else "")
    return Value(words, lambda v: _whole(v) and v >= minimum and (maximum is None or v <= maximum))


TEXT = Value("a string", lambda v: isinstance(v, str))
NAME = Value("a non-empty string", lambda v: isinstance(v, str) and bool(v))
FLAG = Value("true or false", lambda v: isinstance(v, bool))
TEXTS = Value(
    "a list of strings",
    lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    tuple,
)
GLOBS = Value(
    "a string or a list of strings",
    lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    lambda v: (v,) if isinstance(v, str) else tuple(v),
)


def one_of(*choices: str) -> Value:
    """One of a few strings."""
    return Value(" or ".join(repr(c) for c in choices), lambda v: v in choices)


@dataclass(frozen=True)
class Table:
    """A table with known keys; `required`: keys it must have."""

    keys: Mapping[str, Value | Table | Tables]
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tables:
    """A table of tables named by the user (`[datasets."name"]`), or, with `array`, an array
    of tables (`[[formats]]`), each following `each`."""

    each: Table
    array: bool = False


FILES = Table(
    {
        "responses": GLOBS,
        "tokenized": GLOBS,
        "prompts": GLOBS,
        "ignore": GLOBS,
        "settle_seconds": number(0),
        "max_line_bytes": whole(1),
    }
)
DAGSTER = Table(
    {
        "schedule_cron": NAME,
        "sensor_interval_s": whole(1),
        "owners": TEXTS,
        "executor": one_of("in_process", "multiprocess"),
    }
)
NOTIFY = Table(
    {
        "stall_minutes": number(0, above=True),
        "worse_factor": number(1),
        "reminder_minutes": number(0),
        "retries": whole(0, 100),
        "backoff_s": number(0),
        "email_to": GLOBS,
        "email_from": NAME,
        "log_path": NAME,
        "min_severity": one_of("warn", "error"),
        "lookback_minutes": number(0),
    }
)
DETECT = Value(
    "a condition or a non-empty list of them",
    lambda v: isinstance(v, str) or (bool(v) and TEXTS.accepts(v)),
)
FORMAT = Table(
    {key: TEXT for key in FORMAT_KEYS} | {"name": NAME, "detect": DETECT, "float_counts": FLAG},
    required=("name", "completion_tokens"),
)
SCHEMA = Table(
    {
        "data_root": TEXT,
        "stats_path": TEXT,
        "state_dir": TEXT,
        "files": FILES,
        "datasets": Tables(Table({"n_prompts": whole(0)})),
        "dagster": DAGSTER,
        "notify": NOTIFY,
        "formats": Tables(FORMAT, array=True),
    }
)


def validate(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`raw` (a parsed genledger.toml) checked against `SCHEMA`, its values normalised; raises
    `SettingsError` naming `where`, the key and what was expected."""
    values = _table(SCHEMA, raw, "", where)
    _unique_names(values.get("formats", ()), where)
    return values


def _table(table: Table, raw: Any, path: str, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise SettingsError(f"{where}: {_shown(path)} must be a table, got {_got(raw)}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        inner = f"{path}.{key}" if path else key
        if key not in table.keys:
            raise SettingsError(f"{where}: {_unknown(inner, key, table, value)}")
        out[key] = _value(table.keys[key], value, inner, where)
    for key in table.required:
        if key not in raw:
            raise SettingsError(f"{where}: {_shown(path)} needs `{key}`")
    return out


def _value(schema: Value | Table | Tables, value: Any, path: str, where: str) -> Any:
    if isinstance(schema, Table):
        return _table(schema, value, path, where)
    if isinstance(schema, Tables):
        if schema.array:
            if not isinstance(value, list):
                raise SettingsError(f"{where}: `{path}` must be an array of tables ([[{path}]])")
            return tuple(_table(schema.each, v, f"{path}[{i}]", where) for i, v in enumerate(value))
        if not isinstance(value, dict):
            raise SettingsError(f"{where}: [{path}] must be a table of tables")
        return {name: _table(schema.each, v, f"{path}.{name}", where) for name, v in value.items()}
    if not schema.accepts(value):
        raise SettingsError(f"{where}: `{path}` = {_got(value)}: expected {schema.expected}")
    return schema.normal(value)


def _unknown(path: str, key: str, table: Table, value: Any) -> str:
    kind = "table" if isinstance(value, dict) else "key"
    shown = f"[{path}]" if kind == "table" else f"`{path}`"
    import difflib  # only for a message: its import is not paid by every start

    known = sorted(table.keys)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"unknown {kind} {shown}{hint} (known here: {', '.join(known)})"


def _shown(path: str) -> str:
    return f"[{path}]" if path else "the file"


def _got(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unique_names(formats: tuple[dict[str, Any], ...], where: str) -> None:
    """Each user format has its own name (that it is not a built-in format's name is checked
    with the declarations, `genledger.parse.declarations.user_declaration`)."""
    seen: set[str] = set()
    for index, table in enumerate(formats):
        name = table["name"]
        if name in seen:
            raise SettingsError(f"{where}: `formats[{index}].name` = {name!r} is declared twice")
        seen.add(name)
