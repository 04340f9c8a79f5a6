"""The file sensor: request runs for the datasets whose files grew, shrank, appeared or changed.

The cursor maps each dataset key to its files' (size, mtime_ns, inode, head checksum); a
dataset whose entry changed gets one run of its file assets plus `stats_json`, unless a run
for it is already queued or running (then its old entry is kept, so the next tick retries).
A tick that sees no change settles checks (`automation/settle.py`): once no run is in
progress, datasets whose latest materialization lacks its check results are run once more.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import dagster as dg

from assets.naming import DATASET_TAG, SCOPE_TAG, STATS_KEY
from assets.signature import HEAD_BYTES, UNRECOGNISED, dataset_signature, signature_token
from assets.spec import DatasetSpec, Location
from automation.settle import BUSY, STATS_OWNER, any_run_busy, newest_run_id, unsettled
from genledger.tail.discovery import DataRootError, discover
from genledger.tail.fingerprint import Fingerprint

SENSOR_NAME = "dataset_files_changed"
SETTLED = "#settled"  # cursor entry: the newest run seen by the last settle pass (not a key)


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


def busy_keys(instance: dg.DagsterInstance, keys: Iterable[str]) -> set[str]:
    """The dataset keys with a queued or running run (a run of everything makes all busy)."""
    keys = list(keys)
    if instance.get_runs(dg.RunsFilter(statuses=BUSY, tags={SCOPE_TAG: "all"}), limit=1):
        return set(keys)
    return {
        key
        for key in keys
        if instance.get_runs(dg.RunsFilter(statuses=BUSY, tags={DATASET_TAG: key}), limit=1)
    }


def _request(spec: DatasetSpec, signature: dict[str, Any]) -> dg.RunRequest:
    token = signature_token(signature)
    return dg.RunRequest(
        run_key=f"{spec.key}:{token}",
        asset_selection=[*spec.asset_keys, STATS_KEY],
        tags={DATASET_TAG: spec.key},
    )


def evaluate(location: Location, context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One tick: compare the files with the cursor; request runs for changed, idle datasets."""
    if location.problem is not None or location.config.data_root is None:
        return dg.SensorResult(skip_reason=location.problem or "no data root")
    try:
        found = {ds.name: ds for ds in discover(location.config.data_root, location.config)}
    except DataRootError as exc:
        return dg.SensorResult(skip_reason=str(exc))
    old: dict[str, Any] = json.loads(context.cursor) if context.cursor else {}
    cursor: dict[str, Any] = {}
    changed: dict[str, str] = {}
    specs = {spec.key: spec for spec in location.specs}
    for key, spec in specs.items():
        new = dataset_signature(found[spec.name]) if spec.name in found else {}
        cursor[key] = new
        if old.get(key) != new:
            changed[key] = describe_change(old.get(key, {}), new)
    if not context.cursor:
        return _first_tick(context, specs, cursor)
    if SETTLED in old:
        cursor[SETTLED] = old[SETTLED]
    busy = busy_keys(context.instance, changed) if changed else set()
    for key in busy:
        cursor[key] = old.get(key, {})
    requests = [_request(specs[k], cursor[k]) for k in sorted(changed) if k not in busy]
    if not changed:
        requests = _settle(context, specs, old, cursor)
    for key in sorted(changed):
        state = "run in progress, retrying next tick" if key in busy else "run requested"
        context.log.info(f"{specs[key].name}: {changed[key]} ({state})")
    unknown = sorted(set(found) - {spec.name for spec in location.specs})
    if unknown:
        context.log.warning(f"new datasets {unknown}: reload the code location to give them assets")
    text = json.dumps(cursor, sort_keys=True)
    if requests:
        return dg.SensorResult(run_requests=requests, cursor=text)
    return dg.SensorResult(skip_reason=_skip_text(specs, changed, busy, unknown), cursor=text)


def _settle(
    context: dg.SensorEvaluationContext,
    specs: dict[str, DatasetSpec],
    old: dict[str, Any],
    cursor: dict[str, Any],
) -> list[dg.RunRequest]:
    """Once per new run, when nothing is in progress: rerun owners whose checks are unsettled."""
    newest = newest_run_id(context.instance)
    if newest is None or newest == old.get(SETTLED) or any_run_busy(context.instance):
        return []
    cursor[SETTLED] = newest
    requests = []
    for owner, (keys, storage_id) in sorted(unsettled(context.instance, specs.values()).items()):
        context.log.info(f"{owner}: checks not evaluated for its latest materialization; rerun")
        alone = owner == STATS_OWNER
        requests.append(
            dg.RunRequest(
                run_key=f"settle:{owner}:{storage_id}",
                asset_selection=keys if alone else [*keys, STATS_KEY],
                tags={} if alone else {DATASET_TAG: owner},
            )
        )
    return requests


def _first_tick(
    context: dg.SensorEvaluationContext, specs: dict[str, DatasetSpec], cursor: dict[str, Any]
) -> dg.SensorResult:
    """Record the baseline and refresh everything in ONE run (tagged like the schedule's).

    One run rather than one per dataset: a fresh `dagster dev` then queues a single run ahead of
    whatever a user (or a harness) launches by hand, instead of one per dataset.
    """
    text = json.dumps(cursor, sort_keys=True)
    context.log.info(f"first tick: baseline of {len(specs)} datasets; one run refreshes all")
    request = dg.RunRequest(run_key=f"initial:{signature_token(cursor)}", tags={SCOPE_TAG: "all"})
    return dg.SensorResult(run_requests=[request], cursor=text)


def _skip_text(
    specs: dict[str, DatasetSpec], changed: dict[str, str], busy: set[str], unknown: list[str]
) -> str:
    files = sum(len(s.dataset.files) for s in specs.values())
    parts = [f"watched {len(specs)} datasets ({files} files at load time)"]
    if busy:
        parts.append(f"changed but a run is in progress: {', '.join(sorted(busy))}")
    else:
        parts.append("nothing changed since the last tick")
    if unknown:
        parts.append(f"new datasets waiting for a code location reload: {', '.join(unknown)}")
    return "; ".join(parts)


def build_file_sensor(location: Location) -> dg.SensorDefinition:
    """The sensor, running by default every `dagster.sensor_interval_s` seconds."""

    @dg.sensor(
        name=SENSOR_NAME,
        minimum_interval_seconds=location.config.dagster.sensor_interval_s,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Materialises only the datasets whose files changed, plus stats_json.",
    )
    def dataset_files_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate(location, context)

    return dataset_files_changed
