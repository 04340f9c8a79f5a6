"""What a refresh records of the file assets: news at once, the other changes in turn.

A refresh run (`assets/refresh_job.py`, or `stats_json` launched by hand) refreshes the whole
data root once (the engine reads only new bytes) and so knows every dataset's check results.
Recording a dataset in Dagster costs a materialization and one result per check (17 events for
a responses asset, each a few SQLite transactions: ~25 ms apiece, ~50 ms on a busy machine), so
recording every growing dataset in every refresh would make a refresh's cost, and with it the
time to signal, grow with the number of datasets. Instead each run records:

- **news**, always: the datasets whose check results say something the recorded ones do not:
  a check that now fails or passes, a severity that changed, a failure count that reached
  `notify.worse_factor` times the recorded one, an unrecognised file not named before, or a
  failing check never recorded;
- **due** datasets in turn, while `dagster.record_seconds` last: those whose files changed since
  their recorded materialization, never recorded, or whose checks' latest results belong to
  another materialization (a race of runs), the least recently recorded first.

Whatever is recorded is a full materialization with every check, in the same run, so the UI
never shows a check "Not evaluated"; what is not yet recorded still has its previous results,
which hold the same verdicts (a changed verdict is news). Datasets materialized by their own
step in the same run are left to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from assets.results import RoleResult
from assets.signature import SIGNATURE_KEY
from assets.spec import DatasetSpec
from checks.asset_checks import families_for

LEFT_DUE = "left_due"  # stats_json metadata: changed datasets this run left to record


@dataclass(frozen=True)
class Verdict:
    """What one check result says: the parts whose change is news."""

    passed: bool
    severity: str
    count: int
    items: frozenset[str] = frozenset()


@dataclass
class Recorded:
    """What the instance holds of one dataset: its latest materializations and check results."""

    signatures: set[str | None] = field(default_factory=set)  # one per file asset
    times: list[float] = field(default_factory=list)  # when each file asset was (0: never)
    verdicts: dict[dg.AssetCheckKey, Verdict] = field(default_factory=dict)
    settled: bool = True  # every check's latest result belongs to its latest materialization

    def up_to_date(self, signature: str) -> bool:
        """Every file asset was last materialized from files with this signature."""
        return self.signatures == {signature}

    @property
    def at(self) -> float:
        """When its least recently materialized file asset was (0: some never was)."""
        return min(self.times, default=0.0)


@dataclass(frozen=True)
class Plan:
    """The datasets a run records, by key: news first, then due ones in order."""

    news: list[str]
    due: list[str]


def verdict(result: dg.AssetCheckResult | dg.AssetCheckEvaluation) -> Verdict:
    """The verdict of a check result computed now or read back from the instance."""
    metadata: dict[str, Any] = {
        k: getattr(v, "value", v) for k, v in (result.metadata or {}).items()
    }
    items = metadata.get("items")
    severity = result.severity.value if result.severity is not None else "ERROR"
    return Verdict(
        passed=bool(result.passed),
        severity=str(severity),
        count=int(metadata.get("failure_count") or 0),
        items=frozenset(str(i) for i in items) if isinstance(items, list) else frozenset(),
    )


def recorded_state(
    instance: dg.DagsterInstance, specs: Sequence[DatasetSpec]
) -> dict[str, Recorded]:
    """Each dataset's latest materializations and check verdicts (two indexed queries)."""
    owner = {key: spec.key for spec in specs for key in spec.asset_keys}
    checks = {
        dg.AssetCheckKey(spec.asset_key(role), family): spec.key
        for spec in specs
        for role in spec.roles
        for family in families_for(role)
    }
    state = {spec.key: Recorded() for spec in specs}
    latest: dict[dg.AssetKey, dg.EventLogRecord] = {}
    for record in instance.get_asset_records(list(owner)):
        materialization = record.asset_entry.last_materialization_record
        if materialization is not None:
            latest[record.asset_entry.asset_key] = materialization
    for key, ds in owner.items():
        _note_materialization(state[ds], latest.get(key))
    executions = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(checks))
    for check_key, ds in checks.items():
        execution = executions.get(check_key)
        evaluation = execution.evaluation if execution is not None else None
        if isinstance(evaluation, dg.AssetCheckEvaluation):  # not a planned one
            state[ds].verdicts[check_key] = verdict(evaluation)
        materialization = latest.get(check_key.asset_key)
        if materialization is not None and (
            execution is None or not targets(execution, materialization)
        ):
            state[ds].settled = False
    return state


