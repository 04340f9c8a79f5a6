"""The settings of genledger.toml: every table and key it may hold, each key's default, type
and range, stated once.

The settings tables are dataclasses whose fields carry their schema (`setting(default, kind)`),
so a key, its default (docs/operations.md's table is checked against them) and what it accepts
cannot drift apart; `SCHEMA` is derived from them. `validate` checks a parsed file against it
and returns the values normalised (lists as tuples, numbers as floats where a float is meant);
`genledger.config` builds its `Config` from them. Anything else is an error naming the file,
the key and what was expected: an unknown key or table anywhere (a typo such as `[tokenised]`
or `stats_pth` would otherwise be ignored), a value of the wrong type, a number out of range
(`retries = -5` sent no alert ever, `nan` is not a time), two user formats of one name (one
named like a built-in format is refused where the declarations are read,
`genledger.parse.declarations`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from genledger.parse.declarations import USER_KEYS
from genledger.parse.paths import PathError, parse_path

MAX_LINE_BYTES = 64 << 20  # the default cap on a line's length (docs/tailing.md)


class ConfigError(ValueError):
    """The configuration file or a value in it is unusable; the message names it."""


class SettingsError(ConfigError):
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


def number(minimum: float, above: bool = False, maximum: float | None = None) -> Value:
    """A finite number >= `minimum` (> with `above`) and <= `maximum`, as a float."""
    sign = ">" if above else ">="
    words = f"a number {sign} {minimum:g}" + (f" and <= {maximum:g}" if maximum is not None else "")
    return Value(
        words,
        lambda v: (
            _number(v)
            and (v > minimum if above else v >= minimum)
            and (maximum is None or v <= maximum)
        ),
        float,
    )


def whole(minimum: int, maximum: int | None = None) -> Value:
    """A whole number in [minimum, maximum]."""
    words = f"a whole number >= {minimum}" + (f" and <= {maximum}" if maximum else "")
    return Value(words, lambda v: _whole(v) and v >= minimum and (maximum is None or v <= maximum))


TEXT = Value("a string", lambda v: isinstance(v, str))
NAME = Value("a non-empty string", lambda v: isinstance(v, str) and bool(v))
FLAG = Value("true or false", lambda v: isinstance(v, bool))


def _path_text(v: Any) -> bool:
    """A path the OS can take: text without a NUL byte, whose `~user` names a user."""
    if not isinstance(v, str) or "\0" in v:
        return False
    try:
        Path(v.strip()).expanduser()
    except (RuntimeError, KeyError, ValueError):
        return False
    return True


# a path (or a data root's URL); empty: none set here
PATH = Value("a string (a path: no NUL byte, `~user` of a user that exists)", _path_text)
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


def _dotted(v: Any) -> bool:
    """A plain dotted path (`id`, `metadata.request_id`): no `[]`, no `len()`."""
    if not isinstance(v, str) or not v.strip():
        return False
    try:
        path = parse_path(v.strip())
    except PathError:
        return False
    return not path.length and not any(each for _, each in path.steps)


DOTTED = Value("a plain dotted path (`id`, `metadata.request_id`)", _dotted, str.strip)


def one_of(*choices: str) -> Value:
    """One of a few strings."""
    return Value(" or ".join(repr(c) for c in choices), lambda v: v in choices)


@dataclass(frozen=True)
class Table:
    """A table with known keys; `required`: keys it must have."""

    keys: Mapping[str, Value | Table | Tables]
    required: tuple[str, ...] = ()

    @classmethod
    def of(cls, kind: type) -> Table:
        """The table of a settings dataclass: each field's name and schema (`setting`)."""
        return cls({f.name: f.metadata["value"] for f in fields(kind)})


@dataclass(frozen=True)
class Tables:
    """A table of tables named by the user (`[datasets."name"]`), or, with `array`, an array
    of tables (`[[formats]]`), each following `each`."""

    each: Table
    array: bool = False


def setting(default: Any, value: Value) -> Any:
    """A settings field: its default and what genledger.toml may set it to."""
    return field(default=default, metadata={"value": value})


