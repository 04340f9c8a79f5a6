"""Configuration: one optional TOML file plus environment variables (paths and secrets).

Precedence: command-line flags > environment variables > config file > defaults. Secrets
(webhook URLs, SMTP passwords) are read from the environment only, never from this file.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from genledger.parse.declarations import Declaration, FormatSet, user_declarations
from genledger.parse.paths import PathError

ENV_CONFIG = "GENLEDGER_CONFIG"
ENV_DATA_ROOT = "GENLEDGER_DATA_ROOT"
ENV_STATS_PATH = "GENLEDGER_STATS_PATH"
ENV_STATE_DIR = "GENLEDGER_STATE_DIR"
# How an sftp:// root is reached (read when a connection is made: genledger.tail.remote)
ENV_SSH_KEY = "GENLEDGER_SSH_KEY"
ENV_SSH_KNOWN_HOSTS = "GENLEDGER_SSH_KNOWN_HOSTS"
ENV_SSH_CONFIG = "GENLEDGER_SSH_CONFIG"
ENV_SSH_TRANSPORT = "GENLEDGER_SSH_TRANSPORT"
DEFAULT_CONFIG_NAME = "genledger.toml"


class ConfigError(ValueError):
    """The configuration file or a value in it is unusable; the message names it."""


FORMS = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet")  # plain, gzip, zstd, Parquet


def _forms(stem: str) -> tuple[str, ...]:
    return tuple(stem + form for form in FORMS)


@dataclass(frozen=True)
class FilePatterns:
    """`[files]`: glob patterns (matched against file names, at any depth in a dataset
    folder) per file role, names to ignore, and how long a sealed file must be unchanged
    before an early end of its stream is an error."""

    responses: tuple[str, ...] = _forms("raw_responses*")
    tokenized: tuple[str, ...] = _forms("tokenized_data*")
    prompts: tuple[str, ...] = _forms("prompts*")
    ignore: tuple[str, ...] = ()  # globs on the file name or its path under the data root
    settle_seconds: float = 300.0  # gzip writers may not flush for minutes


EXECUTORS = ("in_process", "multiprocess")


@dataclass(frozen=True)
class DagsterSettings:
    """How the Dagster code location keeps the stats fresh."""

    schedule_cron: str = "*/5 * * * *"
    sensor_interval_s: int = 5  # the file sensor only stats files; part of the 30 s to an alert
    owners: tuple[str, ...] = ()
    executor: str = "in_process"  # or "multiprocess": the datasets of one run over every core
    # How long a stats_json run spends recording changed datasets that hold no news (news is
    # always recorded): bounds a refresh's Dagster events whatever the number of datasets.
    record_seconds: float = 3.0
    # Finished runs older than this are deleted with their events (0: keep every run).
    keep_runs_days: float = 2.0

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

    stall_minutes: float = 30.0
    worse_factor: float = 2.0
    reminder_minutes: float = 0.0  # 0: no reminders for an unchanged failure
    retries: int = 3
    backoff_s: float = 0.5
    email_to: tuple[str, ...] = ()
    email_from: str = "genledger@localhost"
    log_path: str | None = None
    min_severity: str = "warn"  # "error": WARN-only failures are not news
    lookback_minutes: float = 60.0  # first tick: runs finished this recently still count


PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


@dataclass(frozen=True)
class UserPrice:
    """`[prices."MODEL"]`: USD per million tokens (input, output, cache reads and writes);
    a part left out is priced as the input (cache reads and writes) it belongs to."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True)
class FleetSettings:
    """`[fleet]`: a self-hosted fleet's price (USD per GPU-hour) and size."""

    gpu_hour_usd: float | None = None  # none: self-hosted records are unpriced
    gpus: int = 1


@dataclass(frozen=True)
class BudgetSettings:
    """`[budget]`: what the whole run may cost (per dataset: `[datasets."X"] budget_usd`)."""

    run_usd: float | None = None


@dataclass(frozen=True)
class HealthSettings:
    """`[health]`: when the run-health rules warn (docs/stats-json.md), and the window size."""

    truncated_share: float = 0.05  # truncated_outputs: share of records cut at the limit
    duplicate_share: float = 0.01  # duplicate_outputs: share of records repeating an answer
    window: int = 1000  # records in the first and the latest window (output_drift)


@dataclass(frozen=True)
class DatasetKeys:
    """`[datasets."X"] prompt_key / response_key`: the paths of the id prompts and responses
    are joined on (None: the prompt's custom_id, key or id; the response's record id)."""

    prompt_key: str | None = None
    response_key: str | None = None


