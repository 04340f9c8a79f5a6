"""A daemon SIGKILLed while a delivery is in flight, then restarted: the channel that had
acknowledged the message gets nothing again, the one that never answered gets it once.

The tick runs in a child process (`tick_child.py`) against a Dagster instance on disk, with a
real webhook receiver and a Slack-shaped receiver that accepts and never answers; the child
is killed before its tick ends, so its cursor is never stored, as under a killed daemon.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from automation.notifications import CHECK_SENSOR

from .test_notifications import TOKENS, Harness, servers
from .tick_child import config_for

PROJECT = Path(__file__).resolve().parents[2]
WAIT_S = 180.0  # a loaded machine: the child imports Dagster first


def wait_until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S:.0f} s: {what}")
        time.sleep(0.1)


def test_a_daemon_killed_mid_delivery_repeats_nothing_a_channel_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = servers.start("http", tmp_path, {"/slack": ["silent"]})
    env = {
        "GENLEDGER_WEBHOOK_URL": http.url("/hook"),
        "GENLEDGER_SLACK_WEBHOOK_URL": http.url("/slack"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    config = config_for(state)
    try:
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            Harness(instance, config, tmp_path).run(**{TOKENS: 4})
        child = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("tick_child.py")), str(home), str(state)],
            cwd=PROJECT,
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
            start_new_session=True,
        )
        try:
            wait_until(lambda: len(http.accepted("/hook")) == 1, "the webhook acknowledged")
            in_flight = [r for r in http.received() if r["path"] == "/slack"]
            wait_until(lambda: [r for r in http.received() if r["path"] == "/slack"], "slack sent")
            assert not in_flight or in_flight[0]["status"] == "silent"
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            restarted = Harness(instance, config, tmp_path)  # no cursor: it was never stored
            restarted.tick(CHECK_SENSOR)
        assert len(http.accepted("/hook")) == 1
        [slack] = http.accepted("/slack")
        assert TOKENS in slack["text"]
    finally:
        servers.stop(http)


def test_an_outbox_that_cannot_be_written_still_delivers_and_keeps_the_rest_in_the_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = servers.start("http", tmp_path, {"/slack": [503] * 4})
    monkeypatch.setenv("GENLEDGER_WEBHOOK_URL", http.url("/hook"))
    monkeypatch.setenv("GENLEDGER_SLACK_WEBHOOK_URL", http.url("/slack"))
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the state dir should be")
    try:
        with dg.instance_for_test() as instance:
            harness = Harness(instance, config_for(blocked), tmp_path)
            harness.run(**{TOKENS: 4})
            said = harness.tick(CHECK_SENSOR)
            assert "1 message(s) awaiting redelivery" in said
            assert len(http.accepted("/hook")) == 1
            harness.tick(CHECK_SENSOR)  # Slack answers now; the webhook is not sent again
        assert len(http.accepted("/hook")) == 1 and len(http.accepted("/slack")) == 1
    finally:
        servers.stop(http)


def test_an_outbox_left_in_a_cursor_by_an_earlier_version_is_delivered_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    http = servers.start("http", tmp_path, {})
    monkeypatch.setenv("GENLEDGER_WEBHOOK_URL", http.url("/hook"))
    old = {
        "id": "m-old",
        "created_at": "2026-01-01T00:00:00Z",
        "run_id": None,
        "alerts": [
            {
                "kind": "stalled",
                "dataset": "ds",
                "severity": "error",
                "asset_key": "",
                "check": "responses_growing",
                "failure_count": 3,
                "previous_count": None,
                "rows_checked": None,
                "examples": [],
                "run_id": None,
                "detail": "no new responses for 30 min",
            }
        ],
        "pending": ["webhook"],
        "tries": 2,
    }
    try:
        with dg.instance_for_test() as instance:
            harness = Harness(instance, config_for(tmp_path / "state"), tmp_path)
            harness.cursors[CHECK_SENSOR] = json.dumps({"v": 1, "outbox": [old]})
            harness.tick(CHECK_SENSOR)
            assert "outbox" not in json.loads(harness.cursors[CHECK_SENSOR] or "{}")
            harness.tick(CHECK_SENSOR)
        assert [body["id"] for body in http.accepted("/hook")] == ["m-old"]
    finally:
        servers.stop(http)
