"""The dead-run sensor on a real Dagster instance: a STARTED run whose worker process is gone is
marked failed; one whose worker lives, or that names no worker yet, is left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import dagster as dg
from dagster._core.events import EngineEventData

from automation.dead_runs import SENSOR_NAME, build_dead_run_sensor, fail_dead_runs


def started_run(instance: dg.DagsterInstance, pid: int | None) -> str:
    """A STARTED run whose worker reported `pid` the way Dagster's launcher does."""
    run = instance.add_run(
        dg.DagsterRun(job_name="genledger_refresh", status=dg.DagsterRunStatus.STARTED)
    )
    if pid is not None:
        instance.report_engine_event(
            f"Started process for run (pid: {pid}).", run, EngineEventData.in_process(pid)
        )
    return run.run_id


def an_exited_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus:
    run = instance.get_run_by_id(run_id)
    assert run is not None
    return run.status


def test_a_run_whose_worker_is_gone_is_failed_and_the_others_are_left_alone() -> None:
    with dg.instance_for_test() as instance:
        dead = started_run(instance, an_exited_pid())
        alive = started_run(instance, os.getpid())
        unknown = started_run(instance, None)
        done = fail_dead_runs(instance)
        assert [line.split(":")[0] for line in done] == [dead]
        assert status(instance, dead) == dg.DagsterRunStatus.FAILURE
        assert status(instance, alive) == dg.DagsterRunStatus.STARTED
        assert status(instance, unknown) == dg.DagsterRunStatus.STARTED
        assert fail_dead_runs(instance) == []  # once


def test_a_living_worker_keeps_its_run_until_it_dies() -> None:
    with dg.instance_for_test() as instance:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            run = instance.add_run(
                dg.DagsterRun(job_name="genledger_refresh", status=dg.DagsterRunStatus.STARTED)
            )
            instance.report_engine_event(
                f"Started process for run (pid: {child.pid}).",
                run,
                EngineEventData.in_process(child.pid),
            )
            assert fail_dead_runs(instance) == []
        finally:
            child.kill()
            child.wait()
        assert fail_dead_runs(instance)[0].startswith(run.run_id)


def test_the_sensor_runs_by_default_and_says_what_it_did() -> None:
    sensor = build_dead_run_sensor()
    assert sensor.name == SENSOR_NAME
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    with dg.instance_for_test() as instance:
        started_run(instance, an_exited_pid())
        data = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
        assert "1 dead run(s) marked failed" in str(data.skip_message)
