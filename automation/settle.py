"""Settling: every check of a dataset's latest materialization gets a result once runs are idle.

Dagster shows, per check, the execution *planned* last (planned when a run is created) and
calls it "Not evaluated" unless it targets the asset's latest materialization. Two runs created
together (a sensor's run and one launched by hand, a schedule's) can plan their checks
interleaved and execute in the other order; no concurrency limit prevents that. So once no run
is in progress, the file sensor looks for datasets whose latest check executions do not belong
to their latest materialization and requests one more run of each: created last, it executes
last, and its checks are the ones shown.
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from assets.naming import STATS_KEY
from assets.spec import DatasetSpec
from checks.asset_checks import EVERY_DATASET_PRESENT, families_for

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


def newest_run_id(instance: dg.DagsterInstance) -> str | None:
    """The id of the run created last (a settle pass is due once per new run)."""
    runs = instance.get_runs(limit=1)
    return runs[0].run_id if runs else None


def _check_keys(spec: DatasetSpec) -> dict[dg.AssetCheckKey, dg.AssetKey]:
    return {
        dg.AssetCheckKey(spec.asset_key(role), family): spec.asset_key(role)
        for role in spec.roles
        for family in families_for(role)
    }


def unsettled(
    instance: dg.DagsterInstance, specs: Iterable[DatasetSpec]
) -> dict[str, tuple[list[dg.AssetKey], int]]:
    """Owner (dataset key or STATS_OWNER) -> (asset keys to rerun, latest materialization id).

    Only for owners whose latest materialization has a check whose latest execution belongs
    elsewhere; call it when no run is in progress.
    """
    owners: dict[str, list[dg.AssetKey]] = {STATS_OWNER: [STATS_KEY]}
    checks = {dg.AssetCheckKey(STATS_KEY, EVERY_DATASET_PRESENT): (STATS_OWNER, STATS_KEY)}
    for spec in specs:
        owners[spec.key] = list(spec.asset_keys)
        checks.update({ck: (spec.key, key) for ck, key in _check_keys(spec).items()})
    asset_keys = [key for keys in owners.values() for key in keys]
    latest = {
        r.asset_entry.asset_key: r.asset_entry.last_materialization_record
        for r in instance.get_asset_records(asset_keys)
    }
    executions = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(checks))
    found: dict[str, tuple[list[dg.AssetKey], int]] = {}
    for check_key, (owner, asset_key) in checks.items():
        materialization = latest.get(asset_key)
        if materialization is None or owner in found:
            continue
        execution = executions.get(check_key)
        if execution is None or not _targets(execution, materialization):
            found[owner] = (owners[owner], materialization.storage_id)
    return found


def _targets(execution: object, materialization: dg.EventLogRecord) -> bool:
    """Whether a check execution describes this materialization (as the UI decides it)."""
    if getattr(execution, "run_id", None) == materialization.event_log_entry.run_id:
        return True
    evaluation = getattr(execution, "evaluation", None)
    target = getattr(evaluation, "target_materialization_data", None)
    return target is not None and target.storage_id == materialization.storage_id