FORMS = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet")  # plain, gzip, zstd, Parquet


def _forms(stem: str) -> tuple[str, ...]:
    return tuple(stem + form for form in FORMS)


@dataclass(frozen=True)
class FilePatterns:
    """`[files]`: glob patterns (matched against file names, at any depth in a dataset
    folder) per file role and for batch status objects, names to ignore, how long a sealed
    file must be unchanged before an early end of its stream is an error, the longest line
    kept, and how long a refresh waits for another one's lock."""

    responses: tuple[str, ...] = setting(_forms("raw_responses*"), GLOBS)
    tokenized: tuple[str, ...] = setting(_forms("tokenized_data*"), GLOBS)
    prompts: tuple[str, ...] = setting(_forms("prompts*"), GLOBS)
    # a batch's status object beside its output (OpenAI's Batch, Anthropic's Message Batch),
    # read as the provider's own books (genledger.ledger.provider), never as records
    batch_status: tuple[str, ...] = setting(("batch_*.json", "*message_batch*.json"), GLOBS)
    # globs on the file name or its path under the data root
    ignore: tuple[str, ...] = setting((), GLOBS)
    settle_seconds: float = setting(300.0, number(0))  # gzip writers may not flush for minutes
    # a longer line is one malformed line, skipped without being kept
    max_line_bytes: int = setting(MAX_LINE_BYTES, whole(1))
    # how long a refresh waits for another refresh of a dataset (a cold scan of terabytes
    # takes minutes) before it stops with a line naming the holder
    lock_wait_seconds: float = setting(900.0, number(0))


EXECUTORS = ("in_process", "multiprocess")


