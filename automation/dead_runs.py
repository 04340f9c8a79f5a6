"""Runs whose worker died without a word: marked failed, so the queue moves on.

When the whole `dagster dev` tree is killed (SIGKILL, OOM, a lost container) during a run,
nothing is left to report the run's end: it stays STARTED, and with one run at a time every
later run stays QUEUED behind it. Dagster's run monitoring cannot see that the worker is gone
with the default run launcher (it has no worker health check; only a maximum runtime ends such
a run, `deploy/dagster.yaml`). This sensor can: it runs in the code server, where that launcher
starts run workers, and each run's `Started process for run (pid: N)` event names its worker.
A run whose worker process is gone — no such process, a zombie, or a newer process reusing the
pid — is marked failed, saying so.
"""

from __future__ import annotations

import time

import dagster as dg
import psutil

from automation.ticks import tick_every

SENSOR_NAME = "genledger_dead_runs"
INTERVAL_S = 10
PID_REUSE_SLACK_S = 2.0  # a worker is created just before its start event is written
MAX_RUNS = 50
WORKER_STARTED = "Started process for run"  # dagster/_grpc/impl.py, dagster/_cli/api.py


def worker_pid(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The run worker's pid and when its start was reported (None: not reported yet).

    Only the run worker's own start event counts: step processes (the multiprocess executor)
    report pids too, and come and go while the run goes on.
    """
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, ascending=False, limit=1000
    ).records
    for record in records:
        entry = record.event_log_entry
        event = entry.dagster_event
        if event is None or not (event.message or "").startswith(WORKER_STARTED):
            continue
        data = event.event_specific_data
        pid = getattr(getattr(data, "metadata", {}).get("pid"), "value", None)
        if pid is not None and str(pid).isdigit():
            return int(pid), entry.timestamp
    return None


def worker_gone(pid: int, reported_at: float) -> str | None:
    """Why the worker `pid` is no longer running (None: it is, or it cannot be told)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return f"its worker (pid {pid}) has exited"
        if process.create_time() > reported_at + PID_REUSE_SLACK_S:
            return f"its worker (pid {pid}) has exited; the pid now belongs to another process"
    except psutil.NoSuchProcess:
        return f"its worker (pid {pid}) no longer exists"
    except psutil.Error:
        return None  # not ours to inspect: leave it to the maximum runtime
    return None


def fail_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed every STARTED run whose worker is gone; return what was done, run by run."""
    runs = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]), limit=MAX_RUNS)
    done = []
    for run in runs:
        worker = worker_pid(instance, run.run_id)
        why = worker_gone(*worker) if worker is not None else None
        if why is None:
            continue
        current = instance.get_run_by_id(run.run_id)
        if current is None or current.status != dg.DagsterRunStatus.STARTED:
            continue  # it ended on its own meanwhile
        message = f"genledger: {why} (the process tree was killed?); the run is marked failed"
        instance.report_run_failed(current, message)
        done.append(f"{run.run_id}: {why}")
    return done


def build_dead_run_sensor() -> dg.SensorDefinition:
    """The sensor, running by default every INTERVAL_S seconds."""

    @dg.sensor(
        name=SENSOR_NAME,
        minimum_interval_seconds=tick_every(INTERVAL_S),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            "Marks failed a started run whose worker process is gone (a killed dagster dev), "
            "so the runs queued behind it start."
        ),
    )
    def genledger_dead_runs(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        started = time.monotonic()
        done = fail_dead_runs(context.instance)
        for line in done:
            context.log.warning(line)
        took = time.monotonic() - started
        return dg.SkipReason(f"{len(done)} dead run(s) marked failed ({took:.1f} s)")

    return genledger_dead_runs
