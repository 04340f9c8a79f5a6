"""Configuration: one optional TOML file plus environment variables (paths and secrets).

Precedence: command-line flags > environment variables > config file > defaults. Secrets
(webhook URLs, SMTP passwords) are read from the environment only, never from this file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from genledger.parse.declarations import Declaration, FormatSet, user_declarations
from genledger.parse.paths import PathError
from genledger.settings import (
    EXECUTORS,
    MAX_LINE_BYTES,
    PRICE_KEYS,
    BudgetSettings,
    ConfigError,
    DagsterSettings,
    EngineSettings,
    FilePatterns,
    FleetSettings,
    HealthSettings,
    MetricsSettings,
    NotifySettings,
    UserPrice,
    validate,
)

# The settings tables live with their schema (genledger.settings); they are named here too.
__all__ = [
    "EXECUTORS", "MAX_LINE_BYTES", "PRICE_KEYS", "BudgetSettings", "Config", "ConfigError",
    "DagsterSettings", "EngineSettings", "FilePatterns", "FleetSettings", "HealthSettings",
    "MetricsSettings",
    "NotifySettings", "Switches",
    "UserPrice", "load_config",
]  # fmt: skip

ENV_CONFIG = "GENLEDGER_CONFIG"
ENV_DATA_ROOT = "GENLEDGER_DATA_ROOT"
ENV_STATS_PATH = "GENLEDGER_STATS_PATH"
ENV_STATE_DIR = "GENLEDGER_STATE_DIR"
ENV_METRICS_PATH = "GENLEDGER_METRICS_PATH"
ENV_RAY_ADDRESS = "GENLEDGER_RAY_ADDRESS"  # `[engine] ray` (an address is no secret)
# How an sftp:// root is reached (read when a connection is made: genledger.tail.remote)
ENV_SSH_KEY = "GENLEDGER_SSH_KEY"
ENV_SSH_KNOWN_HOSTS = "GENLEDGER_SSH_KNOWN_HOSTS"
ENV_SSH_CONFIG = "GENLEDGER_SSH_CONFIG"
ENV_SSH_TRANSPORT = "GENLEDGER_SSH_TRANSPORT"
DEFAULT_CONFIG_NAME = "genledger.toml"
BOM = b"\xef\xbb\xbf"


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
    workers: int | None = None  # GENLEDGER_WORKERS=N: forked scan workers (None: idle cores)

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
    metrics_path: Path | None = None  # the OpenMetrics text of the stats (none: not written)
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
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    max_seq_len: int | None = None  # `[tokenized] max_seq_len`: over_length when set
    keys: dict[str, DatasetKeys] = field(default_factory=dict)  # join keys, by dataset
    engine: EngineSettings = field(default_factory=EngineSettings)  # `[engine]`: where scans run

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
    ray = env.get(ENV_RAY_ADDRESS, "").strip()
    if ray:
        config = replace(config, engine=EngineSettings(ray=ray))
    return config.with_paths(
        data_root=_env_root(env),
        stats_path=_env_path(env, ENV_STATS_PATH),
        state_dir=_env_path(env, ENV_STATE_DIR),
        metrics_path=_env_path(env, ENV_METRICS_PATH),
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
    `Path` would fold its `//`), anything else is a local path (never an empty string)."""
    if is_url(text):
        return text
    if not text.strip():
        raise ConfigError("the data root is an empty string")
    return Path(text).expanduser()


def _root(value: str) -> Path | str:
    """A URL root stays text; a local one becomes a Path."""
    return root_arg(value)


def _env_path(env: dict[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


def _read_toml(file: Path) -> dict[str, Any]:
    import tomllib  # only when a config file exists: 5 ms of every start otherwise

    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from exc
    if raw.startswith(BOM):
        raise ConfigError(
            f"config file {file} starts with a byte-order mark (BOM), which TOML does not "
            "allow: save it as UTF-8 without a BOM"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw[:64]
        detail = (
            "it looks like UTF-16"
            if utf16
            else f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        )
        raise ConfigError(f"config file {file} is not UTF-8 ({detail}): save it as UTF-8") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from exc


def _from_dict(raw: dict[str, Any], source: Path | None) -> Config:
    """A `Config` of a parsed genledger.toml, checked against the schema (`genledger.settings`)."""
    values = validate(raw, f"config file {source}")
    datasets = values.get("datasets", {})

    def per_dataset(key: str) -> dict[str, Any]:
        return {name: table[key] for name, table in datasets.items() if key in table}

    return Config(
        formats=_declarations(values.get("formats", ()), source),
        # a blank data_root is none set (the command line or the environment may give it)
        data_root=_root(values["data_root"]) if values.get("data_root", "").strip() else None,
        stats_path=_path(values.get("stats_path")),
        state_dir=_path(values.get("state_dir")),
        patterns=FilePatterns(**values.get("files", {})),
        n_prompts=per_dataset("n_prompts"),
        dagster=DagsterSettings(**values.get("dagster", {})),
        notify=NotifySettings(**values.get("notify", {})),
        health=HealthSettings(**values.get("health", {})),
        metrics=MetricsSettings(**values.get("metrics", {})),
        metrics_path=_path(values.get("metrics", {}).get("path")),
        engine=EngineSettings(**values.get("engine", {})),
        max_seq_len=values.get("tokenized", {}).get("max_seq_len"),
        keys={
            name: DatasetKeys(table.get("prompt_key"), table.get("response_key"))
            for name, table in datasets.items()
            if "prompt_key" in table or "response_key" in table
        },
        source=source,
        prices={model: UserPrice(**p) for model, p in values.get("prices", {}).items()},
        fleet=FleetSettings(**values.get("fleet", {})),
        budget=BudgetSettings(**values.get("budget", {})),
        budgets=per_dataset("budget_usd"),
        models=per_dataset("model"),
        providers=per_dataset("provider"),
    )


def _path(value: Any) -> Path | None:
    return Path(value).expanduser() if isinstance(value, str) and value else None
