"""Settling: every check of an asset's latest materialization gets a result once runs are idle.

Dagster shows, per check, the execution *planned* (or recorded) last and calls it "Not
evaluated" unless it targets the asset's latest materialization. Two runs created together (a
sensor's run and one launched by hand, a schedule's) can plan their checks interleaved and
execute in the other order; no concurrency limit prevents that. So once no run is in progress,
the file sensor looks for assets whose latest check executions do not belong to their latest
materialization and requests one more refresh run, which records those datasets again,
materialization and checks together (`assets/recording.py`), and `stats_json` with its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from assets.naming import STATS_KEY
from assets.recording import recorded_state, targets
from assets.spec import DatasetSpec
from checks.asset_checks import EVERY_DATASET_PRESENT

STATS_OWNER = "#stats_json"  # not a dataset key: those are [A-Za-z0-9_]
BUSY = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def any_run_busy(instance: dg.DagsterInstance) -> bool:
    """Whether any run at all is queued or in progress."""
    return bool(instance.get_runs(dg.RunsFilter(statuses=BUSY), limit=1))


def newest_run(instance: dg.DagsterInstance) -> dg.DagsterRun | None:
    """The run created last (a settle pass is due once per new run)."""
    runs = instance.get_runs(limit=1)
    return runs[0] if runs else None


def unsettled(instance: dg.DagsterInstance, specs: Sequence[DatasetSpec]) -> list[str]:
    """Dataset keys (and STATS_OWNER) whose latest materialization lacks a check result of its
    own; call it when no run is in progress."""
    owners = [key for key, state in recorded_state(instance, specs).items() if not state.settled]
    if not _stats_settled(instance):
        owners.append(STATS_OWNER)
    return sorted(owners)


def _stats_settled(instance: dg.DagsterInstance) -> bool:
    record = instance.get_asset_records([STATS_KEY])
    latest = record[0].asset_entry.last_materialization_record if record else None
    if latest is None:
        return True
    check_key = dg.AssetCheckKey(STATS_KEY, EVERY_DATASET_PRESENT)
    execution = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key])
    found = execution.get(check_key)
    return found is not None and targets(found, latest)