@dataclass(frozen=True)
class DagsterSettings:
    """How the Dagster code location keeps the stats fresh."""

    schedule_cron: str = setting("*/5 * * * *", NAME)
    # the file sensor only stats files; part of the 30 s to an alert
    sensor_interval_s: int = setting(5, whole(1))
    owners: tuple[str, ...] = setting((), TEXTS)
    # or "multiprocess": the datasets of one run over every core
    executor: str = setting("in_process", one_of(*EXECUTORS))
    # How long a refresh run spends recording changed datasets that hold no news (news is
    # always recorded): bounds a refresh's Dagster events whatever the number of datasets.
    record_seconds: float = setting(3.0, number(0))
    # Finished runs older than this are deleted with their events (0: keep every run).
    keep_runs_days: float = setting(2.0, number(0))

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"dagster.executor = {self.executor!r}: use {' or '.join(EXECUTORS)}")
        for name in ("record_seconds", "keep_runs_days"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(f"dagster.{name} = {value!r}: use a number >= 0")


@dataclass(frozen=True)
class NotifySettings:
    """What counts as news and where it goes (secrets come from the environment)."""

    stall_minutes: float = setting(30.0, number(0, above=True))
    worse_factor: float = setting(2.0, number(1))
    reminder_minutes: float = setting(0.0, number(0))  # 0: no reminders for an unchanged failure
    retries: int = setting(3, whole(0, 100))  # below 0 no alert would ever be sent
    backoff_s: float = setting(0.5, number(0))
    email_to: tuple[str, ...] = setting((), GLOBS)
    email_from: str = setting("genledger@localhost", NAME)
    log_path: str | None = setting(None, NAME)
    min_severity: str = setting("warn", one_of("warn", "error"))  # "error": WARN-only is no news
    # first tick: runs finished this recently still count
    lookback_minutes: float = setting(60.0, number(0))


@dataclass(frozen=True)
class UserPrice:
    """`[prices."MODEL"]`: USD per million tokens (input, output, cache reads and writes);
    a part left out is priced as the input (cache reads and writes) it belongs to."""

    input: float | None = setting(None, number(0))
    output: float | None = setting(None, number(0))
    cache_read: float | None = setting(None, number(0))
    cache_write: float | None = setting(None, number(0))


PRICE_KEYS = tuple(f.name for f in fields(UserPrice))


@dataclass(frozen=True)
class FleetSettings:
    """`[fleet]`: a self-hosted fleet's price (USD per GPU-hour) and size."""

    # none: self-hosted records are unpriced
    gpu_hour_usd: float | None = setting(None, number(0))
    gpus: int = setting(1, whole(1))


@dataclass(frozen=True)
class BudgetSettings:
    """`[budget]`: what the whole run may cost (per dataset: `[datasets."X"] budget_usd`)."""

    run_usd: float | None = setting(None, number(0, above=True))


@dataclass(frozen=True)
class HealthSettings:
    """`[health]`: when the run-health rules warn (docs/stats-json.md), and the window size."""

    # truncated_outputs: share of records cut at the limit
    truncated_share: float = setting(0.05, number(0, maximum=1))
    # duplicate_outputs: share of records repeating an answer
    duplicate_share: float = setting(0.01, number(0, maximum=1))
    # records in the first and the latest window (output_drift)
    window: int = setting(1000, whole(10, 100_000))


@dataclass(frozen=True)
class TokenizedSettings:
    """`[tokenized]`: the longest sample the trainer takes (`over_length`; none: never)."""

    max_seq_len: int | None = setting(None, whole(1))


@dataclass(frozen=True)
class MetricsSettings:
    """`[metrics]`: where the OpenMetrics text of the stats goes, and how many model labels
    a dataset keeps before the rest fold into `other`."""

    path: str | None = setting(None, PATH)  # none: no metrics file (GENLEDGER_METRICS_PATH)
    max_models: int = setting(20, whole(1, 10_000))


@dataclass(frozen=True)
class EngineSettings:
    """`[engine]`: where a refresh scans its files: this machine's cores (the default), or a
    Ray cluster (`ray`: its address, `auto` for the cluster this machine is a node of)."""

    ray: str | None = setting(None, NAME)


# The settings tables of genledger.toml that are one dataclass each (docs/operations.md's
# settings table lists each field with its default: tests/test_docs.py).
SECTIONS: dict[str, type] = {
    "files": FilePatterns,
    "dagster": DagsterSettings,
    "notify": NotifySettings,
    "fleet": FleetSettings,
    "budget": BudgetSettings,
    "health": HealthSettings,
    "tokenized": TokenizedSettings,
    "metrics": MetricsSettings,
    "engine": EngineSettings,
}
DATASET = Table(
    {
        "n_prompts": whole(0),
        "budget_usd": number(0, above=True),
        "model": NAME,  # the model of its records that name none
        "provider": NAME,  # who priced its records, whatever their format says
        "prompt_key": DOTTED,  # the prompts' id (else custom_id, key, id)
        "response_key": DOTTED,  # the responses' id (else the record id)
    }
)
DETECT = Value(
    "a condition or a non-empty list of them",
    lambda v: isinstance(v, str) or (bool(v) and TEXTS.accepts(v)),
)
FORMAT = Table(
    {key: TEXT for key in USER_KEYS}
    | {"name": NAME, "detect": DETECT, "float_counts": FLAG, "batch": FLAG},
    required=("name",),  # and `completion_tokens` or `extends` (genledger.parse.declarations)
)
SCHEMA = Table(
    {
        "data_root": PATH,
        "stats_path": PATH,
        "state_dir": PATH,
        **{section: Table.of(kind) for section, kind in SECTIONS.items()},
        "datasets": Tables(DATASET),
        "prices": Tables(Table.of(UserPrice)),
        "formats": Tables(FORMAT, array=True),
    }
)


def validate(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`raw` (a parsed genledger.toml) checked against `SCHEMA`, its values normalised; raises
    `SettingsError` naming `where`, the key and what was expected."""
    values = _table(SCHEMA, raw, "", where)
    _unique_names(values.get("formats", ()), where)
    for model, price in values.get("prices", {}).items():
        if "input" not in price and "output" not in price:
            raise SettingsError(
                f'{where}: prices."{model}": give `input` or `output` (USD per million tokens)'
            )
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
        # a name the user chose is quoted as TOML would (`[datasets."A B"]`)
        return {n: _table(schema.each, v, f'{path}."{n}"', where) for n, v in value.items()}
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
