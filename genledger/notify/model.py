"""The notification data model: check outcomes in, alerts and grouped messages out."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

MAX_EXAMPLES = 5
MAX_EXAMPLE_CHARS = 200


class Kind(StrEnum):
    """Why an alert is sent."""

    FAILING = "failing"
    WORSE = "worse"
    REMINDER = "reminder"
    RESOLVED = "resolved"
    STALLED = "stalled"
    RESUMED = "resumed"
    PROJECTED_OVER_BUDGET = "projected_over_budget"
    OVER_BUDGET = "over_budget"


BUDGET_KINDS = frozenset({Kind.PROJECTED_OVER_BUDGET, Kind.OVER_BUDGET})
BAD_KINDS = frozenset({Kind.FAILING, Kind.WORSE, Kind.REMINDER, Kind.STALLED, *BUDGET_KINDS})
SEVERITY_RANK = {"warn": 1, "error": 2}


@dataclass(frozen=True)
class CheckOutcome:
    """One asset check evaluation, reduced to what a notification may carry."""

    dataset: str
    asset_key: str  # "/"-joined asset key path
    check: str
    passed: bool
    severity: str  # "error" | "warn"
    failure_count: int
    rows_checked: int | None
    examples: tuple[str, ...]
    run_id: str
    reasons: str = ""  # failing rows by reason (`errored 3, expired 1`), where the check says
    items: tuple[str, ...] = ()  # every failing thing by name (unrecognised file paths)

    @property
    def key(self) -> str:
        """The identity a check keeps across runs."""
        return f"{self.asset_key}:{self.check}"


@dataclass(frozen=True)
class Alert:
    """One piece of news about one check or one dataset."""

    kind: Kind
    dataset: str
    severity: str
    asset_key: str = ""
    check: str = ""
    failure_count: int = 0
    previous_count: int | None = None
    rows_checked: int | None = None
    examples: tuple[str, ...] = ()
    run_id: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        data = asdict(self)
        data["kind"] = str(self.kind)
        data["examples"] = list(self.examples)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Alert:
        """Inverse of `to_dict`."""
        return cls(**{**data, "kind": Kind(data["kind"]), "examples": tuple(data["examples"])})


@dataclass(frozen=True)
class Message:
    """Alerts grouped into one notification (one per run, or one per stall tick)."""

    id: str
    created_at: str
    alerts: tuple[Alert, ...]
    run_id: str | None = None
    pending: tuple[str, ...] = field(default=())  # channels still to deliver to
    tries: int = 0  # delivery rounds already spent

    @property
    def datasets(self) -> list[str]:
        """Dataset names in first-seen order."""
        return list(dict.fromkeys(a.dataset for a in self.alerts))

    @property
    def bad(self) -> bool:
        """Whether anything in it asks for attention (rather than an all-clear)."""
        return any(a.kind in BAD_KINDS for a in self.alerts)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (kept in sensor cursors)."""
        return {
            "id": self.id,
            "created_at": self.created_at,
            "run_id": self.run_id,
            "alerts": [a.to_dict() for a in self.alerts],
            "pending": list(self.pending),
            "tries": self.tries,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Inverse of `to_dict`."""
        return cls(
            id=data["id"],
            created_at=data["created_at"],
            run_id=data.get("run_id"),
            alerts=tuple(Alert.from_dict(a) for a in data["alerts"]),
            pending=tuple(data.get("pending", ())),
            tries=int(data.get("tries", 0)),
        )


def message_id(*parts: str) -> str:
    """A stable short id, so a re-delivered message keeps its identity."""
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:16]


def clip_examples(examples: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """At most five single-line examples of bounded length: never whole records."""
    clipped = []
    for example in list(examples)[:MAX_EXAMPLES]:
        line = " ".join(str(example).split())
        if len(line) > MAX_EXAMPLE_CHARS:
            line = line[: MAX_EXAMPLE_CHARS - 1] + "…"
        clipped.append(line)
    return tuple(clipped)
