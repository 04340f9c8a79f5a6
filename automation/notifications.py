"""Notification sensors: failed asset checks and stalled datasets reach people, once.

A failed check does not fail its run, so Dagster's run-failure alerts never fire for it
(dagster-io/dagster#29896). `genledger_check_notifications` reads the ASSET_CHECK_EVALUATION
events of every finished run (success, failure, cancel), asks `genledger.notify` what is news
and delivers one message per run per channel. `genledger_stall_notifications` watches the stats
JSON and file sizes. Deciding comes before sending: a tick stores its news in the state dir's
outbox (`genledger/notify/store.py`) before any channel is tried, each message's id is made from
what it reports (never the clock), and each channel's acknowledgement is recorded as it comes,
so a tick cut short or a daemon killed mid-send repeats nothing already acknowledged. What is
still failing lives in each sensor's cursor.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.event_api import RunStatusChangeEventType, RunStatusChangeRecordsFilter

from automation.ticks import tick_every
from genledger.config import Config
from genledger.notify.budget import decide_budgets
from genledger.notify.channels import channels_from_env, secrets_from_env
from genledger.notify.decide import OpenFailures, decide_run
from genledger.notify.delivery import LOG_CHANNEL, Courier, NotificationLog, log_path, now_iso
from genledger.notify.delivery import delivery_entry as _delivery_entry
from genledger.notify.model import Alert, CheckOutcome, Message, clip_examples, message_id
from genledger.notify.stall import decide_stalls, progress_from_stats, read_stats
from genledger.notify.store import DeliveryStore, store_path

CHECK_SENSOR = "genledger_check_notifications"
STALL_SENSOR = "genledger_stall_notifications"
BUDGET_SENSOR = "genledger_budget_notifications"
FINISHED: tuple[RunStatusChangeEventType, ...] = (
    dg.DagsterEventType.RUN_SUCCESS,
    dg.DagsterEventType.RUN_FAILURE,
    dg.DagsterEventType.RUN_CANCELED,
)
FETCH_LIMIT = 50  # finished runs per status per tick; the rest wait for the next tick
STALL_INTERVAL_S = 60
# The daemon evaluates sensors at most every 5 s; a tick is three indexed queries. With the file
# sensor's 5 s, a bad append reaches the webhook within 30 s (measured by the e2e suite).
CHECK_MIN_INTERVAL_S = 5


def build_notification_sensors(config: Config) -> list[dg.SensorDefinition]:
    """The check-, stall- and budget-notification sensors, all running by default."""
    check_interval = tick_every(max(CHECK_MIN_INTERVAL_S, config.dagster.sensor_interval_s))

    @dg.sensor(
        name=CHECK_SENSOR,
        minimum_interval_seconds=check_interval,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Notifies on new, worse and resolved asset-check failures of finished runs.",
    )
    def check_notifications(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        return dg.SkipReason(check_tick(context, config, os.environ))

    @dg.sensor(
        name=STALL_SENSOR,
        minimum_interval_seconds=STALL_INTERVAL_S,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Notifies when an unfinished dataset stops growing, and when it resumes.",
    )
    def stall_notifications(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        return dg.SkipReason(stall_tick(context, config, os.environ))

    @dg.sensor(
        name=BUDGET_SENSOR,
        minimum_interval_seconds=check_interval,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Notifies when the projected cost, then the cost, first exceeds a budget.",
    )
    def budget_notifications(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        return dg.SkipReason(budget_tick(context, config, os.environ))

    return [check_notifications, stall_notifications, budget_notifications]


def check_tick(context: dg.SensorEvaluationContext, config: Config, env: Mapping[str, str]) -> str:
    """One evaluation of the check sensor; returns what it saw, for the tick's skip reason."""
    state = _load(context.cursor)
    now = time.time()
    finished = _finished_runs(context.instance, state, now - config.notify.lookback_minutes * 60)
    open_failures: OpenFailures = state.setdefault("open", {})
    new: list[Message] = []
    for run_id in finished:
        outcomes = run_check_outcomes(context.instance, run_id)
        alerts, open_failures = decide_run(outcomes, open_failures, config.notify, now)
        if alerts:
            new.append(_message(("run", run_id), alerts, run_id))
    state["open"] = open_failures
    pending = _deliver(CHECK_SENSOR, state, new, config, env)
    context.update_cursor(json.dumps(state, separators=(",", ":")))
    return (
        f"{len(finished)} finished run(s) read, {len(new)} message(s) decided, "
        f"{len(open_failures)} check(s) failing, {pending} message(s) awaiting redelivery"
    )


