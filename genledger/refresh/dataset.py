"""One dataset's refresh: its files read on from their checkpoints, its dataset rules, and
the sections of its stats block (`ledger.stats` lays them out with the cost, which waits for
every dataset: `refresh.collect`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from genledger.config import HealthSettings
from genledger.fast import repeats
from genledger.ledger.books import NONZERO, RECORDS
from genledger.ledger.hashlist import HashList
from genledger.ledger.health import DEFAULT_HEALTH
from genledger.ledger.idlist import IdList
from genledger.ledger.prompts import Join, join
from genledger.ledger.provider import (
    MAX_STATUS_BYTES,
    ProviderCounts,
    Status,
    StatusError,
    parse_status,
    summed,
)
from genledger.ledger.quantiles import Quantiles
from genledger.ledger.rates import update_rates
from genledger.ledger.records import DatasetRecord, DatasetState, FileState
from genledger.ledger.stats import dataset_block, dataset_sections
from genledger.ledger.streambooks import StreamBooks
from genledger.ledger.streams import StreamState
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows
from genledger.refresh.filescan import FileScan
from genledger.refresh.gone import gone_files, is_gone
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.rules import rows as rule_rows
from genledger.rules.result import MAX_EXAMPLES, RuleTally
from genledger.tail.checkpoint import Checkpoint, seen_since, unchanged_as_listed
from genledger.tail.discovery import DataFile, Dataset
from genledger.tail.reader import ReadResult
from genledger.tail.roots import RemoteFile, open_source

if TYPE_CHECKING:  # the scanning half is imported once a file is to be read (`job_of`)
    from genledger.refresh.parallel import ScanJob

RESPONSE_FILES = "raw_responses*.jsonl"  # how examples name all response shards at once
NO_RESPONSES_YET = {
    "file": RESPONSE_FILES,
    "role": "responses",
    "records": 0,
    "error": None,
    "pending_bytes": 0,
    "settled": False,
    "line": 0,
}


@dataclass
class Counted:
    """A dataset refreshed: its new record, and its block's sections bar the cost."""

    record: DatasetRecord
    sections: dict[str, Any]
    rate: dict[str, Any] | None = None

    def block(self, cost: dict[str, Any]) -> dict[str, Any]:
        """The dataset's stats block, with its cost fields (`ledger.cost.cost_fields`)."""
        return dataset_block(self.sections, cost, self.rate)


def refresh_record(
    ds: Dataset,
    old: DatasetRecord,
    now: float,
    scans: Mapping[str, FileScan] | None = None,
    reading: Reading = DEFAULT_READING,
    health: HealthSettings = DEFAULT_HEALTH,
    forget_missing: bool = False,
) -> Counted:
    """Scan a dataset's files from `old` (or take `scans` made already, by file key);
    return its new record and its block's sections. Files of `old` the walk no longer lists stay
    in the record as gone (`genledger.refresh.gone`), unless `forget_missing`."""
    readable = {} if old.files_only_named else old.files  # a full re-read: no checkpoints
    windows = _windows(old, health)
    files = []
    for f in ds.files:
        state, delta = refresh_file(f, readable.get(f.name), scans, reading, now)
        windows.counted(delta.trail)  # records counted in file order: the latest window
        known = old.files.get(state.name)  # read at some refresh before: missed if it goes
        state.ever_read = state.ever_read or (known is not None and known.ever_read)
        files.append(state)
    if not forget_missing:
        files += gone_files(old, ds.path, _listed(ds))
    record = DatasetRecord(
        ds.name,
        old.data_root,
        {f.name: f for f in files},
        history=old.history,
        signature=old.signature,
        fleet_first=old.fleet_first,
        windows=windows,
        # the segment file its arrays were loaded from: the write appends only what they
        # gained (without it each refresh wrote them all again, in a new generation); a
        # full re-read loaded none, and starts a new one
        segments=None if old.files_only_named else old.segments,
    )
    statuses, not_statuses = read_statuses(ds)
    unrecognised = tuple(sorted((*ds.unrecognised, *not_statuses)))
    record.rules = dataset_rules(files, unrecognised, old.rules, reading.prompt_key)
    sections = dataset_sections(
        ds.kind,
        ds.n_prompts_config,
        files,
        record.rules,
        unrecognised,
        windows,
        health,
        statuses,
        ds.aliases,
    )
    return Counted(record, sections, update_rates(sections, record, now))


def _listed(ds: Dataset) -> set[str]:
    """The names the walk found for the dataset's files, their aliases in its folder too (a
    counted file now reached under another name is not gone)."""
    inside = f"{ds.name}/"
    aliases = {a[len(inside) :] for f in ds.files for a in f.aliases if a.startswith(inside)}
    return {f.name for f in ds.files} | aliases


