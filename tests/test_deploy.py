"""deploy/: the production instance and workspace files are valid and say what the docs say."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dagster._core.instance.config import dagster_instance_config

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
PROJECT_YAML = DEPLOY.parent / "dagster.yaml"


def test_the_instance_file_validates_and_stores_in_postgres_from_the_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql://u:p@127.0.0.1:5432/dagster")
    config, _ = dagster_instance_config(str(DEPLOY))
    storage = config["storage"]["custom"]
    assert (storage["module"], storage["class"]) == ("genledger_pg", "PostgresStorage")
    raw = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert raw["storage"]["custom"]["config"]["postgres_url"] == {"env": "DAGSTER_PG_URL"}
    assert config["run_monitoring"]["enabled"] is True


def test_the_concurrency_settings_are_the_projects() -> None:
    deploy = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    project = yaml.safe_load(PROJECT_YAML.read_text())
    assert deploy["concurrency"] == project["concurrency"]


def test_the_workspaces_load_one_grpc_code_server() -> None:
    for name in ("workspace.yaml", "compose-workspace.yaml"):
        (entry,) = yaml.safe_load((DEPLOY / name).read_text())["load_from"]
        server = entry["grpc_server"]
        assert server["port"] == 4000 and server["location_name"] == "definitions", name
