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
    # dagster-postgres's own storage, its URL read from the environment when the instance starts.
    assert config["storage"]["postgres"]["postgres_url"] == {"env": "DAGSTER_PG_URL"}
    assert config["run_monitoring"]["enabled"] is True


def test_a_plain_postgres_url_is_reached_through_psycopg2() -> None:
    # SQLAlchemy 2.1 maps the plain scheme to psycopg 3, whose connections dagster-postgres's
    # SQL closes: the pin in pyproject.toml keeps the plain DAGSTER_PG_URL on psycopg2.
    from sqlalchemy.engine import make_url

    dialect = make_url("postgresql://u:p@127.0.0.1:5432/dagster").get_dialect()
    assert dialect.driver == "psycopg2"


def test_the_concurrency_settings_are_the_projects() -> None:
    deploy = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    project = yaml.safe_load(PROJECT_YAML.read_text())
    assert deploy["concurrency"] == project["concurrency"]


def test_the_workspaces_load_one_grpc_code_server() -> None:
    for name in ("workspace.yaml", "compose-workspace.yaml"):
        (entry,) = yaml.safe_load((DEPLOY / name).read_text())["load_from"]
        server = entry["grpc_server"]
        assert server["port"] == 4000 and server["location_name"] == "definitions", name