def read_statuses(ds: Dataset) -> tuple[Status | None, list[str]]:
    """The dataset's batch status objects summed, and the files named like one that are not
    (listed as unrecognised: nothing is skipped in silence)."""
    found: list[tuple[str, ProviderCounts]] = []
    others: list[str] = []
    for name, source in ds.statuses:
        try:
            handle = open_source(source)
            try:
                data = handle.read_at(0, min(handle.size, MAX_STATUS_BYTES + 1))
            finally:
                handle.close()
            if len(data) > MAX_STATUS_BYTES:
                raise StatusError("too large for a status object")
            found.append((name, parse_status(data)))
        except (OSError, StatusError):
            others.append(name)
    return summed(found), others


def _windows(old: DatasetRecord, health: HealthSettings) -> Windows:
    """The windows to count on: the old record's, or fresh ones when the size changed."""
    if old.windows.limit == health.window:
        first, latest = list(old.windows.first), list(old.windows.latest)
        return Windows(health.window, first, latest, old.windows.frozen)
    return Windows(health.window)


def record_quantiles(record: DatasetRecord) -> Quantiles:
    """The output lengths of a dataset's files, side by side (`Quantiles.union`)."""
    return Quantiles.union(
        f.tally.quantiles.get("output_tokens", Quantiles()) for f in record.files.values()
    )


def total_quantiles(datasets: Iterable[Quantiles]) -> dict[str, int] | None:
    """Output-length quantiles over every dataset's (`record_quantiles`)."""
    return Quantiles.union(datasets).summary()


def _checkpoint(old: FileState | None) -> Checkpoint | None:
    # A file in error (unreadable, gone) is read again from its start once it can be.
    return old.checkpoint if old is not None and old.error is None else None


def _scanned(job: ScanJob) -> FileScan:
    from genledger.refresh.parallel import scan_job

    return scan_job(job)


def job_of(data_file: DataFile, old: FileState | None, reading: Reading, now: float) -> ScanJob:
    # imported here: a refresh whose datasets are all quiet reads no file and skips it
    from genledger.refresh.parallel import ScanJob

    f = data_file
    return ScanJob(f.key, f.path, f.name, f.role, _checkpoint(old), reading, now)


def refresh_file(
    data_file: DataFile,
    old: FileState | None,
    scans: Mapping[str, FileScan] | None,
    reading: Reading,
    now: float,
) -> tuple[FileState, FileTally]:
    """The file's new state, and what this refresh counted in it (`scans`: made already)."""
    if data_file.error is not None:  # listed, but nothing to open (a FIFO, a folder)
        state = FileState(data_file.dataset, data_file.name, data_file.role, error=data_file.error)
        return state, FileTally()
    scan = scans.get(data_file.key) if scans else None
    if scan is None:
        scan = as_listed(data_file, old) or _scanned(job_of(data_file, old, reading, now))
    settle = reading.settle_seconds
    state, counted = _merge(data_file, old, scan, now - settle, settle)
    if state.settled:  # a stream still open in a settled file is a request now
        books = StreamBooks(data_file.name, reading.formats, reading.params)
        settled, state.tally = _settled(state.tally, books)
        counted = FileTally(trail=counted.trail + settled.trail)
    return state, counted


def _joined(base: FileTally, delta: FileTally) -> tuple[FileTally, FileTally]:
    """`base + delta`, and what that counts beyond `base`: the delta's records with the
    requests that `base`'s open streams and the delta's first lines settle together (the
    windows take them in file order, as one pass over the file would)."""
    if not delta.trail.head and delta.empty() and delta.streams.empty:
        return base, delta  # an unchanged file: nothing to join
    counted = FileTally(streams=base.streams, books=base.books) + delta
    return replace(base, streams=StreamState()) + counted, counted


def _settled(tally: FileTally, books: StreamBooks) -> tuple[FileTally, FileTally]:
    """The requests `tally`'s open streams are once their file settled, and `tally` with
    them counted."""
    if not (tally.streams.open or tally.streams.heads):
        return FileTally(), tally
    settled = FileTally(streams=tally.streams, books=tally.books).settle_streams(books)
    return settled, replace(tally, streams=StreamState()) + settled


def as_listed(data_file: DataFile, old: FileState | None) -> FileScan | None:
    """The scan of a local file the walk listed as its checkpoint saw it (size, mtime and
    inode), made without opening it; None when it must be read."""
    cp, info = _checkpoint(old), data_file.listed
    if cp is None or info is None or info.node is None:
        return None
    if not unchanged_as_listed(cp, info.size, info.mtime_ns, info.node):
        return None
    path = data_file.path
    if isinstance(path, RemoteFile) or not os.access(path, os.R_OK, effective_ids=True):
        return None  # a chmod moves no mtime: open it, and say why it cannot be read
    pending = cp.pending if data_file.sealed else info.size - cp.offset
    read = ReadResult(cp, False, "unchanged", pending, info.size, info.mtime_ns / 1e9)
    return FileScan(FileTally(), read)


