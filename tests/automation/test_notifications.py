"""The notification sensors against a real Dagster instance and real servers on 127.0.0.1.

A tiny in-test asset with two check specs emits failing or passing check results (with the
shared metadata contract) as a plan file says; it is materialized into an `instance_for_test`
(SQLite storage) and the sensors are evaluated against that instance.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import dagster as dg
import pytest

from automation.notifications import (
    BUDGET_SENSOR,
    CHECK_SENSOR,
    STALL_SENSOR,
    build_notification_sensors,
)
from genledger.config import Config, NotifySettings
from genledger.refresh.collect import refresh

KEY = dg.AssetKey(["demo_ds", "raw_responses"])
DATASET = "demo ds"
TOKENS = "responses_have_valid_token_counts"
LEAKS = "no_think_tag_leaks"
EXAMPLES = ["raw_responses.jsonl:3 no completion-token field", "raw_responses.jsonl:9 no field"]


def _load_servers() -> ModuleType:
    path = Path(__file__).parents[1] / "genledger" / "notify" / "servers.py"
    spec = importlib.util.spec_from_file_location("genledger_test_servers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


servers = _load_servers()


def checked_asset(plan: Path) -> dg.AssetsDefinition:
    """An asset whose checks fail with the counts in `plan` ({check: count}; 0 = pass)."""

    @dg.asset(
        key=KEY,
        check_specs=[dg.AssetCheckSpec(name, asset=KEY) for name in (TOKENS, LEAKS)],
    )
    def responses() -> dg.MaterializeResult:
        counts = json.loads(plan.read_text())
        return dg.MaterializeResult(
            check_results=[_result(name, counts.get(name, 0)) for name in (TOKENS, LEAKS)]
        )

    return responses


def _result(check: str, count: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=check,
        passed=count == 0,
        severity=dg.AssetCheckSeverity.ERROR if check == TOKENS else dg.AssetCheckSeverity.WARN,
        metadata={
            "dataset": DATASET,
            "failure_count": count,
            "rows_checked": 40,
            "rules": dg.MetadataValue.json({check: count}),
            "examples": dg.MetadataValue.md("\n".join(EXAMPLES[: min(count, 5)])),
        },
    )


class Harness:
    """Materialize the asset with a plan, then tick a sensor, keeping its cursor like the daemon."""

    def __init__(self, instance: dg.DagsterInstance, config: Config, tmp: Path) -> None:
        self.instance = instance
        self.sensors = {s.name: s for s in build_notification_sensors(config)}
        self.plan = tmp / "plan.json"
        self.asset = checked_asset(self.plan)
        self.cursors: dict[str, str | None] = {}

    def run(self, **counts: int) -> str:
        """One materialization with these failure counts; returns the run id."""
        self.plan.write_text(json.dumps(counts))
        result = dg.materialize([self.asset], instance=self.instance)
        assert result.success
        return result.run_id

    def tick(self, name: str = CHECK_SENSOR) -> str:
        """Evaluate a sensor once with its saved cursor; returns its skip message."""
        context = dg.build_sensor_context(instance=self.instance, cursor=self.cursors.get(name))
        data = self.sensors[name].evaluate_tick(context)
        self.cursors[name] = data.cursor
        return str(data.skip_message)


@pytest.fixture
def channels(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Webhook, Slack-shaped and SMTP servers on 127.0.0.1, wired in through the environment."""
    http = servers.start("http", tmp_path, {})
    smtp = servers.start("smtp", tmp_path, None)
    env = {
        "GENLEDGER_WEBHOOK_URL": http.url("/hook"),
        "GENLEDGER_SLACK_WEBHOOK_URL": http.url("/slack"),
        "GENLEDGER_SMTP_HOST": "127.0.0.1",
        "GENLEDGER_SMTP_PORT": str(smtp.port),
        "GENLEDGER_SMTP_TLS": "none",
        "GENLEDGER_EMAIL_TO": "ops@example.com",
        "GENLEDGER_UI_URL": "http://127.0.0.1:3000",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield {"http": http, "smtp": smtp}
    servers.stop(http)
    servers.stop(smtp)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """A config whose state dir (and so the notification log) is under tmp_path."""
    return Config(
        state_dir=tmp_path / "state",
        stats_path=tmp_path / "stats.json",
        notify=NotifySettings(backoff_s=0.01),
    )


def delivered(channels: dict[str, Any]) -> dict[str, list[str]]:
    """The text of every accepted message, per channel."""
    http, smtp = channels["http"], channels["smtp"]
    return {
        "webhook": [json.dumps(b) for b in http.accepted("/hook")],
        "slack": [b["text"] for b in http.accepted("/slack")],
        "email": [m["data"].replace("=\r\n", "") for m in smtp.received()],
    }


def test_a_failing_check_is_sent_once_per_channel_then_nothing_then_resolved(
    channels: dict[str, Any], config: Config, tmp_path: Path
) -> None:
    with dg.instance_for_test() as instance:
        harness = Harness(instance, config, tmp_path)
        harness.tick()  # the sensor starts before any run
        run_id = harness.run(**{TOKENS: 7})
        harness.tick()
        first = delivered(channels)
        assert {name: len(texts) for name, texts in first.items()} == {
            "webhook": 1,
            "slack": 1,
            "email": 1,
        }
        for text in (t for texts in first.values() for t in texts):
            for part in (DATASET, TOKENS, EXAMPLES[0]):
                assert part in text
            assert LEAKS not in text  # it passed: not news
        for text in (first["slack"][0], first["email"][0]):
            assert "7 of 40 rows" in text
        [body] = channels["http"].accepted("/hook")
        assert (body["run_id"], body["datasets"], body["failure_count"]) == (run_id, [DATASET], 7)
        assert body["alerts"][0]["asset_key"] == "demo_ds/raw_responses"
        assert body["alerts"][0]["link"].startswith("http://127.0.0.1:3000/assets/demo_ds/")

        harness.run(**{TOKENS: 7})
        harness.tick()
        assert delivered(channels) == first

        harness.run()
        harness.tick()
        after = delivered(channels)
        assert {name: len(texts) for name, texts in after.items()} == {
            "webhook": 2,
            "slack": 2,
            "email": 2,
        }
        assert all("resolved" in texts[-1] for texts in after.values())
        assert channels["http"].accepted("/hook")[-1]["status"] == "resolved"


def test_all_failing_checks_of_one_run_go_into_one_message_per_channel(
    channels: dict[str, Any], config: Config, tmp_path: Path
) -> None:
    with dg.instance_for_test() as instance:
        harness = Harness(instance, config, tmp_path)
        harness.tick()
        harness.run(**{TOKENS: 3, LEAKS: 2})
        harness.tick()
        [body] = channels["http"].accepted("/hook")
        assert {(a["check"], a["severity"], a["failure_count"]) for a in body["alerts"]} == {
            (TOKENS, "error", 3),
            (LEAKS, "warn", 2),
        }
        assert len(channels["http"].accepted("/slack")) == len(channels["smtp"].received()) == 1


def test_a_run_that_finished_before_the_first_tick_is_still_reported_and_restarts_do_not_repeat(
    channels: dict[str, Any], config: Config, tmp_path: Path
) -> None:
    with dg.instance_for_test() as instance:
        harness = Harness(instance, config, tmp_path)
        harness.run(**{TOKENS: 4})
        harness.tick()
        assert len(channels["http"].accepted("/hook")) == 1
        restarted = Harness(instance, config, tmp_path)
        restarted.cursors = dict(harness.cursors)
        restarted.tick()
        restarted.tick()
        assert len(channels["http"].accepted("/hook")) == 1


def test_every_notification_and_delivery_lands_in_the_local_log_without_secrets(
    channels: dict[str, Any], config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENLEDGER_SMTP_PASSWORD", "sm7p-pa55word")
    monkeypatch.setenv("GENLEDGER_SMTP_USER", "mailer")
    monkeypatch.setenv("GENLEDGER_WEBHOOK_URL", channels["http"].url("/hook?token=w3bh00k-t0ken"))
    with dg.instance_for_test() as instance:
        harness = Harness(instance, config, tmp_path)
        harness.run(**{TOKENS: 5})
        harness.tick()
    log = (config.resolved_state_dir() / "notifications.jsonl").read_text()
    entries = [json.loads(line) for line in log.splitlines()]
    assert entries[0]["event"] == "notification"
    assert {e["channel"] for e in entries if e["event"] == "delivery"} >= {
        "log",
        "webhook",
        "slack",
    }
    assert EXAMPLES[0] in log
    assert "sm7p-pa55word" not in log and "w3bh00k-t0ken" not in log


def test_the_stall_sensor_alerts_once_for_an_unfinished_dataset_and_never_a_finished_one(
    channels: dict[str, Any], sample_root: Path, tmp_path: Path
) -> None:
    base = Config(data_root=sample_root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    done = refresh(base).stats["datasets"]["clean_chat_then_flat"]["n_done"]
    config = replace(
        base,
        n_prompts={"clean_chat_then_flat": done},
        notify=NotifySettings(stall_minutes=0.2 / 60, backoff_s=0.01),
    )
    stats = refresh(config).stats
    unfinished = sorted(
        name
        for name, block in stats["datasets"].items()
        if block["kind"] == "inference" and block["n_done"] < (block["n_prompts"] or 0)
    )
    with dg.instance_for_test() as instance:
        harness = Harness(instance, config, tmp_path)
        harness.tick(STALL_SENSOR)
        time.sleep(0.3)
        harness.tick(STALL_SENSOR)
        time.sleep(0.3)
        harness.tick(STALL_SENSOR)
    [body] = channels["http"].accepted("/hook")
    assert sorted(body["datasets"]) == unfinished
    assert "clean_chat_then_flat" not in json.dumps(body)
    assert {a["kind"] for a in body["alerts"]} == {"stalled"}


def test_with_the_real_assets_posts_name_every_error_dataset_and_no_clean_one(
    channels: dict[str, Any], sample_root: Path, tmp_path: Path
) -> None:
    definitions = pytest.importorskip("definitions")
    spec = pytest.importorskip("assets.spec")
    config = Config(
        data_root=sample_root,
        stats_path=tmp_path / "stats.json",
        state_dir=tmp_path / "state",
        notify=NotifySettings(backoff_s=0.01),
    )
    defs = definitions.build_defs(spec.load_location(config, env={}))
    sensor = defs.resolve_sensor_def(CHECK_SENSOR)
    with dg.instance_for_test() as instance:
        job = defs.resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance, raise_on_error=False).success
        context = dg.build_sensor_context(instance=instance)
        sensor.evaluate_tick(context)
    stats = json.loads((tmp_path / "stats.json").read_text())
    errors = {
        name
        for name, block in stats["datasets"].items()
        if any(f["severity"] == "error" for f in block["quality"]["failures"])
    }
    clean = {n for n, b in stats["datasets"].items() if b["quality"]["status"] == "ok"}
    assert errors and clean
    named = {d for body in channels["http"].accepted("/hook") for d in body["datasets"]}
    assert errors <= named
    assert not clean & named
    if dump := os.environ.get("GENLEDGER_TEST_DUMP"):
        Path(dump).write_text(json.dumps(channels["http"].accepted("/hook"), indent=2))


def test_the_budget_sensor_warns_on_the_projection_then_errs_on_the_spending_once_each(
    channels: dict[str, Any], tmp_path: Path
) -> None:
    root = tmp_path / "data" / "ds"
    root.mkdir(parents=True)
    (root / "prompts.jsonl").write_text("".join(f'{{"p": {i}}}\n' for i in range(10)))
    record = {
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20_000, "output_tokens": 4_000},
    }

    def write(n: int) -> dict[str, Any]:
        with (root / "raw_responses.jsonl").open("a") as out:
            out.write(
                "".join(json.dumps({**record, "id": f"r{time.time_ns()}"}) + "\n" for _ in range(n))
            )
        return refresh(config).stats

    config = Config(
        data_root=tmp_path / "data",
        stats_path=tmp_path / "s.json",
        state_dir=tmp_path / "st",
        notify=NotifySettings(backoff_s=0.01),
    )
    per_record = write(2)["datasets"]["ds"]["cost_usd"] / 2
    config = replace(config, budgets={"ds": per_record * 5.5})
    with dg.instance_for_test() as instance:
        harness = Harness(instance, config, tmp_path)
        harness.tick(BUDGET_SENSOR)
        harness.tick(BUDGET_SENSOR)
        write(4)
        harness.tick(BUDGET_SENSOR)
        harness.tick(BUDGET_SENSOR)
    bodies = channels["http"].accepted("/hook")
    kinds = [(a["kind"], a["severity"]) for b in bodies for a in b["alerts"]]
    assert kinds == [("projected_over_budget", "warn"), ("over_budget", "error")]
    assert all(b["datasets"] == ["ds"] for b in bodies)
    assert "budget" in bodies[-1]["text"] and "$" in bodies[-1]["text"]
