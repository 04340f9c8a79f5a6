"""A dataset's record between refreshes: each file's checkpoint and counts, the dataset rules.

`refresh.state` keeps these in the state dir; the stats JSON and the rates are computed from
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from genledger.ledger.tally import FileTally
from genledger.parse import declarations
from genledger.rules.result import RuleTally
from genledger.tail.checkpoint import Checkpoint

STATE_VERSION = 3  # 2: ids as one compact IdList form; 3: v2 facts (reasoning, samples...)


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
    """Dataset-level rule results, reused while none of the dataset's files changed."""

    signature: str = ""
    failures: dict[str, RuleTally] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "signature": self.signature,
            "failures": {k: v.to_dict() for k, v in self.failures.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DatasetState:
        """Inverse of `to_dict`."""
        failures = {k: RuleTally.from_dict(v) for k, v in data.get("failures", {}).items()}
        return cls(data.get("signature", ""), failures)


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

    def to_bytes(self) -> bytes:
        """Serialised form, with a version field."""
        return orjson.dumps(
            {
                "version": STATE_VERSION,
                "name": self.name,
                "data_root": self.data_root,
                "formats": declarations.signature(),
                "files": {k: v.to_dict() for k, v in self.files.items()},
                "rules": self.rules.to_dict(),
                "history": self.history,
            }
        )

    @classmethod
    def from_bytes(
        cls, raw: bytes, name: str, data_root: str, history_only: bool = False
    ) -> DatasetRecord:
        """Parse; a record of another version, dataset, data root or set of declared formats
        is a fresh one (counts made with other declarations are read again). `history_only`:
        a fresh record that keeps only the rate history (a full re-read: the files' counts
        and ids would be dropped anyway, so they are not decoded)."""
        data = orjson.loads(raw)
        if (data.get("version"), data.get("name"), data.get("data_root")) != (
            STATE_VERSION,
            name,
            data_root,
        ) or data.get("formats", "[]") != declarations.signature():
            return cls(name, data_root)
        if history_only:
            return cls(name, data_root, history=list(data.get("history", [])))
        return cls(
            name=name,
            data_root=data_root,
            files={k: FileState.from_dict(v) for k, v in data["files"].items()},
            rules=DatasetState.from_dict(data["rules"]),
            history=list(data.get("history", [])),
        )