def _note_materialization(state: Recorded, record: dg.EventLogRecord | None) -> None:
    materialization = record.asset_materialization if record is not None else None
    value = materialization.metadata.get(SIGNATURE_KEY) if materialization else None
    state.signatures.add(getattr(value, "value", None))
    state.times.append(record.timestamp if record is not None else 0.0)


def targets(execution: object, materialization: dg.EventLogRecord) -> bool:
    """Whether a check execution describes this materialization (as the UI decides it)."""
    if getattr(execution, "run_id", None) == materialization.event_log_entry.run_id:
        return True
    evaluation = getattr(execution, "evaluation", None)
    target = getattr(evaluation, "target_materialization_data", None)
    return target is not None and target.storage_id == materialization.storage_id


def is_news(results: Iterable[RoleResult], recorded: Recorded, worse_factor: float) -> bool:
    """Whether some check result says something the recorded one does not."""
    for role in results:
        for check in role.checks:
            key = dg.AssetCheckKey(role.key, check.check_name or "")
            if _differs(verdict(check), recorded.verdicts.get(key), worse_factor):
                return True
    return False


def _differs(now: Verdict, before: Verdict | None, worse_factor: float) -> bool:
    if before is None or now.passed != before.passed:
        return before is not None or not now.passed
    if now.passed:
        return False
    worse = now.count > before.count and now.count >= before.count * worse_factor
    return now.severity != before.severity or worse or bool(now.items - before.items)


def plan(
    results: dict[str, list[RoleResult]],
    signatures: dict[str, str],
    recorded: dict[str, Recorded],
    worse_factor: float,
) -> Plan:
    """News (any number) and the due datasets, unsettled and least recently recorded first."""
    news = [k for k, r in results.items() if is_news(r, recorded[k], worse_factor)]
    due = [
        k
        for k in results
        if k not in news and not (recorded[k].up_to_date(signatures[k]) and recorded[k].settled)
    ]
    due.sort(key=lambda k: (recorded[k].settled, recorded[k].at, k))
    return Plan(news, due)


def dataset_events(
    results: Iterable[RoleResult],
) -> list[dg.AssetMaterialization | dg.AssetCheckEvaluation]:
    """A dataset's record: each file asset's materialization, then its check results."""
    events: list[dg.AssetMaterialization | dg.AssetCheckEvaluation] = []
    for role in results:
        events.append(dg.AssetMaterialization(asset_key=role.key, metadata=role.metadata))
        events.extend(as_evaluation(check) for check in role.checks)
    return events


def as_evaluation(check: dg.AssetCheckResult) -> dg.AssetCheckEvaluation:
    """A check result as an event a step reports itself (it may not be one of the step's)."""
    assert check.asset_key is not None and check.check_name is not None
    return dg.AssetCheckEvaluation(
        asset_key=check.asset_key,
        check_name=check.check_name,
        passed=check.passed,
        metadata=dict(check.metadata or {}),
        severity=check.severity,
        description=check.description,
    )


def summary(plan_: Plan, recorded_due: int) -> dict[str, Any]:
    """What the run recorded, as numbers for the stats_json materialization."""
    return {
        "recorded_news": dg.MetadataValue.int(len(plan_.news)),
        "recorded_due": dg.MetadataValue.int(recorded_due),
        LEFT_DUE: dg.MetadataValue.int(len(plan_.due) - recorded_due),
    }


Event = dg.AssetMaterialization | dg.AssetCheckEvaluation


def record(
    plan_: Plan,
    results: dict[str, list[RoleResult]],
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> Generator[Event, None, int]:
    """Yield the news, then due datasets until `seconds` are spent; return how many were due."""
    for key in plan_.news:
        yield from dataset_events(results[key])
    started = clock()
    done = 0
    for key in plan_.due:
        if clock() - started >= seconds:
            break
        yield from dataset_events(results[key])  # written as they are yielded: time is real
        done += 1
    return done