@dataclass(frozen=True)
class Switches:
    """How a refresh computes (never what): the speed levers and the rule evaluation.

    Every `GENLEDGER_*` switch is read here, once (`from_env`); code receives this object
    instead of reading the environment. Each choice gives the same numbers (tests prove it).
    """

    typed_shapes: bool = True  # GENLEDGER_FASTSHAPES=0: no typed msgspec shapes
    stand_ins: bool = True  # GENLEDGER_FASTPARSE=0: no raw-array stand-ins
    lift: bool = True  # GENLEDGER_LIFT=0: long id arrays decoded, not counted from their bytes
    audit: bool = False  # GENLEDGER_AUDIT=1: pandera re-checks every table the books count
    workers: int | None = None  # GENLEDGER_WORKERS=N: forked scan workers (None: the cores)

    @property
    def fast(self) -> bool:
        """Some fast decoder is on."""
        return self.typed_shapes or self.stand_ins or self.lift

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Switches:
        """The switches set in `env` (unset ones keep their defaults)."""
        if "GENLEDGER_RULES" in env:
            raise ConfigError("GENLEDGER_RULES is gone: GENLEDGER_AUDIT=1 turns the audit on")
        audit = env.get("GENLEDGER_AUDIT", "0").strip() or "0"
        if audit not in ("0", "1"):
            raise ConfigError("GENLEDGER_AUDIT must be 0 or 1")
        workers = env.get("GENLEDGER_WORKERS", "").strip()
        if workers and not workers.isdigit():
            raise ConfigError("GENLEDGER_WORKERS must be a whole number")
        return cls(
            typed_shapes=env.get("GENLEDGER_FASTSHAPES", "1") != "0",
            stand_ins=env.get("GENLEDGER_FASTPARSE", "1") != "0",
            lift=env.get("GENLEDGER_LIFT", "1") != "0",
            audit=audit == "1",
            workers=int(workers) if workers else None,
        )


