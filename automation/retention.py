"""Retention: finished runs older than `dagster.keep_runs_days` are deleted with their events.

Dagster 1.13 has no setting that bounds the event log: the instance's `retention:` section
purges schedule and sensor *ticks* only (`dagster/_core/instance/config.py`,
`retention_config_schema`), and `DagsterInstance.delete_run` is the only way events leave.
A refresh run every ten seconds or so is a few thousand runs a day, so `genledger_retention`
deletes, a few at a time, the finished runs older than the window — except any run holding an
asset's latest materialization or a check's latest result, which the UI shows as the current
state. On SQLite a run's events live in a file of their own that Dagster leaves behind when it
deletes the run; that file, and the run's captured logs, go too.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

import dagster as dg

from assets.naming import STATS_KEY
from assets.spec import DatasetSpec, Location
from checks.asset_checks import EVERY_DATASET_PRESENT, EVERY_FILE_RECOGNISED, families_for

RETENTION_SENSOR = "genledger_retention"
INTERVAL_S = 60
# A tick stays short: the daemon evaluates sensors one after another, and the file sensor's
# and the notifications' ticks are part of the time to signal.
TIME_BOX_S = 2.0
BATCH = 100
FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
DAY_S = 86_400.0


def build_retention_sensor(location: Location) -> dg.SensorDefinition:
    """The sensor deleting old runs, every minute, running by default."""
    keep_days = location.config.dagster.keep_runs_days

    @dg.sensor(
        name=RETENTION_SENSOR,
        minimum_interval_seconds=INTERVAL_S,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            f"Deletes finished runs older than {keep_days:g} days (dagster.keep_runs_days) and "
            "their events, except those holding an asset's or a check's latest result."
        ),
    )
    def genledger_retention(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        return dg.SkipReason(prune(context.instance, location.specs, keep_days, time.time()))

    return genledger_retention


def prune(
    instance: dg.DagsterInstance,
    specs: Iterable[DatasetSpec],
    keep_days: float,
    now: float,
    clock: Callable[[], float] = time.monotonic,
    batch: int = BATCH,
) -> str:
    """Delete up to `batch` finished runs created before `now - keep_days`, oldest first, for
    TIME_BOX_S."""
    if keep_days <= 0:
        return "dagster.keep_runs_days = 0: every run is kept"
    cutoff = datetime.fromtimestamp(now - keep_days * DAY_S, UTC)
    in_use = runs_in_use(instance, specs)
    # The oldest runs are often the kept ones (datasets that stopped growing long ago): fetch
    # past them, or they would fill every batch and nothing newer would ever go.
    old = instance.get_run_records(
        filters=dg.RunsFilter(statuses=FINISHED, created_before=cutoff),
        limit=batch + len(in_use),
        order_by="create_timestamp",
        ascending=True,
    )
    if not old:
        return f"no finished run older than {keep_days:g} days"
    started, deleted, kept = clock(), 0, 0
    for record in old:
        if clock() - started >= TIME_BOX_S:
            break
        run_id = record.dagster_run.run_id
        if run_id in in_use:
            kept += 1
            continue
        delete_run(instance, run_id)
        deleted += 1
    return (
        f"deleted {deleted} run(s) older than {keep_days:g} days; kept {kept} holding a latest "
        "materialization or check result"
    )


def runs_in_use(instance: dg.DagsterInstance, specs: Iterable[DatasetSpec]) -> set[str]:
    """Runs holding some asset's latest materialization or some check's latest execution."""
    specs = list(specs)
    keys = [STATS_KEY, *(key for spec in specs for key in spec.asset_keys)]
    checks = [
        dg.AssetCheckKey(STATS_KEY, EVERY_DATASET_PRESENT),
        dg.AssetCheckKey(STATS_KEY, EVERY_FILE_RECOGNISED),
        *(
            dg.AssetCheckKey(spec.asset_key(role), family)
            for spec in specs
            for role in spec.roles
            for family in families_for(role)
        ),
    ]
    used = set()
    for record in instance.get_asset_records(keys):
        latest = record.asset_entry.last_materialization_record
        if latest is not None:
            used.add(latest.event_log_entry.run_id)
    executions = instance.event_log_storage.get_latest_asset_check_execution_by_key(checks)
    used.update(execution.run_id for execution in executions.values())
    return used


def delete_run(instance: dg.DagsterInstance, run_id: str) -> None:
    """Delete a run and its events; on SQLite also its events file; and its captured logs."""
    # Imported here: a PostgreSQL instance never loads SQLite's storage (nor alembic with it).
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    instance.delete_run(run_id)
    storage = instance.event_log_storage
    if isinstance(storage, SqliteEventLogStorage):
        shard = storage.path_for_shard(run_id)
        for path in (shard, f"{shard}-wal", f"{shard}-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    with contextlib.suppress(Exception):  # a log store we cannot prune must not stop retention
        instance.compute_log_manager.delete_logs(prefix=[run_id])
