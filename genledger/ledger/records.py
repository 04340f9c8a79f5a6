"""A dataset's record between refreshes: each file's checkpoint and counts, the dataset rules.

`refresh.state` keeps these in the state dir; the stats JSON and the rates are computed from
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import msgspec.json

from genledger.ledger import jsonio
from genledger.ledger.idlist import IdList
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
    settled: bool = False  # unchanged for settle_seconds when last read
    ever_read: bool = False  # read whole at some refresh: once gone, it stays reported

    def rule_row(self) -> dict[str, Any]:
        """This file as a row of the rules' FILES table (`genledger.rules.catalogue`)."""
        records = self.tally.prompt_lines if self.role == "prompts" else self.tally.records
        pending = self.pending_bytes if self.error is None else 0
        return {
            "file": self.name,
            "role": self.role,
            "records": records,
            "error": self.error,
            "pending_bytes": pending,
            "settled": self.settled,
            "line": self.checkpoint.lines + 1 if pending else 0,
        }

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
            "settled": self.settled,
            "ever_read": self.ever_read,
        }


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
    # A `history_only` load: `files` hold only the names, roles and errors of the files known.
    files_only_named: bool = False

    def to_bytes(self) -> bytes:
        """Serialised form, with a version field."""
        return jsonio.dumps(
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
        a fresh record that keeps only the rate history and the names of its files (a full
        re-read: the files' counts and ids would be dropped anyway, so they are not decoded).
        Raises `DamagedRecord` naming what is wrong when a value has the wrong shape or type."""
        if history_only:
            known = _decode(raw, _Named, name, data_root)
            if known is None:
                return cls(name, data_root)
            files = {
                k: FileState(name, v.name, v.role, error=v.error, ever_read=v.ever_read)
                for k, v in known.files.items()
            }
            return cls(name, data_root, files=files, history=known.history, files_only_named=True)
        whole = _decode(raw, _Whole, name, data_root)
        if whole is None:
            return cls(name, data_root)
        for key, state in whole.files.items():
            _sane(state, f"files.{key}")
        for rule, tally in whole.rules.failures.items():
            for example in tally.examples:
                _example(example, f"rules.failures.{rule}")
        return cls(name, data_root, whole.files, whole.rules, whole.history)


class DamagedRecord(ValueError):
    """A state record with a value of the wrong shape or type; the message says where."""


# What a record holds, typed: msgspec reads the JSON and checks every type in one pass (no "3"
# for 3, no list for an object), exactly past 64 bits; what it does not name is skipped.
@dataclass(frozen=True)
class _Header:
    version: Any = None
    name: Any = None
    data_root: Any = None
    formats: Any = "[]"

    def ours(self, name: str, data_root: str) -> bool:
        """A record of this version, dataset, data root and set of declared formats."""
        mine = (STATE_VERSION, name, data_root, declarations.signature())
        return (self.version, self.name, self.data_root, self.formats) == mine


@dataclass(frozen=True)
class _Known:
    """What a full re-read keeps of a file the record knew: its name, role, error and whether
    it was ever read."""

    name: str
    role: str
    error: str | None = None
    ever_read: bool = False


@dataclass(frozen=True)
class _Named(_Header):
    files: dict[str, _Known] = field(default_factory=dict)
    history: list[list[float]] = field(default_factory=list)


@dataclass(frozen=True)
class _Whole(_Header):
    files: dict[str, FileState] = field(default_factory=dict)
    rules: DatasetState = field(default_factory=DatasetState)
    history: list[list[float]] = field(default_factory=list)


def _decode(raw: bytes, kind: Any, name: str, data_root: str) -> Any:
    """The record `raw` as `kind` (one pass), or None when it is another version's, dataset's,
    root's or set of formats' (then its shape is not ours to judge); raises `DamagedRecord`
    saying where a type is wrong."""
    try:
        record = msgspec.json.decode(raw, type=kind, dec_hook=_decode_ids)
    except (msgspec.DecodeError, ValueError, TypeError) as exc:
        try:
            header = msgspec.json.decode(raw, type=_Header)
        except (msgspec.DecodeError, ValueError, TypeError):
            header = None
        if header is not None and not header.ours(name, data_root):
            return None
        raise DamagedRecord(str(exc).replace(" - at `$", " at `$")) from None
    return record if record.ours(name, data_root) else None


def _decode_ids(kind: type, value: Any) -> Any:
    if kind is IdList:
        if not isinstance(value, dict):
            raise ValueError("expected an id list object")
        return IdList.from_dict(value)
    raise NotImplementedError(kind)


NON_NEGATIVE = ("offset", "lines", "head_len", "tail_start", "size", "pending")


def _sane(state: FileState, where: str) -> None:
    """Counts and positions are never negative, and examples name a file, line and reason."""
    cp = state.checkpoint
    for key in NON_NEGATIVE:
        if getattr(cp, key) < 0:
            raise DamagedRecord(f"{where}.checkpoint.{key} is negative")
    if state.pending_bytes < 0 or cp.tail_start > cp.offset:
        raise DamagedRecord(f"{where}: the checkpoint's window does not end at its offset")
    for rule, tally in state.tally.failures.items():
        for example in tally.examples:
            _example(example, f"{where}.tally.failures.{rule}")


EXAMPLE_KEYS = {"file": str, "line": int, "reason": str, "offset": int}


def _example(example: dict[str, Any], where: str) -> None:
    """An example names its file, line and reason (and offset), each of its type."""
    for key, kind in EXAMPLE_KEYS.items():
        value = example.get(key)
        if (value is None and key != "offset") or (value is not None and (type(value) is not kind)):
            raise DamagedRecord(f"{where}: an example's {key} is {value!r}, not a {kind.__name__}")
