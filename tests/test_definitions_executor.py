"""The executor of the composition root comes from `[dagster] executor` in genledger.toml."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from assets.spec import Location
from definitions import build_defs
from genledger.config import ConfigError, DagsterSettings, load_config


def _location(tmp_path: Path, executor: str) -> Location:
    config = load_config(env={"GENLEDGER_CONFIG": str(_toml(tmp_path, executor))})
    return Location(config)


def _toml(tmp_path: Path, executor: str) -> Path:
    path = tmp_path / "genledger.toml"
    path.write_text(f'[dagster]\nexecutor = "{executor}"\n')
    return path


@pytest.mark.parametrize("executor", ["in_process", "multiprocess"])
def test_the_configured_executor_runs_the_jobs(tmp_path: Path, executor: str) -> None:
    defs = build_defs(_location(tmp_path, executor))
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.executor_def.name == executor


def test_in_process_is_the_default() -> None:
    assert DagsterSettings().executor == "in_process"


def test_an_unknown_executor_is_refused_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="executor") as info:
        _location(tmp_path, "k8s")
    assert "\n" not in str(info.value)


def test_settings_reject_an_unknown_executor() -> None:
    with pytest.raises(ConfigError):
        replace(DagsterSettings(), executor="threads")
