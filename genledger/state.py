"""The state dir: checkpoints and counts of every file, committed after the stats are written."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from genledger.atomic import atomic_write_bytes
from genledger.checkpoint import Checkpoint
from genledger.tally import FileTally, RuleTally

STATE_VERSION = 1
STATE_FILE = "state.json"


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
class RunState:
    """Everything a refresh needs from the previous one."""

    data_root: str = ""
    files: dict[str, FileState] = field(default_factory=dict)
    datasets: dict[str, DatasetState] = field(default_factory=dict)
    history: dict[str, list[list[float]]] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """Serialised form, with a version field."""
        return orjson.dumps(
            {
                "version": STATE_VERSION,
                "data_root": self.data_root,
                "files": {k: v.to_dict() for k, v in self.files.items()},
                "datasets": {k: v.to_dict() for k, v in self.datasets.items()},
                "history": self.history,
            }
        )

    @classmethod
    def load(cls, state_dir: Path, data_root: str) -> RunState:
        """The committed state, or a fresh one if absent, unreadable, of another version/root."""
        try:
            data = orjson.loads((state_dir / STATE_FILE).read_bytes())
            if data.get("version") != STATE_VERSION or data.get("data_root") != data_root:
                return cls(data_root)
            return cls(
                data_root=data_root,
                files={k: FileState.from_dict(v) for k, v in data["files"].items()},
                datasets={k: DatasetState.from_dict(v) for k, v in data["datasets"].items()},
                history=data.get("history", {}),
            )
        except (OSError, ValueError, KeyError, TypeError):
            # A lost or damaged state only costs a full re-read; it never costs correctness.
            return cls(data_root)

    def save(self, state_dir: Path) -> None:
        """Commit atomically."""
        atomic_write_bytes(state_dir / STATE_FILE, self.to_bytes())