def _merge(
    data_file: DataFile,
    old: FileState | None,
    scan: FileScan,
    settled_by: float,
    settle_seconds: float = 0.0,
) -> tuple[FileState, FileTally]:
    """The file's new state, and what it counts beyond the old one (`_joined`); `settled_by`:
    a file last written, or first seen as it is, before then has settled."""
    state = FileState(data_file.dataset, data_file.name, data_file.role)
    state.aliases = data_file.aliases
    if scan.read is None:
        state.error = scan.error
        return state, FileTally()
    state.ever_read = True
    base = old.tally if old is not None and not scan.restarted else FileTally()
    state.tally, counted = _joined(base, scan.delta)
    cp = scan.read.checkpoint
    now = settled_by + settle_seconds
    state.checkpoint = replace(cp, since=cp.since or seen_since(_checkpoint(old), cp.file, now))
    state.pending_bytes = scan.read.pending_bytes
    state.mtime = scan.read.mtime
    state.last_read = scan.read.reason
    # settled by its mtime, or by our own clock (an mtime in the future settles too)
    state.settled = min(scan.read.mtime, state.checkpoint.since) <= settled_by
    return state, counted


def _signature(files: list[FileState], unrecognised: tuple[str, ...]) -> str:
    # Everything that tells a resumed read from a restarted one: a file rewritten to the same
    # length (new ids, same offset) must still re-run the dataset rules.
    parts = [
        (
            f.name,
            f.role,
            f.error,
            f.tally[RECORDS[f.role]],
            f.tally[NONZERO.get(f.role, RECORDS[f.role])],
            f.checkpoint.offset,
            f.checkpoint.file.head_sum,
            f.checkpoint.tail_sum,
            f.checkpoint.file.inode,
            f.pending_bytes,
            f.settled,
        )
        for f in files
    ]
    return hashlib.blake2b(orjson.dumps([parts, unrecognised]), digest_size=8).hexdigest()


def file_rows(files: list[FileState]) -> list[dict[str, Any]]:
    """The files table of a dataset's files (prompts files too: they can be unreadable or end
    without a newline)."""
    return [f.rule_row() for f in files]


def duplicate_failures(
    ids: list[tuple[str, IdList]],
    prompt_ids: list[tuple[str, IdList]],
    answers: list[tuple[str, HashList]],
) -> dict[str, RuleTally]:
    """The duplicate-id, duplicate-prompt-id and duplicate-answer rules of a dataset's files,
    each walked in C where it was built (`genledger.fast.repeats`): the rules' own sets
    cost a Python object a key on every refresh, however few keys were new."""
    failures = rule_rows.id_failures(ids, repeats.repeated_ids(_id_buffers(ids), MAX_EXAMPLES))
    found = repeats.repeated_ids(_id_buffers(prompt_ids), MAX_EXAMPLES)
    failures.update(rule_rows.prompt_id_failures(prompt_ids, found))
    found = repeats.repeated_ints([(k.keys, k.lines) for _, k in answers], MAX_EXAMPLES)
    failures.update(rule_rows.answer_failures(answers, found))
    return failures


def _id_buffers(files: list[tuple[str, IdList]]) -> list[tuple[bytearray, Any, Any]]:
    return [(ids.data, ids.lengths, ids.lines) for _, ids in files]


def dataset_rules(
    files: list[FileState],
    unrecognised: tuple[str, ...],
    old: DatasetState,
    prompt_key: str | None = None,
) -> DatasetState:
    signature = _signature(files, unrecognised)
    if old.signature == signature:
        return old
    responses = [f for f in files if f.role == "responses"]
    prompts = [f for f in files if f.role == "prompts"]
    failures = duplicate_failures(
        [(f.name, f.tally.ids) for f in responses],
        [(f.name, f.tally.id_list("prompt_ids")) for f in prompts],
        [(f.name, f.tally.hashes["answers"]) for f in responses if "answers" in f.tally.hashes],
    )
    # Only a prompts file so far: no record yet must say so, not pass on no
    # data (docs/checks.md).
    rows = file_rows(files)
    if all(f.role == "prompts" for f in files):
        rows.append(NO_RESPONSES_YET)
    failures.update(rule_rows.file_failures(rows))
    n_done = sum(f.tally["records"] for f in responses)
    n_nonzero = sum(f.tally["nonzero"] for f in responses)
    aggregate = rule_rows.dataset_failures(n_done, n_nonzero)
    for tally in aggregate.values():
        for example in tally.examples:
            example["file"] = RESPONSE_FILES  # the rule is about all response shards at once
    failures.update(aggregate)
    folder = [{"file": f.name, "recognised": True} for f in files]
    folder += [{"file": path, "recognised": False} for path in unrecognised]
    failures.update(rule_rows.folder_failures(folder))
    joined = _join(prompts, responses, prompt_key)
    return DatasetState(signature, failures, joined.block, joined.reason)


def _join(prompts: list[FileState], responses: list[FileState], prompt_key: str | None) -> Join:
    # The files there are: one counted before and gone now is reported as such, not joined.
    prompts = [f for f in prompts if not is_gone(f)]
    responses = [f for f in responses if not is_gone(f)]
    if any(f.error is not None for f in prompts):
        return Join(None, "a prompts file cannot be read", [])
    unreadable = [f.name for f in responses if f.error is not None]
    if unreadable:
        return Join(None, f"a responses file cannot be read ({unreadable[0]})", [])
    return join([f.tally for f in prompts], [f.tally for f in responses], prompt_key)
