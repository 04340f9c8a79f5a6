"""Configuration: one optional TOML file plus environment variables (paths and secrets).

Precedence: command-line flags > environment variables > config file > defaults. Secrets
(webhook URLs, SMTP passwords) are read from the environment only, never from this file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ENV_CONFIG = "GENLEDGER_CONFIG"
ENV_DATA_ROOT = "GENLEDGER_DATA_ROOT"
ENV_STATS_PATH = "GENLEDGER_STATS_PATH"
ENV_STATE_DIR = "GENLEDGER_STATE_DIR"
DEFAULT_CONFIG_NAME = "genledger.toml"
RULE_EVALUATIONS = ("rows", "pandera")


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


@dataclass(frozen=True)
class Switches:
    """How a refresh computes (never what): the speed levers and the rule evaluation.

    Every `GENLEDGER_*` switch is read here, once (`from_env`); code receives this object
    instead of reading the environment. Each choice gives the same numbers (tests prove it).
    """

    typed_shapes: bool = True  # GENLEDGER_FASTSHAPES=0: no typed msgspec shapes
    stand_ins: bool = True  # GENLEDGER_FASTPARSE=0: no raw-array stand-ins
    rules: str = "rows"  # GENLEDGER_RULES=rows|pandera: how the rule conditions are evaluated
    workers: int | None = None  # GENLEDGER_WORKERS=N: forked scan workers (None: the cores)

    @property
    def fast(self) -> bool:
        """Some fast decoder is on."""
        return self.typed_shapes or self.stand_ins

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Switches:
        """The switches set in `env` (unset ones keep their defaults)."""
        rules = env.get("GENLEDGER_RULES", "rows").strip() or "rows"
        if rules not in RULE_EVALUATIONS:
            raise ConfigError(f"GENLEDGER_RULES must be one of {', '.join(RULE_EVALUATIONS)}")
        workers = env.get("GENLEDGER_WORKERS", "").strip()
        if workers and not workers.isdigit():
            raise ConfigError("GENLEDGER_WORKERS must be a whole number")
        return cls(
            typed_shapes=env.get("GENLEDGER_FASTSHAPES", "1") != "0",
            stand_ins=env.get("GENLEDGER_FASTPARSE", "1") != "0",
            rules=rules,
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
    # user-declared record formats (`[[formats]]` tables), tried first; read and checked by
    # `genledger.parse.declarations.declared` when a refresh starts
    formats: tuple[dict[str, Any], ...] = ()

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
    for name, section in raw.get("datasets", {}).items():
        value = section.get("n_prompts") if isinstance(section, dict) else None
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where}: datasets.{name}.n_prompts must be an int >= 0")
            n_prompts[name] = value
    try:
        dagster = DagsterSettings(**_tuples(raw.get("dagster", {})))
        notify = NotifySettings(**_tuples(raw.get("notify", {})))
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    formats = raw.get("formats", [])
    if not isinstance(formats, list) or not all(isinstance(f, dict) for f in formats):
        raise ConfigError(f"{where}: `formats` must be an array of tables ([[formats]])")
    return Config(
        formats=tuple(formats),
        data_root=_root(raw["data_root"]) if _nonempty(raw.get("data_root")) else None,
        stats_path=_path(raw.get("stats_path")),
        state_dir=_path(raw.get("state_dir")),
        patterns=patterns,
        n_prompts=n_prompts,
        dagster=dagster,
        notify=notify,
        source=source,
    )


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
