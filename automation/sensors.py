"""The file sensor: one refresh run when any dataset's files grew, shrank, appeared or changed.

The cursor maps each dataset key to its files' (size, mtime_ns, inode, head checksum). However
many datasets changed, a tick requests at most one run of the refresh job
(`assets/refresh_job.py`): it refreshes the whole root once, writes the stats JSON and records
`stats_json` and the changed datasets' file assets and checks (`assets/recording.py`).
No run is requested while a refresh run still waits to start (it will read the files as they
are then), so runs per minute do not grow with the number of datasets. A tick that sees no
change follows up (`automation/settle.py`): once no run is in progress, one more refresh run if
the last one left changed datasets to record or a check result belongs to another
materialization.
"""

from __future__ import annotations

import json
from typing import Any

import dagster as dg

from assets.naming import SCOPE_TAG, STATS_KEY
from assets.recording import LEFT_DUE
from assets.refresh_job import REFRESH_JOB, build_refresh_job
from assets.signature import HEAD_BYTES, UNRECOGNISED, dataset_signature, signature_token
from assets.spec import Location
from automation.settle import any_run_busy, newest_run, unsettled
from automation.ticks import tick_every
from genledger.tail.discovery import DataRootError, Dataset, discover
from genledger.tail.fingerprint import Fingerprint

SENSOR_NAME = "dataset_files_changed"
SETTLED = "#settled"  # cursor entry: the newest run seen by the last follow-up (not a key)
REFRESH_TAGS = {SCOPE_TAG: "all"}  # a refresh of the whole root (sensor and schedule alike)
WAITING = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
]
NAMES_SHOWN = 20


def describe_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A few words on what changed: which files appeared, grew, shrank, were replaced."""
    words = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name == UNRECOGNISED:
            added = sorted(set(after or []) - set(before or []))
            words.append(f"unrecognised {', '.join(added)}" if added else "unrecognised changed")
            continue
        if before is None:
            words.append(f"{name} appeared")
        elif after is None:
            words.append(f"{name} vanished")
        else:
            words.append(f"{name} {_change(Fingerprint(*before), Fingerprint(*after))}")
    return ", ".join(words)


def _change(before: Fingerprint, after: Fingerprint) -> str:
    """How one file's fingerprint moved."""
    whole_heads = min(after.size, before.size) >= HEAD_BYTES
    if after.node != before.node or (whole_heads and after.head_sum != before.head_sum):
        return "replaced"
    if after.size > before.size:
        return f"grew {after.size - before.size} bytes"
    if after.size < before.size:
        return f"shrank {before.size - after.size} bytes"
    return "rewritten"


def signatures(location: Location, found: dict[str, Dataset]) -> dict[str, Any]:
    """Each known dataset's files now, by key (empty once its folder is gone)."""
    return {
        spec.key: dataset_signature(found[spec.name]) if spec.name in found else {}
        for spec in location.specs
    }


def changed_datasets(location: Location, before: str | None, after: str | None) -> set[str]:
    """The dataset keys whose entries differ between two cursors."""
    old = json.loads(before) if before else {}
    new = json.loads(after) if after else {}
    return {spec.key for spec in location.specs if old.get(spec.key) != new.get(spec.key)}


def refresh_waiting(instance: dg.DagsterInstance) -> bool:
    """Whether a refresh run is queued or starting: it will read the files as they are then."""
    return bool(instance.get_runs(dg.RunsFilter(statuses=WAITING, tags=REFRESH_TAGS), limit=1))


def refresh_request(run_key: str) -> dg.RunRequest:
    """One run of the refresh job: it reads the whole root and records what changed."""
    return dg.RunRequest(run_key=run_key, tags=dict(REFRESH_TAGS), job_name=REFRESH_JOB)


