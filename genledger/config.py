"""Configuration: one optional TOML file plus environment variables (paths and secrets).

Precedence: command-line flags > environment variables > config file > defaults. Secrets
(webhook URLs, SMTP passwords) are read from the environment only, never from this file.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ENV_CONFIG = "GENLEDGER_CONFIG"
ENV_DATA_ROOT = "GENLEDGER_DATA_ROOT"
ENV_STATS_PATH = "GENLEDGER_STATS_PATH"
ENV_STATE_DIR = "GENLEDGER_STATE_DIR"
DEFAULT_CONFIG_NAME = "genledger.toml"


class ConfigError(ValueError):
    """The configuration file or a value in it is unusable; the message names it."""


@dataclass(frozen=True)
class FilePatterns:
    """Glob patterns (matched against file names in a dataset folder) per file role."""

    responses: tuple[str, ...] = ("raw_responses*.jsonl",)
    tokenized: tuple[str, ...] = ("tokenized_data*.jsonl",)
    prompts: tuple[str, ...] = ("prompts.jsonl",)


EXECUTORS = ("in_process", "multiprocess")


@dataclass(frozen=True)
class DagsterSettings:
    """How the Dagster code location keeps the stats fresh."""

    schedule_cron: str = "*/5 * * * *"
    sensor_interval_s: int = 5  # the file sensor only stats files; part of the 30 s to an alert
    owners: tuple[str, ...] = ()
    executor: str = "in_process"  # or "multiprocess": the datasets of one run over every core

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"dagster.executor = {self.executor!r}: use {' or '.join(EXECUTORS)}")


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
class Config:
    """Everything genledger needs to know about one run."""

    data_root: Path | None = None
    stats_path: Path | None = None
    state_dir: Path | None = None
    patterns: FilePatterns = field(default_factory=FilePatterns)
    n_prompts: dict[str, int] = field(default_factory=dict)
    dagster: DagsterSettings = field(default_factory=DagsterSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    source: Path | None = None  # the config file read, if any

    def with_paths(self, **paths: Path | None) -> Config:
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


def _abs(path: Path | None) -> str:
    return str(path.resolve()) if path is not None else ""


def load_config(path: Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the config file (explicit, `$GENLEDGER_CONFIG`, or ./genledger.toml) and env."""
    env = dict(os.environ) if env is None else env
    file = path or (Path(env[ENV_CONFIG]) if env.get(ENV_CONFIG) else None)
    if file is None and Path(DEFAULT_CONFIG_NAME).is_file():
        file = Path(DEFAULT_CONFIG_NAME)
    raw: dict[str, Any] = _read_toml(file) if file is not None else {}
    config = _from_dict(raw, file)
    return config.with_paths(
        data_root=_env_path(env, ENV_DATA_ROOT),
        stats_path=_env_path(env, ENV_STATS_PATH),
        state_dir=_env_path(env, ENV_STATE_DIR),
    )


def _env_path(env: dict[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


def _read_toml(file: Path) -> dict[str, Any]:
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
    patterns = FilePatterns(
        **{
            role: _strings(files[role], f"{where}: files.{role}")
            for role in ("responses", "tokenized", "prompts")
            if role in files
        }
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
    return Config(
        data_root=_path(raw.get("data_root")),
        stats_path=_path(raw.get("stats_path")),
        state_dir=_path(raw.get("state_dir")),
        patterns=patterns,
        n_prompts=n_prompts,
        dagster=dagster,
        notify=notify,
        source=source,
    )


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
