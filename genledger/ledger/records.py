"""A dataset's record between refreshes: each file's checkpoint and counts, the dataset rules.

`refresh.state` keeps these in the state dir; the stats JSON and the rates are computed from
them.
"""

from __future__ import annotations

import contextlib
import hashlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import msgspec.json
import orjson

from genledger.ledger import books, jsonio, segments
from genledger.ledger.books import GROUP_BY, GROUP_FIELDS, RECORDS
from genledger.ledger.segments import Blob, Bytes, SegmentsHead
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows, kept_block
from genledger.parse import declarations, schema, streams
from genledger.parse.declarations import FormatSet
from genledger.rules import catalogue
from genledger.rules.result import RuleTally
from genledger.tail.checkpoint import Checkpoint

# The layout of a state record; what its counts mean is `counting_signature`'s business.
STATE_VERSION = 5  # 5: run health (windows, answer keys, output quantiles, the prompts join)
RECOUNT = "counting changed since the last refresh (facts, books, rules or formats): read again"


def counting_signature(formats: FormatSet, settings: str = "") -> str:
    """A digest of everything that decides what a file's counts are: the facts schema, the
    books, the rule conditions, the built-in declarations, the stream families and the user's
    declarations, and the settings
    the counts read (`Config.counting_settings`). Counts kept under another signature are
    read again."""
    parts = (
        schema.signature(),
        books.signature(),
        catalogue.signature(),
        declarations.built_in_signature(),
        streams.signature(),
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
    settled: bool = False  # unchanged for settle_seconds when last read
    ever_read: bool = False  # read whole at some refresh: once gone, it stays reported
    aliases: tuple[str, ...] = ()  # its other names (same device and inode), root-relative
    lost: int = 0  # gone: the records it had counted, which the totals no longer hold

    def rule_row(self) -> dict[str, Any]:
        """This file as a row of the rules' FILES table (`genledger.rules.catalogue`)."""
        pending = self.pending_bytes if self.error is None else 0
        return {
            "file": self.name,
            "role": self.role,
            "records": self.tally[RECORDS[self.role]],
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
            "aliases": list(self.aliases),
            "lost": self.lost,
        }


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


UNREAD: Any = type("Unread", (), {"__repr__": lambda _: "UNREAD"})()  # no stored checksum read


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
    # A full re-read's load: `files` hold only the names, roles and errors of the files known.
    files_only_named: bool = False
    # What a refresh that finds none of the dataset's files moved reuses (`refresh.quiet`);
    # kept as stored (JSON bytes), and written back as is.
    quiet: bytes | None = field(default=None, compare=False, repr=False)
    # A quiet refresh's record: `files` stays empty and these stored bytes of it are written
    # back as they are (decoding 50,000 files' counts to write them unchanged was most of it).
    kept_files: bytes | None = field(default=None, compare=False, repr=False)
    # the checksum of its files and quiet block as stored; a record read from its sidecar
    # (`ledger.quietfile`) has this and no `kept_files`: only its rates are ever written
    kept_crc: int | None = field(default=None, compare=False, repr=False)
    # the committed segment file its files' arrays lie in (`genledger.ledger.segments`)
    segments: SegmentsHead | None = field(default=None, compare=False, repr=False)
    # the quiet checksum it was stored with, read in the same decode as the rest (None: it
    # has none; `UNREAD`: not read from a record of ours), so `Rates.of_record` need not
    # parse the whole record again for it
    stored_crc: Any = field(default=UNREAD, compare=False, repr=False)

    def to_bytes(self) -> bytes:
        """Serialised form, with a version field. A quiet block goes with a checksum of the
        files' bytes and its own (`kept` trusts them undecoded only while it matches). In a
        record write (`segments.writing`) the files' arrays go to its segment file, which
        the record then names."""
        return self.encoded()[0]

    def encoded(self) -> tuple[bytes, int | None]:
        """`to_bytes`, and the checksum written with its quiet block (None: it has none)."""
        if self.kept_files is None and self.kept_crc is not None:
            # read from its sidecar (`ledger.quietfile`): it holds no files to write
            raise ValueError(f"the record of {self.name!r} was read without its files")
        head = {
            "version": STATE_VERSION,
            "name": self.name,
            "data_root": self.data_root,
            "signature": self.signature,
            "rules": self.rules.to_dict(),
            "history": self.history,
            "fleet_first": self.fleet_first,
            "windows": self.windows.to_dict(),
        }
        try:
            files = self.kept_files
            if files is None:
                files = orjson.dumps({k: v.to_dict() for k, v in self.files.items()})
            quiet = {} if self.quiet is None else {"quiet": orjson.Fragment(self.quiet)}
            crc = None if self.quiet is None else _crc(files, self.quiet)
            kept = {} if crc is None else {"kept_crc": crc}
            head |= self._segments_head(kept=self.kept_files is not None)
            return orjson.dumps(head | {"files": orjson.Fragment(files)} | quiet | kept), crc
        except orjson.JSONEncodeError:  # an integer past 64 bits: the standard library's
            files_dict = {k: v.to_dict() for k, v in self.files.items()}
            return jsonio.dumps(head | {"files": files_dict} | self._segments_head(False)), None

    def _segments_head(self, kept: bool) -> dict[str, Any]:
        """The segment file to name: the kept files' own, or the one written now (none
        outside a record write: the arrays are then in the JSON)."""
        writer = segments.writer()
        found = self.segments if kept else None if writer is None else writer.new_head()
        return {} if found is None else {"segments": found.to_dict()}

    @classmethod
    def kept(cls, raw: bytes, name: str, data_root: str, signature: str) -> DatasetRecord | None:
        """The record with its files left as stored bytes (`kept_files`), when it is this
        dataset's, counted under `signature`, and holds a quiet block; else None (then
        `from_bytes` reads it whole). Raises `DamagedRecord` like `from_bytes`."""
        if raw.startswith(jsonio.BIG):
            return None  # written by the standard library: fragments are orjson's only
        head = _decode(raw, _Kept, name, data_root, signature)
        if head is None or head.signature != signature:
            return None
        quiet = bytes(head.quiet)
        files = bytes(head.files)
        if quiet == b"null" or head.kept_crc != _crc(files, quiet):
            return None  # no quiet block, or bytes changed since written: read it whole
        return cls(name, data_root, {}, head.rules, head.history, signature,
                   fleet_first=head.fleet_first, windows=head.windows.loaded(), quiet=quiet,
                   kept_files=files, kept_crc=head.kept_crc,
                   segments=head.segments)  # fmt: skip

    @classmethod
    def from_bytes(
        cls,
        raw: bytes,
        name: str,
        data_root: str,
        signature: str,
        history_only: bool = False,
        read_segments: Callable[[SegmentsHead], Bytes] | None = None,
    ) -> DatasetRecord:
        """Parse; a record of another version, dataset or data root is a fresh one. One counted
        under another `signature`, or read for a full re-read (`history_only`), keeps only the
        rate history, the fleet's first write and the names of its files (the counts would be
        dropped anyway, so they are not decoded); the former says why (`notice`). Raises
        `DamagedRecord` naming what is wrong when a value has the wrong shape or type.
        `read_segments`: the committed bytes of the segment file a record names."""
        if history_only:
            known = _decode(raw, _Named, name, data_root, signature)
            if known is None:
                return cls(name, data_root, signature=signature)
            return cls._named(known, signature)
        whole = _decode(raw, _Whole, name, data_root, signature)
        if whole is None:
            return cls(name, data_root, signature=signature)
        if whole.signature != signature:
            return cls._named(whole, signature)
        files = _loaded_files(whole, read_segments)
        for key, state in files.items():
            _sane(state, f"files.{key}")
        for rule, tally in whole.rules.failures.items():
            for example in tally.examples:
                _example(example, f"rules.failures.{rule}")
        return cls(name, data_root, files, whole.rules, whole.history, signature,
                   fleet_first=whole.fleet_first, windows=whole.windows.loaded(),
                   segments=whole.segments, stored_crc=whole.kept_crc)  # fmt: skip

    @classmethod
    def _named(cls, known: _Named | _Whole, signature: str) -> DatasetRecord:
        files = {
            k: FileState(
                known.name, v.name, v.role, error=v.error, ever_read=v.ever_read, lost=v.lost
            )
            for k, v in known.files.items()
        }
        notice = RECOUNT if known.signature != signature else None
        return cls(known.name, known.data_root, files, history=known.history, signature=signature,
                   notice=notice, fleet_first=known.fleet_first, files_only_named=True,
                   segments=known.segments, stored_crc=known.kept_crc)  # fmt: skip


def _loaded_files(
    whole: _Whole, read_segments: Callable[[SegmentsHead], Bytes] | None
) -> dict[str, FileState]:
    """The files' states of a record; their arrays read from its segment file, if it has one
    (then closed, when it is a mapping)."""
    data: Bytes = b""
    if whole.segments is not None and whole.segments.length:
        if read_segments is None:
            raise DamagedRecord("a record whose arrays lie in a segment file, read without it")
        data = read_segments(whole.segments)
    try:
        with segments.reading(Blob(data)):
            return {key: state.loaded(f"files.{key}") for key, state in whole.files.items()}
    finally:
        with contextlib.suppress(BufferError):  # a view kept by a traceback: closed when freed
            getattr(data, "close", lambda: None)()


class Rates(msgspec.Struct, frozen=True):
    """What a quiet refresh changes in a record (`refresh.quiet`), kept beside it so that
    the record's files are not written again: the rate history and the fleet's first write,
    for the record whose files and quiet block have the checksum `kept_crc`."""

    kept_crc: int
    history: list[list[float]]
    fleet_first: float | None = None

    @classmethod
    def of(cls, record: DatasetRecord) -> Rates | None:
        """A quiet record's rates (None for a record written whole)."""
        if record.kept_crc is None:  # set only on a record read with its files kept
            return None
        return cls(record.kept_crc, record.history, record.fleet_first)

    def to_bytes(self) -> bytes:
        """Serialised form."""
        return msgspec.json.encode(self)

    @classmethod
    def read(cls, raw: bytes, record: DatasetRecord, record_raw: bytes) -> Rates | None:
        """The rates in `raw` when they are of `record` (read from `record_raw`: the same
        checksum); None when damaged or of another record (one written whole since)."""
        try:
            rates = msgspec.json.decode(raw, type=cls)
        except (msgspec.DecodeError, ValueError, TypeError):
            return None
        return rates if rates.of_record(record, record_raw) else None

    def of_record(self, record: DatasetRecord, record_raw: bytes) -> bool:
        """These are the rates of `record` (read from `record_raw`): the same checksum."""
        crc = record.kept_crc
        if crc is None and record.stored_crc is not UNREAD:
            crc = record.stored_crc  # read with the record: no second parse
        elif crc is None:
            try:
                crc = msgspec.json.decode(record_raw, type=_Crc).kept_crc
            except (msgspec.DecodeError, ValueError, TypeError):
                return False
        return bool(crc == self.kept_crc)


class _Crc(msgspec.Struct):
    kept_crc: Any = None


class DamagedRecord(ValueError):
    """A state record with a value of the wrong shape or type; the message says where."""


# What a record holds, typed: msgspec reads the JSON and checks every type in one pass (no "3"
# for 3, no list for an object), exactly past 64 bits; what it does not name is skipped.
@dataclass(frozen=True)
class _Header:
    version: Any = None
    name: Any = None
    data_root: Any = None
    signature: Any = None
    segments: SegmentsHead | None = None
    kept_crc: Any = None

    def ours(self, name: str, data_root: str) -> bool:
        """A record of this version, dataset and data root."""
        return (self.version, self.name, self.data_root) == (STATE_VERSION, name, data_root)


@dataclass(frozen=True)
class _Known:
    """What a full re-read keeps of a file the record knew: its name, role, error and whether
    it was ever read."""

    name: str
    role: str
    error: str | None = None
    ever_read: bool = False
    lost: int = 0


@dataclass(frozen=True)
class _Named(_Header):
    files: dict[str, _Known] = field(default_factory=dict)
    history: list[list[float]] = field(default_factory=list)
    fleet_first: float | None = None


@dataclass(frozen=True)
class _TallyTypes:
    """The parts of a stored `FileTally` whose types decide its numbers, checked strictly
    (no "3" for 3, no 3.0, no true); `FileTally.from_dict` builds the tally from the rest."""

    sums: dict[str, int]
    counters: dict[str, dict[str, int]]
    failures: dict[str, RuleTally]
    groups: dict[str, list[list[Any]]] = field(default_factory=dict)


def _tally(raw: dict[str, Any], where: str) -> FileTally:
    """A stored tally, type-checked, as a `FileTally` (keys the books no longer know are
    dropped); raises `DamagedRecord` saying where."""
    try:
        typed = msgspec.convert(raw, _TallyTypes)
    except msgspec.ValidationError as exc:
        raise DamagedRecord(f"{where}: {exc}".replace(" - at `$", " at `$")) from None
    for key, rows in typed.groups.items():
        if key in GROUP_FIELDS and not all(_price_row(key, row) for row in rows):
            raise DamagedRecord(f"{where}.groups.{key}: a price key of the wrong shape")
    try:
        return FileTally.from_dict(raw)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DamagedRecord(f"{where}: {exc or type(exc).__name__}") from None


def _price_row(key: str, row: list[Any]) -> bool:
    """A stored price key and its sums: the `by` columns' texts, the tier band, the half-hour
    slot, then the sums (`FileTally.to_dict`), each of its type."""
    by, width = len(GROUP_BY[key]), len(GROUP_FIELDS[key])
    if len(row) != by + 2 + width:
        return False
    band, slot = row[by], row[by + 1]
    return (
        all(part is None or type(part) is str for part in row[:by])
        and type(band) is int
        and (slot is None or type(slot) in (int, float))
        and all(type(value) is int for value in row[by + 2 :])
    )


@dataclass(frozen=True)
class _File:
    """A `FileState` as stored."""

    dataset: str
    name: str
    role: str
    checkpoint: Checkpoint
    tally: dict[str, Any]
    pending_bytes: int = 0
    mtime: float | None = None
    error: str | None = None
    last_read: str = ""
    settled: bool = False
    ever_read: bool = False
    aliases: tuple[str, ...] = ()
    lost: int = 0

    def loaded(self, where: str) -> FileState:
        """The file's state."""
        tally = _tally(self.tally, f"{where}.tally")
        return FileState(self.dataset, self.name, self.role, self.checkpoint, tally,
                         self.pending_bytes, self.mtime, self.error, self.last_read, self.settled,
                         self.ever_read, self.aliases, self.lost)  # fmt: skip


@dataclass(frozen=True)
class _Windows:
    """`Windows` as stored: each record (flags, output tokens, finish reason)."""

    limit: int = Windows().limit
    first: list[tuple[int, int, str | None]] = field(default_factory=list)
    latest: list[tuple[int, int, str | None]] = field(default_factory=list)
    first_block: Any = None  # `window.kept_block` decides whether it is used

    def loaded(self) -> Windows:
        """The windows (with the first window's block as stored, when it is of use)."""
        first, latest = list(self.first), list(self.latest)
        frozen = kept_block(self.first_block, first, self.limit)
        return Windows(self.limit, first, latest, frozen)


@dataclass(frozen=True)
class _Whole(_Header):
    files: dict[str, _File] = field(default_factory=dict)
    rules: DatasetState = field(default_factory=DatasetState)
    history: list[list[float]] = field(default_factory=list)
    fleet_first: float | None = None
    windows: _Windows = field(default_factory=_Windows)


def _crc(files: bytes, quiet: bytes) -> int:
    """A checksum of a record's files and quiet block as written (CRC-32: ~2 GB/s; it
    catches damage, which is all it is for)."""
    return zlib.crc32(quiet, zlib.crc32(files))


class _Kept(msgspec.Struct, frozen=True):
    """A record with its files and quiet block left undecoded (msgspec reads `Raw` fields
    only in its own structs)."""

    files: msgspec.Raw
    version: Any = None
    name: Any = None
    data_root: Any = None
    signature: Any = None
    rules: DatasetState = field(default_factory=DatasetState)
    history: list[list[float]] = []
    fleet_first: float | None = None
    windows: _Windows = _Windows()
    quiet: msgspec.Raw = msgspec.Raw(b"null")
    kept_crc: Any = None
    segments: SegmentsHead | None = None

    def ours(self, name: str, data_root: str) -> bool:
        """A record of this version, dataset and data root."""
        return (self.version, self.name, self.data_root) == (STATE_VERSION, name, data_root)


def _decode(raw: bytes, kind: Any, name: str, data_root: str, signature: str) -> Any:
    """The record `raw` as `kind` (one pass), or None when it is another version's, dataset's
    or root's, or when it does not decode and was counted under another signature (then its
    shape is not ours to judge); raises `DamagedRecord` saying where a type is wrong."""
    try:
        record = msgspec.json.decode(raw, type=kind)
    except (msgspec.DecodeError, ValueError, TypeError) as exc:
        try:
            header = msgspec.json.decode(raw, type=_Header)
        except (msgspec.DecodeError, ValueError, TypeError):
            header = None
        if header is not None and (
            not header.ours(name, data_root) or header.signature != signature
        ):
            return None
        raise DamagedRecord(str(exc).replace(" - at `$", " at `$")) from None
    return record if record.ours(name, data_root) else None


NON_NEGATIVE = ("offset", "lines", "tail_start", "pending")
NON_NEGATIVE_FILE = ("size", "head_len")


def _sane(state: FileState, where: str) -> None:
    """Counts and positions are never negative, and examples name a file, line and reason."""
    cp = state.checkpoint
    for key in NON_NEGATIVE:
        if getattr(cp, key) < 0:
            raise DamagedRecord(f"{where}.checkpoint.{key} is negative")
    for key in NON_NEGATIVE_FILE:
        if getattr(cp.file, key) < 0:
            raise DamagedRecord(f"{where}.checkpoint.file.{key} is negative")
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