def evaluate(location: Location, context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One tick: compare the files with the cursor; request one refresh run if any changed."""
    if location.problem is not None or location.config.data_root is None:
        return dg.SensorResult(skip_reason=location.problem or "no data root")
    try:
        found = {ds.name: ds for ds in discover(location.config.data_root, location.config)}
    except DataRootError as exc:
        return dg.SensorResult(skip_reason=str(exc))
    old: dict[str, Any] = json.loads(context.cursor) if context.cursor else {}
    cursor = signatures(location, found)
    token = signature_token(cursor)
    if not context.cursor:
        context.log.info(f"first tick: baseline of {len(cursor)} datasets; one run refreshes all")
        request = refresh_request(f"initial:{token}")
        return dg.SensorResult(run_requests=[request], cursor=json.dumps(cursor, sort_keys=True))
    changed = {k: describe_change(old.get(k, {}), v) for k, v in cursor.items() if old.get(k) != v}
    if SETTLED in old:
        cursor[SETTLED] = old[SETTLED]
    waiting = bool(changed) and refresh_waiting(context.instance)
    if changed:
        state = "a waiting refresh run will read them" if waiting else "refresh run requested"
        context.log.info(f"{_changes(location, changed)} ({state})")
        requests = [] if waiting else [refresh_request(f"live:{token}")]
    else:
        requests = _follow_up(context, location, old, cursor)
    unknown = sorted(set(found) - {spec.name for spec in location.specs})
    if unknown:
        context.log.warning(f"new datasets {unknown}: reload the code location to give them assets")
    text = json.dumps(cursor, sort_keys=True)
    if requests:
        return dg.SensorResult(run_requests=requests, cursor=text)
    return dg.SensorResult(skip_reason=_skip_text(location, changed, unknown), cursor=text)


def _changes(location: Location, changed: dict[str, str]) -> str:
    """What changed, dataset by dataset (the first NAMES_SHOWN of them)."""
    names = {spec.key: spec.name for spec in location.specs}
    shown = [f"{names[k]}: {changed[k]}" for k in sorted(changed)[:NAMES_SHOWN]]
    more = len(changed) - NAMES_SHOWN
    return "; ".join(shown) + (f"; and {more} more datasets" if more > 0 else "")


def _follow_up(
    context: dg.SensorEvaluationContext,
    location: Location,
    old: dict[str, Any],
    cursor: dict[str, Any],
) -> list[dg.RunRequest]:
    """Once per new run, when nothing is in progress: one more refresh run if the last one left
    changed datasets to record, or some check result belongs to another materialization."""
    instance = context.instance
    run = newest_run(instance)
    if run is None or run.run_id == old.get(SETTLED) or any_run_busy(instance):
        return []
    cursor[SETTLED] = run.run_id
    if run.status == dg.DagsterRunStatus.FAILURE:
        return []  # a failing refresh is not retried in a loop: the next change will be
    left = left_due(instance)
    owners = unsettled(instance, location.specs)
    if not left and not owners:
        return []
    context.log.info(
        f"{left} changed dataset(s) left to record; checks not evaluated for the latest "
        f"materialization of: {', '.join(owners) or 'none'}; one more refresh run"
    )
    return [refresh_request(f"settle:{run.run_id}")]


def left_due(instance: dg.DagsterInstance) -> int:
    """How many changed datasets the latest `stats_json` run left to record."""
    records = instance.get_asset_records([STATS_KEY])
    latest = records[0].asset_entry.last_materialization if records else None
    materialization = latest.asset_materialization if latest is not None else None
    value = materialization.metadata.get(LEFT_DUE) if materialization is not None else None
    return int(getattr(value, "value", 0) or 0)


def _skip_text(location: Location, changed: dict[str, str], unknown: list[str]) -> str:
    files = sum(len(s.dataset.files) for s in location.specs)
    parts = [f"watched {len(location.specs)} datasets ({files} files at load time)"]
    if changed:
        parts.append(f"{len(changed)} changed; a waiting refresh run will read them")
    else:
        parts.append("nothing changed since the last tick")
    if unknown:
        parts.append(f"new datasets waiting for a code location reload: {', '.join(unknown)}")
    return "; ".join(parts)


def build_file_sensor(
    location: Location, job: dg.JobDefinition | None = None
) -> dg.SensorDefinition:
    """The sensor, running by default every `dagster.sensor_interval_s` seconds, requesting
    runs of `job` (the location's refresh job; the `stats_json` asset's page lists the
    sensor, as Dagster maps a sensor to the assets its job declares)."""

    @dg.sensor(
        name=SENSOR_NAME,
        minimum_interval_seconds=tick_every(location.config.dagster.sensor_interval_s),
        job=job or build_refresh_job(location),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            "One refresh run when any dataset's files changed: it refreshes the whole root, "
            "writes the stats JSON and records the changed datasets' file assets and checks."
        ),
    )
    def dataset_files_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate(location, context)

    return dataset_files_changed
