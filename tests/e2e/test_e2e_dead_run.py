"""A crash of the whole `dagster dev` tree during a refresh run does not block later runs.

A live `dagster dev` of its own (its own DAGSTER_HOME, data root and webhook receiver) starts
its first refresh run while another process holds a dataset's state lock, so the run is
STARTED and waiting; the whole process group is SIGKILLed then, run worker included. After a
restart on the same instance, the killed run must be marked failed and a refresh requested by
a new append must complete, each within a bounded time — instead of the new run waiting QUEUED
behind a dead STARTED one for ever (one run at a time).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from .conftest import own_dagster_dev_env
from .dagster_api import DagsterApi
from .harness import (
    ARTIFACTS,
    PROJECT,
    REFRESH_JOB,
    SCHEDULE_CRON,
    SENSOR_INTERVAL_S,
    SimulatedWriter,
    WebhookReceiver,
    pids_using_home,
    start_dagster_dev,
    stop_dagster_dev,
    wait_for,
)

sys.path.insert(0, str(PROJECT / "tests" / "genledger"))
from lock_holder import hold

pytestmark = pytest.mark.e2e
STARTED_WITHIN_S = 240.0  # the first tick, a queue, a run worker, on a busy machine
FREED_WITHIN_S = 120.0  # the dead-run sensor ticks every 10 s; the daemon needs to start
DONE_WITHIN_S = 240.0


def refresh_runs(api: DagsterApi) -> list[dict]:
    """The refresh job's runs, newest first."""
    return [r for r in api.runs() if r["jobName"] == REFRESH_JOB]


def test_a_killed_dagster_dev_tree_leaves_no_run_blocking_the_queue(tmp_path: Path) -> None:
    webhook = WebhookReceiver()
    webhook.thread.start()
    settings = f'schedule_cron = "{SCHEDULE_CRON}"\nsensor_interval_s = {SENSOR_INTERVAL_S}\n'
    env, port = own_dagster_dev_env(tmp_path, settings, webhook)
    root, state = Path(env["GENLEDGER_DATA_ROOT"]), Path(env["GENLEDGER_STATE_DIR"])
    first = sorted(p.name for p in root.iterdir())[0]  # a refresh takes the locks in this order
    holder = hold(state, first, 3600)
    devs = []
    try:
        dev = start_dagster_dev(port, env, tmp_path / "dev-1.log")
        devs.append(dev)
        api = DagsterApi(dev)
        api.wait_until_loaded()
        [killed] = wait_for(
            lambda: [r for r in refresh_runs(api) if r["status"] == "STARTED"][:1],
            STARTED_WITHIN_S,
            "a refresh run STARTED (waiting for the held lock)",
        )
        dev.remember_children()
        os.killpg(dev.proc.pid, signal.SIGKILL)  # the whole tree, run worker included
        dev.proc.wait(timeout=30)
        for pid in pids_using_home(Path(env["DAGSTER_HOME"])) - {holder.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)

        dev = start_dagster_dev(port, env, tmp_path / "dev-2.log")
        devs.append(dev)
        api = DagsterApi(dev)
        api.wait_until_loaded()
        restarted = time.monotonic()
        SimulatedWriter(root).append("clean_chat_then_flat", 3)
        wait_for(
            lambda: api.client.get_run_status(killed["runId"]).value == "FAILURE",
            FREED_WITHIN_S,
            f"the killed run {killed['runId']} marked failed",
        )
        later = wait_for(
            lambda: [
                r
                for r in refresh_runs(api)
                if r["runId"] != killed["runId"] and r["status"] == "SUCCESS"
            ],
            DONE_WITHIN_S,
            "a later refresh run completing",
        )
        assert later and time.monotonic() - restarted < FREED_WITHIN_S + DONE_WITHIN_S
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)
        leftovers = [pid for dev in devs[-1:] for pid in stop_dagster_dev(dev)]
        webhook.server.shutdown()
        webhook.server.server_close()
        ARTIFACTS.mkdir(exist_ok=True)
        for dev in devs:
            shutil.copy(dev.log_path, ARTIFACTS / f"dead-run-{dev.log_path.name}")
    assert not leftovers, f"processes left after stopping dagster dev: {leftovers}"