def stall_tick(context: dg.SensorEvaluationContext, config: Config, env: Mapping[str, str]) -> str:
    """One evaluation of the stall sensor; returns what it saw."""
    state = _load(context.cursor)
    stats = read_stats(config.stats_path)
    new: list[Message] = []
    if stats is not None:
        local = config.data_root if isinstance(config.data_root, Path) else None
        progress = progress_from_stats(stats, local)
        before = state.get("stall", {})
        alerts, state["stall"] = decide_stalls(progress, before, config.notify, time.time())
        if alerts:
            # the quiet spell's start names the news: a tick re-decided after a crash keeps its id
            parts = (
                f"{a.dataset}:{a.kind}:{before.get(a.dataset, {}).get('since')}" for a in alerts
            )
            new.append(_message(("stall", *parts), alerts, None))
    pending = _deliver(STALL_SENSOR, state, new, config, env)
    context.update_cursor(json.dumps(state, separators=(",", ":")))
    stalled = sorted(k for k, v in state.get("stall", {}).items() if v.get("stalled"))
    seen = "no stats JSON yet" if stats is None else f"stalled: {', '.join(stalled) or 'none'}"
    return f"{seen}; {len(new)} message(s) decided, {pending} awaiting redelivery"


def budget_tick(context: dg.SensorEvaluationContext, config: Config, env: Mapping[str, str]) -> str:
    """One evaluation of the budget sensor; returns what it saw."""
    if config.budget.run_usd is None and not config.budgets:
        return 'no budget configured ([budget] run_usd, [datasets."X"] budget_usd)'
    state = _load(context.cursor)
    stats = read_stats(config.stats_path)
    new: list[Message] = []
    if stats is not None:
        alerts, state["budget"] = decide_budgets(config, stats, state.get("budget", {}))
        if alerts:
            amounts = state["budget"]
            parts = (f"{a.dataset}:{a.kind}:{amounts[a.dataset]['usd']}" for a in alerts)
            new.append(_message(("budget", *parts), alerts, None))
    pending = _deliver(BUDGET_SENSOR, state, new, config, env)
    context.update_cursor(json.dumps(state, separators=(",", ":")))
    over = sorted(k for k, v in state.get("budget", {}).items() if v.get("level"))
    seen = "no stats JSON yet" if stats is None else f"over budget: {', '.join(over) or 'none'}"
    return f"{seen}; {len(new)} message(s) decided, {pending} awaiting redelivery"


