"""What is news among a run's check outcomes, given what people were already told."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from genledger.config import NotifySettings
from genledger.notify.model import SEVERITY_RANK, Alert, CheckOutcome, Kind

OpenFailures = dict[str, dict[str, Any]]  # check key -> what the last alert said


def latest_per_check(outcomes: Iterable[CheckOutcome]) -> list[CheckOutcome]:
    """The last evaluation of each check in a run (a run may evaluate a check twice)."""
    latest: dict[str, CheckOutcome] = {}
    for outcome in outcomes:
        latest.pop(outcome.key, None)
        latest[outcome.key] = outcome
    return list(latest.values())


def decide_run(
    outcomes: Iterable[CheckOutcome],
    open_failures: OpenFailures,
    settings: NotifySettings,
    now: float,
) -> tuple[list[Alert], OpenFailures]:
    """Alerts for one finished run and the open failures after it (inputs are not changed)."""
    still_open = {key: dict(value) for key, value in open_failures.items()}
    alerts: list[Alert] = []
    for outcome in latest_per_check(outcomes):
        alert = _decide_one(outcome, still_open, settings, now)
        if alert is not None:
            alerts.append(alert)
    return alerts, still_open


def counts_as_failing(outcome: CheckOutcome, settings: NotifySettings) -> bool:
    """A failed check at or above the configured minimum severity."""
    floor = SEVERITY_RANK.get(settings.min_severity, 1)
    return not outcome.passed and SEVERITY_RANK.get(outcome.severity, 2) >= floor


def _decide_one(
    outcome: CheckOutcome, still_open: OpenFailures, settings: NotifySettings, now: float
) -> Alert | None:
    before = still_open.get(outcome.key)
    if not counts_as_failing(outcome, settings):
        if before is None:
            return None
        del still_open[outcome.key]
        return _alert(Kind.RESOLVED, outcome, before, failure_count=0)
    new_items = _new_items(outcome, before)
    kind = _failing_kind(outcome, before, settings, now)
    if kind is None and new_items:
        kind = Kind.WORSE  # each new unrecognised file is news once, however many there are
    if kind is None:
        assert before is not None
        before["severity"] = outcome.severity  # a milder failure resets the bar for "worse"
        return None
    still_open[outcome.key] = {
        "severity": outcome.severity,
        "count": outcome.failure_count,
        "sent_at": now,
        "dataset": outcome.dataset,
    }
    if outcome.items:
        still_open[outcome.key]["items"] = sorted(outcome.items)
    alert = _alert(kind, outcome, before, failure_count=outcome.failure_count)
    if new_items and before is not None:
        alert = replace(alert, examples=tuple(f"{item} (new)" for item in new_items))
    return alert


def _new_items(outcome: CheckOutcome, before: dict[str, Any] | None) -> list[str]:
    """Items of a failing check no earlier alert named."""
    told = set(before.get("items", [])) if before is not None else set()
    return sorted(set(outcome.items) - told)


def _failing_kind(
    outcome: CheckOutcome, before: dict[str, Any] | None, settings: NotifySettings, now: float
) -> Kind | None:
    if before is None:
        return Kind.FAILING
    severity_up = SEVERITY_RANK.get(outcome.severity, 2) > SEVERITY_RANK.get(before["severity"], 2)
    told = int(before["count"])
    grew = outcome.failure_count > told and (
        told == 0 or outcome.failure_count >= told * settings.worse_factor
    )
    if severity_up or grew:
        return Kind.WORSE
    reminder_s = settings.reminder_minutes * 60
    if reminder_s > 0 and now - float(before["sent_at"]) >= reminder_s:
        return Kind.REMINDER
    return None


def _alert(
    kind: Kind, outcome: CheckOutcome, before: dict[str, Any] | None, failure_count: int
) -> Alert:
    return Alert(
        kind=kind,
        dataset=outcome.dataset,
        severity=outcome.severity if kind != Kind.RESOLVED else str(before and before["severity"]),
        asset_key=outcome.asset_key,
        check=outcome.check,
        failure_count=failure_count,
        previous_count=int(before["count"]) if before else None,
        rows_checked=outcome.rows_checked,
        examples=outcome.examples if kind != Kind.RESOLVED else (),
        run_id=outcome.run_id,
        detail=outcome.reasons if kind != Kind.RESOLVED else "",
    )