@dataclass(frozen=True)
class Config:
    """Everything genledger needs to know about one run."""

    data_root: Path | str | None = None  # a folder, or a `sftp://` / `s3://` URL (text)
    stats_path: Path | None = None
    state_dir: Path | None = None
    patterns: FilePatterns = field(default_factory=FilePatterns)
    n_prompts: dict[str, int] = field(default_factory=dict)
    dagster: DagsterSettings = field(default_factory=DagsterSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    switches: Switches = field(default_factory=Switches)
    source: Path | None = None  # the config file read, if any
    # user-declared record formats (`[[formats]]`), tried before the built-in ones; tables
    # given as dicts are parsed into declarations here (a bad one raises ConfigError)
    formats: tuple[Declaration, ...] = ()
    prices: dict[str, UserPrice] = field(default_factory=dict)  # `[prices."MODEL"]`
    fleet: FleetSettings = field(default_factory=FleetSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    budgets: dict[str, float] = field(default_factory=dict)  # `[datasets."X"] budget_usd`
    models: dict[str, str] = field(default_factory=dict)  # `[datasets."X"] model`
    providers: dict[str, str] = field(default_factory=dict)  # `[datasets."X"] provider`
    health: HealthSettings = field(default_factory=HealthSettings)
    max_seq_len: int | None = None  # `[tokenized] max_seq_len`: over_length when set
    keys: dict[str, DatasetKeys] = field(default_factory=dict)  # join keys, by dataset

    def __post_init__(self) -> None:
        if any(not isinstance(f, Declaration) for f in self.formats):
            object.__setattr__(self, "formats", _declarations(self.formats, self.source))

    @cached_property
    def format_set(self) -> FormatSet:
        """The declarations records are read with: the user's, then the built-in ones."""
        return FormatSet(self.formats)

    def dataset_keys(self, dataset: str) -> DatasetKeys:
        """The join keys of one dataset (`[datasets."X"]`)."""
        return self.keys.get(dataset, NO_KEYS)

    def counting_settings(self) -> str:
        """A text that changes when a setting that changes a file's counts changes (kept in
        state records with the counting signature: a change reads every file again)."""
        keys = sorted((name, k.prompt_key, k.response_key) for name, k in self.keys.items())
        return repr((self.max_seq_len, self.health.window, keys))

    def with_paths(self, **paths: Path | str | None) -> Config:
        """A copy with the given paths set (None values are ignored)."""
        chosen: dict[str, Any] = {k: v for k, v in paths.items() if v is not None}
        return replace(self, **chosen)

    def resolved_state_dir(self) -> Path:
        """The state dir: configured, else one per (data root, stats path) under the cache."""
        if self.state_dir is not None:
            return self.state_dir
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        key = f"{_abs(self.data_root)}\0{_abs(self.stats_path)}".encode()
        return base / "genledger" / "state" / hashlib.sha1(key).hexdigest()[:16]


NO_KEYS = DatasetKeys()


def _declarations(tables: Any, source: Path | None) -> tuple[Declaration, ...]:
    """`[[formats]]` tables as declarations; a bad one raises `ConfigError` naming it."""
    where = f"config file {source}" if source is not None else "config"
    if not isinstance(tables, tuple | list) or not all(
        isinstance(t, dict | Declaration) for t in tables
    ):
        raise ConfigError(f"{where}: `formats` must be an array of tables ([[formats]])")
    try:
        parsed = user_declarations([t for t in tables if isinstance(t, dict)], where)
    except PathError as exc:
        raise ConfigError(str(exc)) from None
    given = iter(parsed)
    return tuple(t if isinstance(t, Declaration) else next(given) for t in tables)


def _abs(path: Path | str | None) -> str:
    if isinstance(path, str):
        return path  # a URL: already absolute
    return str(path.resolve()) if path is not None else ""


def load_config(path: Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the config file (explicit, `$GENLEDGER_CONFIG`, or ./genledger.toml) and env."""
    env = dict(os.environ) if env is None else env
    file = path or (Path(env[ENV_CONFIG]) if env.get(ENV_CONFIG) else None)
    if file is None and Path(DEFAULT_CONFIG_NAME).is_file():
        file = Path(DEFAULT_CONFIG_NAME)
    raw: dict[str, Any] = _read_toml(file) if file is not None else {}
    config = replace(_from_dict(raw, file), switches=Switches.from_env(env))
    return config.with_paths(
        data_root=_env_root(env),
        stats_path=_env_path(env, ENV_STATS_PATH),
        state_dir=_env_path(env, ENV_STATE_DIR),
    )


def _env_root(env: dict[str, str]) -> Path | str | None:
    value = env.get(ENV_DATA_ROOT, "").strip()
    return _root(value) if value else None


URL_SCHEMES = ("sftp://", "s3://")


def is_url(text: str | Path) -> bool:
    """A remote data root (`sftp://...`, `s3://...`) rather than a local path."""
    return isinstance(text, str) and text.startswith(URL_SCHEMES)


def root_arg(text: str) -> Path | str:
    """A data root as given on a command line or in the environment: a URL stays text (a
    `Path` would fold its `//`), anything else is a local path."""
    return text if is_url(text) else Path(text).expanduser()


def _root(value: str) -> Path | str:
    """A URL root stays text; a local one becomes a Path."""
    return root_arg(value)


def _nonempty(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _env_path(env: dict[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


def _read_toml(file: Path) -> dict[str, Any]:
    import tomllib  # only when a config file exists: 5 ms of every start otherwise

    try:
        with file.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from exc


def _from_dict(raw: dict[str, Any], source: Path | None) -> Config:
    where = f"config file {source}"
    files = raw.get("files", {})
    default = FilePatterns()

    def globs(role: str) -> tuple[str, ...]:
        value = files.get(role)
        if value is None:
            return tuple(getattr(default, role))
        return _strings(value, f"{where}: files.{role}")

    patterns = FilePatterns(
        responses=globs("responses"),
        tokenized=globs("tokenized"),
        prompts=globs("prompts"),
        ignore=globs("ignore"),
        settle_seconds=_settle(files, where, default.settle_seconds),
    )
    n_prompts: dict[str, int] = {}
    keys: dict[str, DatasetKeys] = {}
    for name, section in raw.get("datasets", {}).items():
        value = section.get("n_prompts") if isinstance(section, dict) else None
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where}: datasets.{name}.n_prompts must be an int >= 0")
            n_prompts[name] = value
        if isinstance(section, dict) and ("prompt_key" in section or "response_key" in section):
            keys[name] = _join_keys(section, f"{where}: datasets.{name}")
    budgets, models, providers = _dataset_costs(raw.get("datasets", {}), where)
    try:
        dagster = DagsterSettings(**_tuples(raw.get("dagster", {})))
        notify = NotifySettings(**_tuples(raw.get("notify", {})))
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return Config(
        health=_health(raw.get("health", {}), where),
        max_seq_len=_max_seq_len(raw.get("tokenized", {}), where),
        keys=keys,
        formats=_declarations(raw.get("formats", []), source),
        data_root=_root(raw["data_root"]) if _nonempty(raw.get("data_root")) else None,
        stats_path=_path(raw.get("stats_path")),
        state_dir=_path(raw.get("state_dir")),
        patterns=patterns,
        n_prompts=n_prompts,
        dagster=dagster,
        notify=notify,
        source=source,
        prices=_user_prices(raw.get("prices", {}), where),
        fleet=_fleet(raw.get("fleet", {}), where),
        budget=BudgetSettings(_money(raw.get("budget", {}), "run_usd", f"{where}: budget")),
        budgets=budgets,
        models=models,
        providers=providers,
    )


def _number(value: Any, where: str, positive: bool = False) -> float:
    """A finite number >= 0 (> 0 when `positive`), else ConfigError naming `where`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where} must be a number")
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{where} must be a number {'> 0' if positive else '>= 0'}")
    return float(value)


def _table(value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(known)})")
    return value


def _money(section: Any, key: str, where: str) -> float | None:
    """An optional amount of USD > 0 of a table (`[budget] run_usd`)."""
    found = _table(section, where, (key,)).get(key)
    return None if found is None else _number(found, f"{where}.{key}", positive=True)


def _user_prices(raw: Any, where: str) -> dict[str, UserPrice]:
    """`[prices."MODEL"]` tables: USD per million tokens, at least the input or the output."""
    if not isinstance(raw, dict):
        raise ConfigError(f'{where}: `prices` must be a table of models ([prices."MODEL"])')
    prices = {}
    for model, entry in raw.items():
        here = f'{where}: prices."{model}"'
        table = _table(entry, here, PRICE_KEYS)
        values = {k: _number(v, f"{here}.{k}") for k, v in table.items()}
        if "input" not in values and "output" not in values:
            raise ConfigError(f"{here}: give `input` or `output` (USD per million tokens)")
        prices[str(model)] = UserPrice(**values)
    return prices


def _fleet(raw: Any, where: str) -> FleetSettings:
    table = _table(raw, f"{where}: fleet", ("gpu_hour_usd", "gpus"))
    rate = table.get("gpu_hour_usd")
    gpus = table.get("gpus", 1)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ConfigError(f"{where}: fleet.gpus must be a whole number >= 1")
    return FleetSettings(
        None if rate is None else _number(rate, f"{where}: fleet.gpu_hour_usd"), gpus
    )


def _dataset_costs(raw: Any, where: str) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """`[datasets."X"] budget_usd`, `model` (the model of its records that name none) and
    `provider` (who priced its records, whatever their format says)."""
    budgets: dict[str, float] = {}
    models: dict[str, str] = {}
    providers: dict[str, str] = {}
    for name, section in (raw or {}).items():
        if not isinstance(section, dict):
            continue
        if section.get("budget_usd") is not None:
            budgets[name] = _number(
                section["budget_usd"], f"{where}: datasets.{name}.budget_usd", positive=True
            )
        for key, found in (("model", models), ("provider", providers)):
            value = section.get(key)
            if value is not None:
                if not isinstance(value, str) or not value:
                    raise ConfigError(f"{where}: datasets.{name}.{key} must be a non-empty string")
                found[name] = value
    return budgets, models, providers


def _health(section: Any, where: str) -> HealthSettings:
    """`[health]`: shares in [0, 1], a window of 10 to 100,000 records."""
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: [health] must be a table")
    unknown = sorted(set(section) - {"truncated_share", "duplicate_share", "window"})
    if unknown:
        raise ConfigError(
            f"{where}: health.{unknown[0]} is no setting "
            "(known: truncated_share, duplicate_share, window)"
        )
    default = HealthSettings()
    shares = {}
    for key in ("truncated_share", "duplicate_share"):
        value = section.get(key, getattr(default, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(f"{where}: health.{key} must be a number from 0 to 1")
        shares[key] = float(value)
    window = section.get("window", default.window)
    if isinstance(window, bool) or not isinstance(window, int) or not 10 <= window <= 100_000:
        raise ConfigError(f"{where}: health.window must be a whole number from 10 to 100000")
    return HealthSettings(window=window, **shares)


def _max_seq_len(section: Any, where: str) -> int | None:
    """`[tokenized] max_seq_len`: a whole number >= 1, or unset."""
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: [tokenized] must be a table")
    unknown = sorted(set(section) - {"max_seq_len"})
    if unknown:
        raise ConfigError(f"{where}: tokenized.{unknown[0]} is no setting (known: max_seq_len)")
    value = section.get("max_seq_len")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: tokenized.max_seq_len must be a whole number >= 1")
    return value


def _join_keys(section: dict[str, Any], where: str) -> DatasetKeys:
    """`prompt_key` / `response_key`: dotted paths (`id`, `metadata.request_id`)."""
    from genledger.parse.paths import parse_path

    found: dict[str, str] = {}
    for key in ("prompt_key", "response_key"):
        value = section.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}.{key} must be a non-empty string (a dotted path)")
        try:
            path = parse_path(value.strip())
        except PathError as exc:
            raise ConfigError(f"{where}.{key} = {value!r}: {exc}") from None
        if path.length or any(each for _, each in path.steps):
            raise ConfigError(f"{where}.{key} = {value!r}: a plain dotted path (no [] or len)")
        found[key] = value.strip()
    return DatasetKeys(**found)


def _settle(files: dict[str, Any], where: str, default: float) -> float:
    value = files.get("settle_seconds", default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{where}: files.settle_seconds must be a number >= 0")
    return float(value)


def _path(value: Any) -> Path | None:
    return Path(value).expanduser() if isinstance(value, str) and value else None


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where} must be a string or a list of strings")


def _tuples(section: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}
