"""Delivery that loses nothing and waits for nobody: every channel at once, each attempt and
each call under an overall deadline, retries with backoff, a durable outbox, a JSONL log."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Coroutine, Sequence
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
from genledger.notify.store import MAX_OPEN, DeliveryStore

LOG_NAME = "notifications.jsonl"
MAX_OUTBOX = MAX_OPEN  # messages kept for redelivery; beyond that the oldest are dropped, logged
ATTEMPT_S = 10.0  # one attempt, whole: a status line trickling in byte by byte still ends here
BUDGET_S = 20.0  # one call (a sensor tick's delivery): well inside Dagster's 60 s tick deadline
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
    """Delivers messages to every channel at once, each send under an overall deadline.

    Every attempt is bounded as a whole (`attempt_s`: connecting, sending and the whole answer,
    however slowly it trickles in) and so is the call (`budget_s`); a channel that is slow or
    silent costs its own share only. With a `store`, each `(message id, channel)` is looked up
    before sending and recorded the moment the channel accepts it.
    """

    channels: Sequence[Channel]
    log: NotificationLog
    retries: int = 3
    backoff_s: float = 0.5
    attempt_s: float = ATTEMPT_S
    budget_s: float = BUDGET_S
    store: DeliveryStore | None = None

    def post(self, new: Sequence[Message], outbox: Sequence[Message]) -> list[Message]:
        """Log and deliver the new messages and retry the outbox; return what is still pending."""
        names = [channel.name for channel in self.channels]
        for message in new:
            self.log.notification(message)
            self.log.write(delivery_entry(message, LOG_CHANNEL, True, 1, None))
        queue = [replace(m, pending=tuple(names)) for m in new]
        return self.deliver([*self.known_channels_only(outbox, names), *queue])

    def deliver(self, queue: Sequence[Message]) -> list[Message]:
        """Send each message to the channels it awaits; return those still awaiting some."""
        done = _run_apart(self._all(list(queue)))
        delivered = {
            (c.name, mid) for c, ids in zip(self.channels, done, strict=True) for mid in ids
        }
        remaining = []
        for message in queue:
            left = tuple(n for n in message.pending if (n, message.id) not in delivered)
            if left:
                remaining.append(replace(message, pending=left, tries=message.tries + 1))
        return self._bounded(remaining)

    async def _all(self, queue: list[Message]) -> list[set[str]]:
        deadline = time.monotonic() + self.budget_s
        tasks = [asyncio.create_task(self._drain(c, queue, deadline)) for c in self.channels]
        return list(await asyncio.gather(*tasks))

    def known_channels_only(self, outbox: Sequence[Message], names: list[str]) -> list[Message]:
        """The messages with only the channels configured now; the others' loss is logged."""
        kept = []
        for message in outbox:
            gone = [n for n in message.pending if n not in names]
            for name in gone:
                self.log.write(
                    delivery_entry(message, name, False, 0, "channel no longer configured")
                )
            left = tuple(n for n in message.pending if n in names)
            if left:
                kept.append(replace(message, pending=left))
        return kept

    async def _drain(self, channel: Channel, queue: list[Message], deadline: float) -> set[str]:
        """Deliver this channel's share in order; after one message fails, defer the rest."""
        delivered: set[str] = set()
        store = self.store
        if store is not None and store.resting_s(channel.name, time.time()) > 0:
            return delivered  # it failed lately: its messages wait, costing this tick nothing
        for message in queue:
            if channel.name not in message.pending:
                continue
            if store is not None and store.was_delivered(message.id, channel.name):
                delivered.add(message.id)  # acknowledged before a restart: never sent again
                continue
            if deadline <= time.monotonic():
                break  # no time left in this call: deferred, not failed
            if not await self._send_with_retries(channel, message, deadline):
                if store is not None:
                    rest = store.failed(channel.name, time.time())
                    self.log.write({"event": "resting", "channel": channel.name, "for_s": rest})
                break
            if store is not None:
                store.recovered(channel.name)
            delivered.add(message.id)
        return delivered

    async def _send_with_retries(self, channel: Channel, message: Message, deadline: float) -> bool:
        error = "no time left in this tick"
        attempts = 0
        for attempt in range(self.retries + 1):
            wait = self._delay(attempt) if attempt else 0.0
            left = deadline - time.monotonic() - wait
            if left <= 0:
                break
            await asyncio.sleep(wait)
            attempts += 1
            try:
                async with asyncio.timeout(min(self.attempt_s, left)):
                    await channel.send(message)
            except TimeoutError:
                error = f"DeliveryError: no answer within {min(self.attempt_s, left):.0f} s"
                continue
            except Exception as exc:  # any channel bug must not stop the others
                error = f"{type(exc).__name__}: {exc}"
                continue
            if self.store is not None:
                self.store.delivered(message.id, channel.name)
            self.log.write(delivery_entry(message, channel.name, True, attempts, None))
            return True
        self.log.write(
            delivery_entry(message, channel.name, False, attempts, redact(error, self.log.secrets))
        )
        return False

    def _delay(self, attempt: int) -> float:
        return self.backoff_s * 2 ** (attempt - 1)

    def _bounded(self, remaining: list[Message]) -> list[Message]:
        for message in remaining[:-MAX_OUTBOX] if len(remaining) > MAX_OUTBOX else []:
            self.log.write(
                delivery_entry(message, ",".join(message.pending), False, 0, "dropped: outbox full")
            )
        return remaining[-MAX_OUTBOX:]


def _run_apart(coroutine: Coroutine[Any, Any, list[set[str]]]) -> list[set[str]]:
    """Run the delivery's own event loop, on a thread of its own if this one runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def delivery_entry(
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
