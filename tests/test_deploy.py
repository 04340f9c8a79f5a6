"""deploy/: the production instance and workspace files are valid and say what the docs say."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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


# PromQL's keywords (functions are told by the parenthesis after them).
PROMQL_WORDS = {"by", "without", "and", "or", "unless", "on", "ignoring", "group_left",
                "group_right", "offset", "bool"}  # fmt: skip
IDENTIFIER = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\(?)")


def _metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not a function, a
    keyword, a label list (`by (...)`), a label matcher, a string, a range or the label
    argument of Grafana's `label_values(metric, label)`."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"label_values\(\s*([^,()]+),[^)]*\)", r"\1", text)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", "", text)
    names = {m.group(1) for m in IDENTIFIER.finditer(text) if not m.group(2)}  # not a call
    return {n for n in names if n not in PROMQL_WORDS}


def _panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every panel, those inside a row too."""
    return [p for panel in panels for p in (panel, *_panels(panel.get("panels", [])))]


def _queries(dashboard: dict[str, Any]) -> list[str]:
    panels = _panels(dashboard["panels"])
    exprs = [t["expr"] for panel in panels for t in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            exprs.append(variable["query"]["query"])
    return exprs


def test_the_grafana_dashboard_queries_only_metrics_genledger_writes() -> None:
    from genledger.ledger.metrics import family_names

    dashboard = json.loads((DEPLOY / "grafana" / "genledger.json").read_text())
    assert dashboard["title"] and dashboard["uid"] and dashboard["panels"]
    exprs = _queries(dashboard)
    assert all(_metric_names(e) for e in exprs), "a query names no metric"
    named = set().union(*(_metric_names(e) for e in exprs))
    drawn = [p for p in _panels(dashboard["panels"]) if p["type"] != "row"]
    assert all(p.get("targets") for p in drawn), "a panel has no query"
    assert named <= set(family_names()), f"not written by genledger: {named - set(family_names())}"
    shown = {"genledger_progress_ratio", "genledger_output_tokens_per_second",
             "genledger_eta_seconds", "genledger_check_failures", "genledger_cost_usd",
             "genledger_health_share"}  # fmt: skip
    assert shown <= named, f"the dashboard leaves out {shown - named}"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"


def test_the_metric_name_parser_finds_what_a_query_reads() -> None:
    expr = 'sum by (model) (gen_ai_usage_output_tokens{dataset=~"$dataset"}) / time()'
    assert _metric_names(expr) == {"gen_ai_usage_output_tokens"}
    assert _metric_names("label_values(genledger_records_done, dataset)") == {
        "genledger_records_done"
    }
    assert _metric_names("sum without (model) (rate(gen_ai_x[5m])) > bool 0") == {"gen_ai_x"}
