"""The schedule: on a cron (default every 5 minutes), refresh what changed and the stats JSON.

The run is the file sensor's refresh run (`assets/refresh_job.py`: it covers every dataset in
the stats JSON and records the changed ones), a backstop for when the sensor is stopped. A tick
compares each dataset's files (stat and a 256-byte head, never a full read) with the signature
its file assets recorded at their last materialization: the changed (or never materialized)
datasets are the ones the run records; the rest are skipped visibly — counted in the run's
tags, named in the tick's log — and keep their check results, which still describe the same
files.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from assets.naming import SCOPE_TAG
from assets.refresh_job import build_refresh_job
from assets.signature import SIGNATURE_KEY, dataset_signature, signature_token
from assets.spec import DatasetSpec, Location
from genledger.tail.discovery import DataRootError, discover

SCHEDULE_NAME = "refresh_everything"
CHANGED_TAG = "genledger/changed_datasets"
SKIPPED_TAG = "genledger/unchanged_datasets"
NAMES_SHOWN = 20


def recorded_signatures(
    instance: dg.DagsterInstance, keys: Sequence[dg.AssetKey]
) -> dict[dg.AssetKey, str | None]:
    """The files signature each asset's latest materialization recorded (None: none known)."""
    recorded: dict[dg.AssetKey, str | None] = dict.fromkeys(keys)
    for record in instance.get_asset_records(list(keys)):
        latest = record.asset_entry.last_materialization
        materialization = latest.asset_materialization if latest else None
        if materialization is not None:
            value = materialization.metadata.get(SIGNATURE_KEY)
            recorded[record.asset_entry.asset_key] = getattr(value, "value", None)
    return recorded


def changed_specs(location: Location, instance: dg.DagsterInstance) -> list[DatasetSpec]:
    """The datasets whose files differ from what their last materialization started from."""
    assert location.config.data_root is not None
    try:
        found = {ds.name: ds for ds in discover(location.config.data_root, location.config)}
    except DataRootError:
        return list(location.specs)  # cannot tell: refresh all, the run reports the problem
    keys = [key for spec in location.specs for key in spec.asset_keys]
    recorded = recorded_signatures(instance, keys)
    changed = []
    for spec in location.specs:
        now = signature_token(dataset_signature(found.get(spec.name, spec.dataset)))
        if any(recorded[key] != now for key in spec.asset_keys):
            changed.append(spec)
    return changed


def _names(specs: Sequence[DatasetSpec]) -> str:
    shown = ", ".join(s.name for s in specs[:NAMES_SHOWN])
    more = len(specs) - NAMES_SHOWN
    return f"{shown}, and {more} more" if more > 0 else shown or "none"


def build_refresh_schedule(
    location: Location, job: dg.JobDefinition | None = None
) -> dg.ScheduleDefinition:
    """Refresh the changed datasets and `stats_json` on `dagster.schedule_cron`, with `job`
    (the location's refresh job)."""

    @dg.schedule(
        name=SCHEDULE_NAME,
        cron_schedule=location.config.dagster.schedule_cron,
        job=job or build_refresh_job(location),
        default_status=dg.DefaultScheduleStatus.RUNNING,
        tags={SCOPE_TAG: "all"},
        description=(
            "Refresh the datasets whose files changed since their last materialization "
            "(the others are skipped, their checks still current) and the stats JSON."
        ),
    )
    def refresh_everything(
        context: dg.ScheduleEvaluationContext,
    ) -> dg.RunRequest | dg.SkipReason:
        if location.problem is not None:
            return dg.SkipReason(location.problem)
        changed = changed_specs(location, context.instance)
        unchanged = [s for s in location.specs if s not in changed]
        context.log.info(f"changed: {_names(changed)}; skipped as unchanged: {_names(unchanged)}")
        return dg.RunRequest(
            tags={
                SCOPE_TAG: "all",
                CHANGED_TAG: str(len(changed)),
                SKIPPED_TAG: str(len(unchanged)),
            },
        )

    return refresh_everything
