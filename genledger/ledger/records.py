"""A dataset's record between refreshes: each file's checkpoint and counts, the dataset rules.

`refresh.state` keeps these in the state dir; the stats JSON and the rates are computed from
them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from genledger.ledger import books
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows
from genledger.parse import declarations, schema
from genledger.parse.declarations import FormatSet
from genledger.rules import catalogue
from genledger.rules.result import RuleTally
from genledger.tail.checkpoint import Checkpoint

# The layout of a state record; what its counts mean is `counting_signature`'s business.
STATE_VERSION = 5  # 5: run health (windows, answer keys, output quantiles, the prompts join)
RECOUNT = "counting changed since the last refresh (facts, books, rules or formats): read again"


def counting_signature(formats: FormatSet, settings: str = "") -> str:
    """A digest of everything that decides what a file's counts are: the facts schema, the
    books, the rule conditions, the built-in declarations and the user's, and the settings
    the counts read (`Config.counting_settings`). Counts kept under another signature are
    read again."""
    parts = (
        schema.signature(),
        books.signature(),
        catalogue.signature(),
        declarations.built_in_signature(),
        formats.signature(),
        settings,
    )
    return hashlib.blake2b(repr(parts).encode(), digest_size=10).hexdigest()


@dataclass
class FileState:
    """One data file: where reading resumes, what it counted, and what it looked like."""

    dataset: str
    name: str
    role: str
    checkpoint: Checkpoint = field(default_factory=Checkpoint)
    tally: FileTally = field(default_factory=FileTally)
    pending_bytes: int = 0
    mtime: float | None = None
    error: str | None = None
    last_read: str = ""  # why the last refresh read from where it did

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "dataset": self.dataset,
            "name": self.name,
            "role": self.role,
            "checkpoint": self.checkpoint.to_dict(),
            "tally": self.tally.to_dict(),
            "pending_bytes": self.pending_bytes,
            "mtime": self.mtime,
            "error": self.error,
            "last_read": self.last_read,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileState:
        """Inverse of `to_dict`."""
        return cls(
            dataset=data["dataset"],
            name=data["name"],
            role=data["role"],
            checkpoint=Checkpoint.from_dict(data["checkpoint"]),
            tally=FileTally.from_dict(data["tally"]),
            pending_bytes=int(data.get("pending_bytes", 0)),
            mtime=data.get("mtime"),
            error=data.get("error"),
            last_read=data.get("last_read", ""),
        )


@dataclass
class DatasetState:
    """Dataset-level rule results, reused while none of the dataset's files changed: the
    failures (duplicate answers before their share is weighed), the prompts join."""

    signature: str = ""
    failures: dict[str, RuleTally] = field(default_factory=dict)
    prompts: dict[str, Any] | None = None  # the stats JSON's `prompts` (ledger.prompts)
    unjoinable: str | None = None  # why there is no `prompts`

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "signature": self.signature,
            "failures": {k: v.to_dict() for k, v in self.failures.items()},
            "prompts": self.prompts,
            "unjoinable": self.unjoinable,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DatasetState:
        """Inverse of `to_dict`."""
        failures = {k: RuleTally.from_dict(v) for k, v in data.get("failures", {}).items()}
        prompts = data.get("prompts")
        if prompts is not None and not isinstance(prompts, dict):
            raise TypeError("damaged prompts block")
        unjoinable = data.get("unjoinable")
        return cls(
            data.get("signature", ""),
            failures,
            prompts,
            None if unjoinable is None else str(unjoinable),
        )


@dataclass
class DatasetRecord:
    """Everything a refresh of one dataset needs from the previous one."""

    name: str
    data_root: str
    files: dict[str, FileState] = field(default_factory=dict)
    rules: DatasetState = field(default_factory=DatasetState)
    history: list[list[float]] = field(
        default_factory=list
    )  # rate samples (genledger.ledger.rates)
    signature: str = ""  # the counting signature its counts were made under
    notice: str | None = None  # why a committed record was not resumed (read again)
    # the earliest write seen of a file holding records a self-hosted fleet priced (its hours
    # start there: genledger.ledger.cost); kept like the rate history, across full re-reads
    fleet_first: float | None = None
    windows: Windows = field(default_factory=Windows)  # the first and latest records

    def to_bytes(self) -> bytes:
        """Serialised form, with a version field."""
        return orjson.dumps(
            {
                "version": STATE_VERSION,
                "name": self.name,
                "data_root": self.data_root,
                "signature": self.signature,
                "files": {k: v.to_dict() for k, v in self.files.items()},
                "rules": self.rules.to_dict(),
                "history": self.history,
                "fleet_first": self.fleet_first,
                "windows": self.windows.to_dict(),
            }
        )

    @classmethod
    def from_bytes(
        cls, raw: bytes, name: str, data_root: str, signature: str, history_only: bool = False
    ) -> DatasetRecord:
        """Parse; a record of another version, dataset or data root is a fresh one, and so is
        one counted under another `signature` (its files are read again, with a notice).
        `history_only`: a fresh record that keeps only the rate history (a full re-read: the
        files' counts and ids would be dropped anyway, so they are not decoded). Raises
        ValueError, KeyError or TypeError on a damaged record."""
        data = orjson.loads(raw)
        fresh = cls(name, data_root, signature=signature)
        if (data.get("version"), data.get("name"), data.get("data_root")) != (
            STATE_VERSION,
            name,
            data_root,
        ):
            return fresh
        history = [list(map(float, sample)) for sample in data.get("history", [])]
        first = data.get("fleet_first")
        fleet_first = None if first is None else float(first)
        if data.get("signature") != signature:
            return cls(name, data_root, history=history, signature=signature, notice=RECOUNT,
                       fleet_first=fleet_first)  # fmt: skip
        if history_only:
            return cls(name, data_root, history=history, signature=signature,
                       fleet_first=fleet_first)  # fmt: skip
        return cls(
            name=name,
            data_root=data_root,
            files={str(k): FileState.from_dict(v) for k, v in data["files"].items()},
            rules=DatasetState.from_dict(data["rules"]),
            history=history,
            signature=signature,
            fleet_first=fleet_first,
            windows=Windows.from_dict(data["windows"]),
        )
