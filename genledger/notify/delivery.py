"""Delivery that loses nothing: retries with backoff, an outbox kept between ticks, a JSONL log."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from genledger.config import Config
from genledger.notify.channels import Channel
from genledger.notify.model import Message
from genledger.notify.redact import redact
from genledger.notify.render import title

LOG_NAME = "notifications.jsonl"
MAX_OUTBOX = 100  # messages kept for redelivery; beyond that the oldest are dropped, logged
LOG_CHANNEL = "log"


def log_path(config: Config) -> Path:
    """Where the local notification log goes: configured, else in the state dir."""
    if config.notify.log_path:
        return Path(config.notify.log_path).expanduser()
    return config.resolved_state_dir() / LOG_NAME


def now_iso() -> str:
    """The current UTC time, ISO-8601."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class NotificationLog:
    """An append-only JSONL record of every notification and every delivery result."""

    path: Path
    secrets: Sequence[str] = ()

    def write(self, entry: dict[str, Any]) -> None:
        """Append one entry, secrets masked; a log that cannot be written never stops delivery."""
        line = redact(
            json.dumps({"ts": now_iso(), **entry}, ensure_ascii=False), self.secrets, urls=False
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        except OSError:
            pass

    def notification(self, message: Message) -> None:
        """Record a new message (the news itself)."""
        self.write(
            {
                "event": "notification",
                "id": message.id,
                "title": title(message),
                "run_id": message.run_id,
                "datasets": message.datasets,
                "alerts": [a.to_dict() for a in message.alerts],
            }
        )


@dataclass
class Courier:
    """Delivers messages to every channel, keeping what could not be delivered."""

    channels: Sequence[Channel]
    log: NotificationLog
    retries: int = 3
    backoff_s: float = 0.5
    budget_s: float = 40.0  # stay well inside Dagster's sensor tick timeout
    sleep: Callable[[float], None] = time.sleep

    def post(self, new: Sequence[Message], outbox: Sequence[Message]) -> list[Message]:
        """Log and deliver the new messages and retry the outbox; return what is still pending."""
        names = [channel.name for channel in self.channels]
        for message in new:
            self.log.notification(message)
            self.log.write(_delivery(message, LOG_CHANNEL, True, 1, None))
        queue = [replace(m, pending=tuple(names)) for m in new]
        queue = [*self._known_channels_only(outbox, names), *queue]
        deadline = time.monotonic() + self.budget_s
        with ThreadPoolExecutor(max_workers=max(1, len(self.channels))) as pool:
            done = list(pool.map(lambda c: self._drain(c, queue, deadline), self.channels))
        delivered = {(name, mid) for name, ids in zip(names, done, strict=True) for mid in ids}
        remaining = []
        for message in queue:
            left = tuple(n for n in message.pending if (n, message.id) not in delivered)
            if left:
                remaining.append(replace(message, pending=left, tries=message.tries + 1))
        return self._bounded(remaining)

    def _known_channels_only(self, outbox: Sequence[Message], names: list[str]) -> list[Message]:
        kept = []
        for message in outbox:
            gone = [n for n in message.pending if n not in names]
            for name in gone:
                self.log.write(_delivery(message, name, False, 0, "channel no longer configured"))
            left = tuple(n for n in message.pending if n in names)
            if left:
                kept.append(replace(message, pending=left))
        return kept

    def _drain(self, channel: Channel, queue: list[Message], deadline: float) -> set[str]:
        """Deliver this channel's share in order; after one message fails, defer the rest."""
        delivered: set[str] = set()
        for message in queue:
            if channel.name not in message.pending:
                continue
            if not self._send_with_retries(channel, message, deadline):
                break
            delivered.add(message.id)
        return delivered

    def _send_with_retries(self, channel: Channel, message: Message, deadline: float) -> bool:
        error = None
        attempts = 0
        for attempt in range(self.retries + 1):
            if attempt and time.monotonic() + self._delay(attempt) > deadline:
                break
            if attempt:
                self.sleep(self._delay(attempt))
            attempts += 1
            try:
                channel.send(message)
            except Exception as exc:  # any channel bug must not stop the others
                error = f"{type(exc).__name__}: {exc}"
                continue
            self.log.write(_delivery(message, channel.name, True, attempts, None))
            return True
        self.log.write(
            _delivery(message, channel.name, False, attempts, redact(error or "", self.log.secrets))
        )
        return False

    def _delay(self, attempt: int) -> float:
        return self.backoff_s * 2 ** (attempt - 1)

    def _bounded(self, remaining: list[Message]) -> list[Message]:
        for message in remaining[:-MAX_OUTBOX] if len(remaining) > MAX_OUTBOX else []:
            self.log.write(
                _delivery(message, ",".join(message.pending), False, 0, "dropped: outbox full")
            )
        return remaining[-MAX_OUTBOX:]


def _delivery(
    message: Message, channel: str, ok: bool, attempts: int, error: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "event": "delivery",
        "id": message.id,
        "channel": channel,
        "ok": ok,
        "attempts": attempts,
        "round": message.tries + 1,
    }
    if error:
        entry["error"] = error
        entry["will_retry"] = error != "dropped: outbox full" and "no longer" not in error
    return entry
