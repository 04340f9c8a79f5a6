"""Delivery against real servers: retries, redelivery on a later tick, isolation, no secrets."""

from __future__ import annotations

import json
from pathlib import Path

from genledger.config import NotifySettings
from genledger.notify.channels import WebhookChannel, channels_from_env, secrets_from_env
from genledger.notify.delivery import Courier, NotificationLog
from genledger.notify.model import Alert, Kind, Message
from genledger.notify.render import json_body

EXAMPLE = "raw_responses.jsonl:7 no completion-token field in any known format"


def a_message(run_id: str = "run-1") -> Message:
    alert = Alert(
        kind=Kind.FAILING,
        dataset="error missing.tokens",
        severity="error",
        asset_key="error_missing_tokens/raw_responses",
        check="responses_have_valid_token_counts",
        failure_count=40,
        rows_checked=40,
        examples=(EXAMPLE,),
        run_id=run_id,
    )
    return Message(
        id=f"m-{run_id}", created_at="2026-01-01T00:00:00Z", alerts=(alert,), run_id=run_id
    )


def log_entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_webhook_answering_500_twice_then_200_delivers_exactly_once(
    start_server, tmp_path: Path
) -> None:
    server = start_server("http", {"/hook": [500, 500]})
    log = NotificationLog(tmp_path / "n.jsonl")
    courier = Courier([WebhookChannel(server.url("/hook"))], log, retries=3, backoff_s=0.01)
    assert courier.post([a_message()], []) == []
    assert [r["status"] for r in server.received()] == [500, 500, 200]
    assert server.accepted("/hook") == [json_body(a_message(), None)]
    deliveries = [e for e in log_entries(log.path) if e["event"] == "delivery"]
    assert [(d["channel"], d["ok"], d["attempts"]) for d in deliveries] == [
        ("log", True, 1),
        ("webhook", True, 3),
    ]


def test_a_message_still_undelivered_after_the_retries_is_kept_and_sent_on_the_next_tick(
    start_server, tmp_path: Path
) -> None:
    server = start_server("http", {"/hook": [503, 503]})
    courier = Courier(
        [WebhookChannel(server.url("/hook"))], NotificationLog(tmp_path / "n.jsonl"), 1, 0.01
    )
    pending = courier.post([a_message()], [])
    assert [(m.id, m.pending) for m in pending] == [("m-run-1", ("webhook",))]
    assert server.accepted("/hook") == []
    assert courier.post([], pending) == []
    assert len(server.accepted("/hook")) == 1
    assert courier.post([], []) == []
    assert len(server.accepted("/hook")) == 1


def test_a_dead_smtp_server_does_not_stop_the_webhook(
    http_server, dead_port: int, tmp_path: Path
) -> None:
    env = {
        "GENLEDGER_WEBHOOK_URL": http_server.url("/hook"),
        "GENLEDGER_SMTP_HOST": "127.0.0.1",
        "GENLEDGER_SMTP_PORT": str(dead_port),
        "GENLEDGER_SMTP_TLS": "none",
        "GENLEDGER_EMAIL_TO": "ops@example.com",
    }
    channels = channels_from_env(env, NotifySettings())
    assert [c.name for c in channels] == ["webhook", "email"]
    log = NotificationLog(tmp_path / "n.jsonl")
    pending = Courier(channels, log, retries=1, backoff_s=0.01).post([a_message()], [])
    assert len(http_server.accepted("/hook")) == 1
    assert [m.pending for m in pending] == [("email",)]
    failed = [e for e in log_entries(log.path) if e["event"] == "delivery" and not e["ok"]]
    assert [(e["channel"], e["attempts"], e["will_retry"]) for e in failed] == [("email", 2, True)]


def test_email_and_slack_name_dataset_check_count_and_an_example(
    start_server, smtp_server, tmp_path: Path
) -> None:
    slack = start_server("http")
    env = {
        "GENLEDGER_SLACK_WEBHOOK_URL": slack.url("/services/T/B/X"),
        "GENLEDGER_SMTP_HOST": "127.0.0.1",
        "GENLEDGER_SMTP_PORT": str(smtp_server.port),
        "GENLEDGER_SMTP_TLS": "none",
        "GENLEDGER_EMAIL_TO": "ops@example.com",
        "GENLEDGER_EMAIL_FROM": "genledger@example.com",
        "GENLEDGER_UI_URL": "http://127.0.0.1:3000",
    }
    courier = Courier(channels_from_env(env, NotifySettings()), NotificationLog(tmp_path / "n"))
    assert courier.post([a_message()], []) == []
    alert = a_message().alerts[0]
    [slack_body] = slack.accepted("/services/T/B/X")
    [mail] = smtp_server.received()
    assert mail["to"] == ["ops@example.com"]
    for text in (slack_body["text"], mail["data"]):
        count = f"{alert.failure_count} of {alert.rows_checked} rows"
        for part in (alert.dataset, alert.check, count, EXAMPLE):
            assert part in text.replace("=\r\n", "")
    assert "http://127.0.0.1:3000/assets/error_missing_tokens/raw_responses" in slack_body["text"]


def test_secrets_appear_in_no_log_line_and_no_message(
    start_server, dead_port: int, tmp_path: Path
) -> None:
    server = start_server("http", {"/hook/T0KEN-s3cret-abc": [500] * 10})
    env = {
        "GENLEDGER_WEBHOOK_URL": server.url("/hook/T0KEN-s3cret-abc"),
        "GENLEDGER_SLACK_WEBHOOK_URL": f"http://127.0.0.1:{dead_port}/services/XOXB-sl4ck-tok",
        "GENLEDGER_SMTP_HOST": "127.0.0.1",
        "GENLEDGER_SMTP_PORT": str(dead_port),
        "GENLEDGER_SMTP_TLS": "none",
        "GENLEDGER_SMTP_USER": "mailer",
        "GENLEDGER_SMTP_PASSWORD": "pa55-w0rd-xyz",
        "GENLEDGER_EMAIL_TO": "ops@example.com",
    }
    log = NotificationLog(tmp_path / "n.jsonl", secrets_from_env(env))
    courier = Courier(channels_from_env(env, NotifySettings()), log, retries=1, backoff_s=0.01)
    pending = courier.post([a_message()], [])
    assert {n for m in pending for n in m.pending} == {"webhook", "slack", "email"}
    written = log.path.read_text() + "".join(r["body"] for r in server.received())
    assert EXAMPLE in written
    for secret in ("T0KEN-s3cret-abc", "XOXB-sl4ck-tok", "pa55-w0rd-xyz"):
        assert secret not in written
    assert all(json.loads(line) for line in log.path.read_text().splitlines())
