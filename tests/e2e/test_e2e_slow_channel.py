"""A Slack receiver that accepts and never answers, under a live `dagster dev`: it holds up
neither the healthy webhook nor the daemon's other sensors.

Its own `dagster dev` (default sensor intervals, the project's `dagster.yaml`), a healthy
webhook receiver and a Slack-shaped one that never answers (a process of its own on
127.0.0.1). A bad append to a clean dataset must reach the webhook within the healthy bound,
the file sensor must keep ticking every few seconds throughout, and the silent channel must
have been tried and then left to rest, its message kept for later.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .conftest import own_dagster_dev_env
from .dagster_api import DagsterApi
from .harness import (
    ARTIFACTS,
    PROJECT,
    SCHEDULE_CRON,
    WebhookReceiver,
    bad_lines,
    start_dagster_dev,
    stop_dagster_dev,
    wait_for,
)

pytestmark = pytest.mark.e2e
DATASET = "clean_chat_then_flat"
SIGNAL_WITHIN_S = 60.0  # the healthy bound is 30 s; a loaded CI machine gets twice that
MAX_TICK_GAP_S = 20.0  # the file sensor asks for 5 s; a blocked daemon showed ~44 s
TICK = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \+0000.*Checking for new runs for sensor: (\S+)"
)


def _servers():  # type: ignore[no-untyped-def]
    path = PROJECT / "tests" / "genledger" / "notify" / "servers.py"
    spec = importlib.util.spec_from_file_location("genledger_test_servers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def _silent_slack(
    tmp_path: Path,
) -> Iterator[tuple[Any, WebhookReceiver, dict[str, str], int]]:
    """A healthy webhook and a Slack that accepts and never answers, and the environment of a
    `dagster dev` that alerts both (its port beside); both receivers stopped at the end."""
    servers = _servers()
    silent = servers.start("http", tmp_path, {"/slack": ["silent"] * 100})
    try:
        with WebhookReceiver() as webhook:
            settings = f'schedule_cron = "{SCHEDULE_CRON}"\n'
            env, port = own_dagster_dev_env(tmp_path, settings, webhook)
            env["GENLEDGER_SLACK_WEBHOOK_URL"] = silent.url("/slack")
            yield silent, webhook, env, port
    finally:
        servers.stop(silent)


def tick_times(log: str, sensor: str) -> list[float]:
    """When the daemon started each tick of `sensor` (whole seconds, from its log)."""
    return [
        datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
        for m in TICK.finditer(re.sub(r"\x1b\[[0-9;]*m", "", log))
        if m.group(2) == sensor
    ]


def test_a_silent_slack_delays_neither_the_webhook_nor_the_file_sensor(tmp_path: Path) -> None:
    with _silent_slack(tmp_path) as (silent, webhook, env, port):
        root = Path(env["GENLEDGER_DATA_ROOT"])
        dev = start_dagster_dev(port, env, tmp_path / "dev.log")
        try:
            api = DagsterApi(dev)
            api.wait_until_loaded()
            api.wait_until_idle()
            wait_for(
                lambda: webhook.snapshot(), 120, "the first alerts (the tree has error datasets)"
            )
            wait_for(lambda: silent.received(), 120, "the silent Slack tried")
            watched_from = time.time()
            with (root / DATASET / "raw_responses.jsonl").open("ab") as out:
                out.write(bad_lines(DATASET, 20))
            broke = time.monotonic()
            post = webhook.wait_for(
                lambda p: p.path.startswith("/hook") and DATASET in json.loads(p.body)["datasets"],
                SIGNAL_WITHIN_S,
            )
            assert post.at - broke < SIGNAL_WITHIN_S
            time.sleep(15)  # a few more ticks while Slack stays silent
            ticks = tick_times(dev.log_text(), "dataset_files_changed")
            ticks = [t for t in ticks if t >= watched_from - 1]
            gaps = [b - a for a, b in itertools.pairwise(ticks)]
            assert len(ticks) >= 4 and max(gaps) <= MAX_TICK_GAP_S, gaps
            log = (Path(env["GENLEDGER_STATE_DIR"]) / "notifications.jsonl").read_text()
            entries = [json.loads(line) for line in log.splitlines()]
            assert any(e["event"] == "resting" and e["channel"] == "slack" for e in entries)
            assert not any(e.get("channel") == "slack" and e.get("ok") for e in entries)
        finally:
            leftovers = stop_dagster_dev(dev)
            ARTIFACTS.mkdir(exist_ok=True)
            shutil.copy(dev.log_path, ARTIFACTS / "slow-channel-dev.log")
        assert not leftovers, f"processes left after stopping dagster dev: {leftovers}"


def test_dagster_dev_killed_mid_delivery_sends_no_acknowledged_alert_twice(tmp_path: Path) -> None:
    import contextlib
    import os
    import signal

    from .harness import pids_using_home

    with _silent_slack(tmp_path) as (silent, webhook, env, port):
        devs = []
        try:
            dev = start_dagster_dev(port, env, tmp_path / "dev-1.log")
            devs.append(dev)
            DagsterApi(dev).wait_until_loaded()
            # the first alerts: the webhook acknowledged them while Slack holds the same tick
            first = wait_for(lambda: webhook.snapshot(), 240, "the first alerts")
            wait_for(lambda: silent.received(), 30, "the silent Slack tried", every=0.2)
            time.sleep(
                1.0
            )  # past the instant between the webhook's 200 and its record (at least once)
            dev.remember_children()
            os.killpg(
                dev.proc.pid, signal.SIGKILL
            )  # mid-delivery: the tick never stores its cursor
            dev.proc.wait(timeout=30)
            for pid in pids_using_home(Path(env["DAGSTER_HOME"])):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            dev = start_dagster_dev(port, env, tmp_path / "dev-2.log")
            devs.append(dev)
            DagsterApi(dev).wait_until_loaded()
            check_ticks = lambda: tick_times(dev.log_text(), "genledger_check_notifications")  # noqa: E731
            wait_for(
                lambda: len(check_ticks()) >= 4, 120, "four check-sensor ticks after the restart"
            )
            ids = [json.loads(p.body)["id"] for p in webhook.snapshot()]
            assert json.loads(first[0].body)["id"] in ids
            assert len(ids) == len(set(ids)), ids  # nothing the webhook acknowledged came again
        finally:
            leftovers = [pid for dev in devs[-1:] for pid in stop_dagster_dev(dev)]
            ARTIFACTS.mkdir(exist_ok=True)
            for dev in devs:
                shutil.copy(dev.log_path, ARTIFACTS / f"killed-mid-delivery-{dev.log_path.name}")
        assert not leftovers, f"processes left after stopping dagster dev: {leftovers}"