def run_check_outcomes(instance: dg.DagsterInstance, run_id: str) -> list[CheckOutcome]:
    """The check evaluations recorded in one run, in order, as plain outcomes."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ).records
    outcomes = []
    for record in records:
        event = record.event_log_entry.dagster_event
        evaluation = event.event_specific_data if event is not None else None
        if isinstance(evaluation, dg.AssetCheckEvaluation):
            outcomes.append(outcome_from_evaluation(evaluation, run_id))
    return outcomes


def outcome_from_evaluation(evaluation: dg.AssetCheckEvaluation, run_id: str) -> CheckOutcome:
    """Reduce a Dagster check evaluation to the fields of the shared metadata contract."""
    meta = {k: getattr(v, "value", v) for k, v in evaluation.metadata.items()}
    path = evaluation.asset_key.path
    examples = str(meta.get("examples") or "").splitlines()
    return CheckOutcome(
        dataset=str(meta.get("dataset") or (path[0] if len(path) > 1 else "/".join(path))),
        asset_key="/".join(path),
        check=evaluation.check_name,
        passed=evaluation.passed,
        severity=str(evaluation.severity.value).lower(),
        failure_count=_int(meta.get("failure_count"), None) or 0,
        rows_checked=_int(meta.get("rows_checked"), None),
        examples=clip_examples([_example(e) for e in examples if e.strip()]),
        run_id=run_id,
        reasons=str(meta.get("detail") or "")[:300] or _reasons(meta.get("reasons")),
        items=_items(meta.get("items")),
    )


def _items(value: Any) -> tuple[str, ...]:
    """The `items` metadata (a JSON list of names), if any."""
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _reasons(value: Any) -> str:
    """`{"failed_requests": {"errored": 3}}` as `errored 3` (bounded, one line)."""
    if not isinstance(value, dict):
        return ""
    parts = [
        f"{reason} {count}"
        for counts in value.values()
        if isinstance(counts, dict)
        for reason, count in counts.items()
    ]
    return ", ".join(parts)[:200]


def _example(line: str) -> str:
    """A markdown list item `- `file:line` reason` as plain `file:line reason`."""
    return line.strip().lstrip("-*• ").replace("`", "").strip()


def _int(value: Any, default: int | None) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _finished_runs(instance: dg.DagsterInstance, state: dict[str, Any], since: float) -> list[str]:
    """Run ids that finished after the cursor (first tick: within the lookback), oldest first."""
    after: dict[str, int] = state.setdefault("after", {})
    found: list[tuple[int, str]] = []
    for event_type in FINISHED:
        key = event_type.value
        records_filter = (
            RunStatusChangeRecordsFilter(event_type=event_type, after_storage_id=after[key])
            if key in after
            else RunStatusChangeRecordsFilter(event_type=event_type, after_timestamp=since)
        )
        records = instance.fetch_run_status_changes(
            records_filter, limit=FETCH_LIMIT, ascending=True
        ).records
        found.extend((r.storage_id, r.event_log_entry.run_id) for r in records)
        if records:
            after[key] = max(r.storage_id for r in records)
        elif key not in after:
            latest = instance.fetch_run_status_changes(event_type, limit=1).records
            after[key] = latest[0].storage_id if latest else 0
    return list(dict.fromkeys(run_id for _, run_id in sorted(found)))


def _message(id_parts: tuple[str, ...], alerts: list[Alert], run_id: str | None) -> Message:
    return Message(
        id=message_id(*id_parts), created_at=now_iso(), alerts=tuple(alerts), run_id=run_id
    )


def _deliver(
    sensor: str, state: dict[str, Any], new: list[Message], config: Config, env: Mapping[str, str]
) -> int:
    """Store the new messages, then deliver every open one; return how many still wait."""
    secrets = secrets_from_env(env)
    log = NotificationLog(log_path(config), secrets)
    problems: list[str] = []
    channels = channels_from_env(env, config.notify, problems)
    for problem in problems:
        log.write({"event": "config_error", "error": problem})
    store = DeliveryStore(store_path(config.resolved_state_dir()))
    courier = Courier(
        channels, log, retries=config.notify.retries, backoff_s=config.notify.backoff_s, store=store
    )
    legacy = [Message.from_dict(m) for m in state.get("outbox", [])]  # a cursor's outbox (v1)
    try:
        waiting = _deliver_stored(sensor, store, courier, new, legacy)
    except (sqlite3.Error, OSError) as exc:
        log.write({"event": "store_error", "error": f"{type(exc).__name__}: {exc}"})
    else:
        state.pop("outbox", None)
        return waiting
    courier.store = None  # no durable outbox: the cursor keeps what is pending, as before
    pending = courier.post(new, legacy)
    state["outbox"] = [m.to_dict() for m in pending]
    return len(pending)


def _deliver_stored(
    sensor: str,
    store: DeliveryStore,
    courier: Courier,
    new: list[Message],
    legacy: list[Message],
) -> int:
    """Keep the new messages (and a v1 cursor's outbox) in the store, then deliver what is due."""
    names = [channel.name for channel in courier.channels]
    for message in store.keep(sensor, new, names):  # stored before anything is sent
        courier.log.notification(message)
        courier.log.write(_delivery_entry(message, LOG_CHANNEL, True, 1, None))
    for message in legacy:
        store.keep(sensor, [message], message.pending)
    due = store.due(sensor)
    if not due:
        return 0
    queue = courier.known_channels_only(due, names)
    remaining = {m.id: m for m in courier.deliver(queue)}
    for message in due:
        if message.id in remaining:
            store.settle(remaining[message.id], None)  # one more round spent
        else:
            store.settle(message, "done")  # acknowledged everywhere, or dropped (logged)
    return len(remaining)


def _load(cursor: str | None) -> dict[str, Any]:
    if not cursor:
        return {"v": 1}
    try:
        state = json.loads(cursor)
    except ValueError:
        return {"v": 1}
    return state if isinstance(state, dict) else {"v": 1}
