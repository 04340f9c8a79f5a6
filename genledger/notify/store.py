"""The durable outbox: messages decided but not yet delivered, and each `(message id, channel)`
that was delivered, in one SQLite file in the state dir (docs/notifications.md).

A sensor keeps its new messages here before it sends anything, and the courier records each
delivery here the moment a channel accepts it, so a restarted daemon repeats nothing a channel
already acknowledged (only the one message in flight when it died can reach that channel twice).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from genledger.notify.model import Message

STORE_NAME = "notifications.sqlite"
MAX_OPEN = 100  # undelivered messages kept per sensor; beyond that the oldest are dropped
BUSY_TIMEOUT_S = 5.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " id TEXT NOT NULL UNIQUE, sensor TEXT NOT NULL, body TEXT NOT NULL,"
    " channels TEXT NOT NULL, tries INTEGER NOT NULL DEFAULT 0, closed TEXT)",
    "CREATE TABLE IF NOT EXISTS deliveries (id TEXT NOT NULL, channel TEXT NOT NULL,"
    " PRIMARY KEY (id, channel))",
    "CREATE TABLE IF NOT EXISTS resting (channel TEXT PRIMARY KEY,"
    " failures INTEGER NOT NULL, until REAL NOT NULL)",
)
REST_S = 30.0  # a channel that failed a tick is left alone this long, doubling, up to MAX_REST_S
MAX_REST_S = 300.0


class DeliveryStore:
    """The outbox and the delivery record of one state dir."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a delivery recorded survives a power cut
            for statement in _SCHEMA:
                db.execute(statement)
            yield db
        finally:
            db.close()

    def keep(
        self, sensor: str, messages: Sequence[Message], channels: Sequence[str]
    ) -> list[Message]:
        """Store messages not stored before, due on `channels`; return the newly stored ones."""
        fresh = []
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            for message in messages:
                body = json.dumps({**message.to_dict(), "pending": []}, ensure_ascii=False)
                cursor = db.execute(
                    "INSERT OR IGNORE INTO messages (id, sensor, body, channels, tries)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (message.id, sensor, body, json.dumps(list(channels)), message.tries),
                )
                if cursor.rowcount:
                    fresh.append(message)
            db.execute("COMMIT")
        return fresh

    def due(self, sensor: str) -> list[Message]:
        """The sensor's open messages, oldest first, each with the channels it still awaits."""
        with self._db() as db:
            rows = db.execute(
                "SELECT id, body, channels, tries FROM messages"
                " WHERE sensor = ? AND closed IS NULL ORDER BY seq",
                (sensor,),
            ).fetchall()
            done = {
                (mid, channel)
                for mid, channel in db.execute(
                    "SELECT d.id, d.channel FROM deliveries d JOIN messages m ON m.id = d.id"
                    " WHERE m.sensor = ? AND m.closed IS NULL",
                    (sensor,),
                )
            }
        found = []
        for mid, body, channels, tries in rows:
            left = tuple(c for c in json.loads(channels) if (mid, c) not in done)
            found.append(replace(Message.from_dict(json.loads(body)), pending=left, tries=tries))
        return found

    def was_delivered(self, message_id: str, channel: str) -> bool:
        """Whether `channel` acknowledged the message (consulted before every send)."""
        with self._db() as db:
            row = db.execute(
                "SELECT 1 FROM deliveries WHERE id = ? AND channel = ?", (message_id, channel)
            ).fetchone()
        return row is not None

    def delivered(self, message_id: str, channel: str) -> None:
        """Record that `channel` acknowledged the message."""
        with self._db() as db:
            db.execute(
                "INSERT OR IGNORE INTO deliveries (id, channel) VALUES (?, ?)",
                (message_id, channel),
            )

    def settle(self, message: Message, why: str | None) -> None:
        """Close a message (`why`: delivered everywhere, dropped...) or count one more round."""
        with self._db() as db:
            if why is None:
                db.execute(
                    "UPDATE messages SET tries = ?, channels = ? WHERE id = ?",
                    (message.tries, json.dumps(list(message.pending)), message.id),
                )
            else:
                db.execute("UPDATE messages SET closed = ? WHERE id = ?", (why, message.id))

    def resting_s(self, channel: str, now: float) -> float:
        """How long a channel that failed is still left alone (0: try it now)."""
        with self._db() as db:
            row = db.execute("SELECT until FROM resting WHERE channel = ?", (channel,)).fetchone()
        return max(0.0, row[0] - now) if row else 0.0

    def failed(self, channel: str, now: float) -> float:
        """Note a tick the channel failed; return how long it now rests."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            query = "SELECT failures FROM resting WHERE channel = ?"
            row = db.execute(query, (channel,)).fetchone()
            failures = (row[0] if row else 0) + 1
            rest = min(REST_S * 2 ** (failures - 1), MAX_REST_S)
            db.execute(
                "INSERT OR REPLACE INTO resting (channel, failures, until) VALUES (?, ?, ?)",
                (channel, failures, now + rest),
            )
            db.execute("COMMIT")
        return rest

    def recovered(self, channel: str) -> None:
        """The channel accepted a message: no rest after its next failure but the first."""
        with self._db() as db:
            db.execute("DELETE FROM resting WHERE channel = ?", (channel,))


def store_path(state_dir: Path) -> Path:
    """Where a state dir keeps its outbox."""
    return state_dir / STORE_NAME
