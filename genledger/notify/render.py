"""How a message reads: the generic JSON body, Slack text, and an email subject and body."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from genledger.notify.model import BUDGET_KINDS, Alert, Kind, Message

_VERB = {
    Kind.FAILING: "failing",
    Kind.WORSE: "failing worse",
    Kind.REMINDER: "still failing",
    Kind.RESOLVED: "resolved",
    Kind.STALLED: "stalled",
    Kind.RESUMED: "resumed",
    Kind.PROJECTED_OVER_BUDGET: "projected over budget",
    Kind.OVER_BUDGET: "over budget",
}


# Slack's and Mattermost's control characters, and the words that notify a whole channel
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_MENTION = re.compile(r"@(?=(channel|here|all|everyone)\b)", re.IGNORECASE)
_WORD_JOINER = "\u2060"  # invisible, and breaks the mention


def slack_escape(value: str) -> str:
    """`value` as Slack and Mattermost show it literally: `&<>` escaped, mass mentions defused."""
    return _MENTION.sub("@" + _WORD_JOINER, value.translate(_SLACK_ESCAPES))


def asset_link(ui_url: str | None, asset_key: str) -> str | None:
    """The asset's page (checks tab) in the Dagster UI, when its base URL is known."""
    if not ui_url or not asset_key:
        return None
    path = "/".join(quote(part, safe="") for part in asset_key.split("/"))
    return f"{ui_url.rstrip('/')}/assets/{path}?view=checks"


def run_link(ui_url: str | None, run_id: str | None) -> str | None:
    """The run's page in the Dagster UI."""
    if not ui_url or not run_id:
        return None
    return f"{ui_url.rstrip('/')}/runs/{quote(run_id, safe='')}"


def title(message: Message) -> str:
    """One line saying what happened, for a subject or a heading."""
    bad = [a for a in message.alerts if a.kind != Kind.RESOLVED and a.kind != Kind.RESUMED]
    datasets = ", ".join(message.datasets)
    if not bad:
        return f"genledger: resolved — {datasets}"
    worst = "ERROR" if any(a.severity == "error" for a in bad) else "WARN"
    what = "stalled" if all(a.kind == Kind.STALLED for a in bad) else "checks failing"
    if all(a.kind in BUDGET_KINDS for a in bad):
        what = "over budget"
    return f"genledger {worst}: {what} — {datasets}"


def json_body(message: Message, ui_url: str | None) -> dict[str, Any]:
    """The generic webhook body: top-level summary plus one entry per alert."""
    alerts = [_alert_dict(a, ui_url) for a in message.alerts]
    failing = [a for a in message.alerts if a.kind not in (Kind.RESOLVED, Kind.RESUMED)]
    severities = {a.severity for a in failing}
    return {
        "source": "genledger",
        "id": message.id,
        "created_at": message.created_at,
        "title": title(message),
        "status": "alert" if failing else "resolved",
        "severity": "error" if "error" in severities else ("warn" if failing else "info"),
        "datasets": message.datasets,
        "checks": list(dict.fromkeys(a.check for a in message.alerts if a.check)),
        "failure_count": sum(a.failure_count for a in failing),
        "run_id": message.run_id,
        "run_link": run_link(ui_url, message.run_id),
        "alerts": alerts,
        "text": text(message, ui_url),
    }


def _alert_dict(alert: Alert, ui_url: str | None) -> dict[str, Any]:
    return {
        "kind": str(alert.kind),
        "dataset": alert.dataset,
        "asset_key": alert.asset_key or None,
        "check": alert.check,
        "severity": alert.severity,
        "failure_count": alert.failure_count,
        "previous_count": alert.previous_count,
        "rows_checked": alert.rows_checked,
        "examples": list(alert.examples),
        "detail": alert.detail or None,
        "run_id": alert.run_id,
        "link": asset_link(ui_url, alert.asset_key),
    }


def alert_line(alert: Alert) -> str:
    """One readable line per alert."""
    where = f"{alert.dataset} · {alert.check}" if alert.check else alert.dataset
    verb = _VERB[alert.kind]
    if alert.kind in (Kind.STALLED, Kind.RESUMED):
        return f"{where}: {verb} — {alert.detail}"
    if alert.kind in BUDGET_KINDS:
        return f"{where}: {verb} [{alert.severity.upper()}] — {alert.detail}"
    if alert.kind == Kind.RESOLVED:
        return f"{where}: {verb} (was {alert.previous_count} failing)"
    was = f", was {alert.previous_count}" if alert.kind == Kind.WORSE else ""
    rows = f" of {alert.rows_checked} rows" if alert.rows_checked is not None else ""
    why = f" ({alert.detail})" if alert.detail else ""  # failing rows by reason
    return f"{where}: {verb} [{alert.severity.upper()}] — {alert.failure_count}{rows}{was}{why}"


def slack_text(message: Message, ui_url: str | None) -> str:
    """The readable text with every name and example escaped for Slack and Mattermost."""
    return slack_escape(text(message, ui_url))


def text(message: Message, ui_url: str | None) -> str:
    """Plain text for Slack and email: one line per alert, its examples, links."""
    lines = [title(message)]
    for alert in message.alerts:
        lines.append(f"• {alert_line(alert)}")
        lines.extend(f"    {example}" for example in alert.examples)
        link = asset_link(ui_url, alert.asset_key)
        if link:
            lines.append(f"    {link}")
    run = run_link(ui_url, message.run_id)
    if run:
        lines.append(f"run: {run}")
    elif message.run_id:
        lines.append(f"run id: {message.run_id}")
    return "\n".join(lines)
