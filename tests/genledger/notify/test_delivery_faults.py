"""Delivery against faulty receivers on 127.0.0.1: a status line trickling in byte by byte, a
server that never answers, an http→https move (301), and Slack text that would ping a channel.

Each attempt and each call is bounded as a whole: the bounds below are the courier's deadlines
(what it promises), with room for a busy machine, not a measure of speed.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genledger.notify.channels import SlackChannel, WebhookChannel
from genledger.notify.delivery import Courier, NotificationLog
from genledger.notify.model import Alert, Kind, Message
from genledger.notify.render import json_body, slack_escape
from genledger.notify.store import DeliveryStore

ATTEMPT_S, BUDGET_S = 2.0, 5.0
SLACK_RULES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
}  # api.slack.com/reference/surfaces/formatting
MASS_MENTION = re.compile(r"<!(channel|here|everyone)|@(channel|here|all|everyone)\b", re.I)


def a_message(dataset: str = "ds", example: str = "raw_responses.jsonl:7 no count") -> Message:
    alert = Alert(
        kind=Kind.FAILING,
        dataset=dataset,
        severity="error",
        asset_key="ds/raw_responses",
        check="responses_have_valid_token_counts",
        failure_count=3,
        rows_checked=40,
        examples=(example,),
        run_id="run-1",
    )
    return Message(id="m-1", created_at="2026-01-01T00:00:00Z", alerts=(alert,), run_id="run-1")


def courier(channels: list, tmp_path: Path, store: DeliveryStore | None = None) -> Courier:
    log = NotificationLog(tmp_path / "n.jsonl")
    return Courier(
        channels,
        log,
        retries=3,
        backoff_s=0.01,
        attempt_s=ATTEMPT_S,
        budget_s=BUDGET_S,
        store=store,
    )


def failures(tmp_path: Path) -> list[dict]:
    lines = (tmp_path / "n.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "delivery" and not e["ok"]]


@pytest.mark.parametrize("fault", ["slow", "silent"])
def test_a_slow_or_silent_webhook_holds_up_neither_slack_nor_the_tick(
    start_server, tmp_path: Path, fault: str
) -> None:
    bad = start_server("http", {"/hook": [fault] * 10})
    good = start_server("http")
    channels = [WebhookChannel(bad.url("/hook")), SlackChannel(good.url("/slack"))]
    started = time.monotonic()
    pending = courier(channels, tmp_path).post([a_message()], [])
    took = time.monotonic() - started
    assert took < BUDGET_S + 3  # the call's deadline, whatever the webhook does
    assert len(good.accepted("/slack")) == 1
    assert [(m.id, m.pending) for m in pending] == [("m-1", ("webhook",))]
    assert len(bad.received()) >= 1  # it was tried, and given up on, not skipped
    [failed] = failures(tmp_path)
    assert failed["channel"] == "webhook" and "no answer within" in failed["error"]


def test_one_attempt_ends_at_its_deadline_even_while_bytes_keep_coming(
    start_server, tmp_path: Path
) -> None:
    bad = start_server("http", {"/hook": ["slow"] * 10})
    single = Courier(
        [WebhookChannel(bad.url("/hook"))],
        NotificationLog(tmp_path / "n.jsonl"),
        retries=0,
        attempt_s=ATTEMPT_S,
        budget_s=60,
    )
    started = time.monotonic()
    assert single.post([a_message()], [])[0].pending == ("webhook",)
    assert time.monotonic() - started < ATTEMPT_S + 3  # not 17 bytes at 3 s each


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_a_failed_delivery_and_never_a_bodiless_get(
    start_server, tmp_path: Path, status: int
) -> None:
    server = start_server("http", {"/hook": [status] * 4})  # every attempt of a tick
    pending = courier([WebhookChannel(server.url("/hook"))], tmp_path).post([a_message()], [])
    assert [m.pending for m in pending] == [("webhook",)]
    assert [(r["method"], r["path"]) for r in server.received()][:1] == [("POST", "/hook")]
    assert all(r["method"] == "POST" for r in server.received())
    assert all(r["path"] == "/hook" for r in server.received())
    [failed] = failures(tmp_path)
    assert failed["error"].startswith(f"DeliveryError: HTTP {status}")
    # the answer changes (the URL is fixed, or the receiver stops redirecting): delivered then
    assert courier([WebhookChannel(server.url("/hook"))], tmp_path).post([], pending) == []
    assert server.accepted("/hook") == [json_body(a_message(), None)]


def test_slack_text_escapes_names_and_examples_and_pings_nobody(
    start_server, tmp_path: Path
) -> None:
    dataset = "gen <!channel> @here & @all"
    example = "raw.jsonl:3 <https://evil.example/login|Re-authenticate here> @channel"
    server = start_server("http")
    message = a_message(dataset, example)
    assert courier([SlackChannel(server.url("/slack"))], tmp_path).post([message], []) == []
    [body] = server.accepted("/slack")
    text = body["text"]
    assert not MASS_MENTION.search(text)
    assert "<" not in text and ">" not in text
    assert "gen &lt;!channel&gt;" in text and "&amp;" in text
    assert "&lt;https://evil.example/login|Re-authenticate here&gt;" in text


PIECES = ["a", "&", "<", ">", "@", "!", " ", "\n", "here", "Channel", "all", "everyone", "amp;"]


@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_slack_escaping_follows_the_rules_and_defuses_every_mass_mention(value: str) -> None:
    escaped = slack_escape(value)
    assert "<" not in escaped and ">" not in escaped
    assert not MASS_MENTION.search(escaped)
    expected = "".join(SLACK_RULES.get(c, c) for c in value)
    assert escaped.replace("\u2060", "") == expected  # only the rules' replacements, and joiners


def test_a_channel_that_acknowledged_is_never_sent_to_again_through_the_store(
    start_server, tmp_path: Path
) -> None:
    server = start_server("http")
    store = DeliveryStore(tmp_path / "s.sqlite")
    message = replace(a_message(), pending=("webhook",))
    assert courier([WebhookChannel(server.url("/hook"))], tmp_path, store).deliver([message]) == []
    assert store.was_delivered("m-1", "webhook")
    again = courier([WebhookChannel(server.url("/hook"))], tmp_path, DeliveryStore(store.path))
    assert again.deliver([message]) == []
    assert len(server.accepted("/hook")) == 1


def test_a_channel_that_failed_rests_so_later_ticks_do_not_wait_on_it_again(
    start_server, tmp_path: Path
) -> None:
    import sqlite3

    bad = start_server("http", {"/hook": ["silent"] * 10})
    good = start_server("http")
    store = DeliveryStore(tmp_path / "s.sqlite")
    channels = [WebhookChannel(bad.url("/hook")), SlackChannel(good.url("/slack"))]
    first = replace(a_message(), pending=("webhook", "slack"))
    assert courier(channels, tmp_path, store).deliver([first])[0].pending == ("webhook",)
    tried = len(bad.received())
    second = replace(a_message(), id="m-2", pending=("webhook", "slack"))
    started = time.monotonic()
    left = courier(channels, tmp_path, store).deliver([first, second])
    assert time.monotonic() - started < ATTEMPT_S  # the resting channel was not waited on
    assert [m.id for m in left] == ["m-1", "m-2"] and all(m.pending == ("webhook",) for m in left)
    assert len(bad.received()) == tried and len(good.accepted("/slack")) == 2
    with sqlite3.connect(store.path) as db:  # the rest is over
        db.execute("UPDATE resting SET until = 0")
    courier(channels, tmp_path, store).deliver(left)
    assert len(bad.received()) > tried
