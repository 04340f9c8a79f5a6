"""One refresh: discover, read what is new, validate, write the stats JSON, commit state."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from genledger.config import Config, Switches
from genledger.fast.parallel import ScanJob, scan_all
from genledger.ledger.filescan import FileScan
from genledger.ledger.rates import total_rate, update_rates
from genledger.ledger.records import DatasetRecord, DatasetState, FileState
from genledger.ledger.stats import dataset_stats, document
from genledger.ledger.tally import FileTally, RuleTally
from genledger.parse.declarations import declared, use_formats
from genledger.refresh.atomic import atomic_write_bytes
from genledger.refresh.scan import SETTLE_SECONDS, scan_file, scan_job
from genledger.refresh.sealed import scan_parquet_groups
from genledger.refresh.state import StateStore
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import DataFile, Dataset, survey
from genledger.tail.lines import limit_lines
from genledger.tail.roots import root_id

VANISHED = "vanished since the last refresh"
RESPONSE_FILES = "raw_responses*.jsonl"  # how examples name all response shards at once
DEFAULT_SWITCHES = Switches()
NO_RESPONSES_YET = {"file": RESPONSE_FILES, "role": "responses", "records": 0, "error": None}


class UsageError(ValueError):
    """Bad invocation: a required path is not set. The message says which."""


@dataclass
class Refresh:
    """A finished refresh: the stats written and the records committed."""

    stats: dict[str, Any]
    records: dict[str, DatasetRecord]
    stats_path: Path

    @property
    def has_errors(self) -> bool:
        """Some dataset has an error-severity failure."""
        return bool(self.stats["totals"]["quality"]["status"] == "error")


def _store(config: Config) -> StateStore:
    # The config's declared formats are in force for this refresh (and its forked workers).
    use_formats(declared(config))
    limit_lines(config.patterns.max_line_bytes)
    if config.data_root is None:
        raise UsageError("no data root: pass DATA_ROOT or set GENLEDGER_DATA_ROOT")
    return StateStore(config.resolved_state_dir(), root_id(config.data_root))


def refresh(config: Config, full: bool = False, now: float | None = None) -> Refresh:
    """Bring the stats JSON up to date with the data root (incrementally unless `full`)."""
    store = _store(config)
    if config.stats_path is None:
        raise UsageError("no stats path: pass -o STATS.json or set GENLEDGER_STATS_PATH")
    assert config.data_root is not None
    found = survey(config.data_root, config)
    datasets = found.datasets
    now = time.time() if now is None else now
    with ExitStack() as stack:
        for ds in datasets:
            stack.enter_context(store.locked(ds.name))
        previous = {ds.name: _previous(store, ds, full) for ds in datasets}
        # Parallel lever (genledger/fast/parallel.py): big reads run in forked workers first.
        switches = config.switches
        settle = config.patterns.settle_seconds
        jobs = [
            _job(f, previous[ds.name], switches, now, settle) for ds in datasets for f in ds.files
        ]
        scans = scan_all(jobs, scan_job, switches.workers, scan_parquet_groups)
        refreshed = {
            ds.name: refresh_record(ds, previous[ds.name], now, scans, switches, settle)
            for ds in datasets
        }
        blocks = {name: block for name, (_, block) in refreshed.items()}
        outside = root_failures(found.unrecognised, switches)
        stats = document(store.data_root, blocks, now, found.unrecognised, outside)
        stats["totals"]["rate"] = total_rate(blocks)
        atomic_write_bytes(config.stats_path, orjson.dumps(stats, option=orjson.OPT_INDENT_2))
        # Checkpoints move only once the stats that include them are durable.
        store.save_all(record for record, _ in refreshed.values())
    return Refresh(stats, {name: rec for name, (rec, _) in refreshed.items()}, config.stats_path)


def refresh_dataset(
    config: Config, dataset: Dataset, full: bool = False, now: float | None = None
) -> dict[str, Any]:
    """Refresh one dataset and commit its record; returns its stats-JSON block."""
    return refresh_dataset_record(config, dataset, full, now)[1]


def refresh_dataset_record(
    config: Config, dataset: Dataset, full: bool = False, now: float | None = None
) -> tuple[DatasetRecord, dict[str, Any]]:
    """Refresh one dataset and commit its record; returns the record and its stats block."""
    store = _store(config)
    now = time.time() if now is None else now
    with store.locked(dataset.name):
        record, block = refresh_record(
            dataset,
            _previous(store, dataset, full),
            now,
            switches=config.switches,
            settle_seconds=config.patterns.settle_seconds,
        )
        store.save(record)
    return record, block


def _previous(store: StateStore, ds: Dataset, full: bool) -> DatasetRecord:
    # --full forgets checkpoints and counts, not the rate history of the run.
    return store.load(ds.name, history_only=full)


def refresh_record(
    ds: Dataset,
    old: DatasetRecord,
    now: float,
    scans: Mapping[str, FileScan] | None = None,
    switches: Switches = DEFAULT_SWITCHES,
    settle_seconds: float = SETTLE_SECONDS,
) -> tuple[DatasetRecord, dict[str, Any]]:
    """Scan a dataset's files from `old` (or take `scans` made already, by file key);
    return its new record and its stats block."""
    files = [
        _refresh_file(f, old.files.get(f.name), scans, switches, now, settle_seconds)
        for f in ds.files
    ]
    record = DatasetRecord(ds.name, old.data_root, {f.name: f for f in files}, history=old.history)
    record.rules = _dataset_rules(files, ds.unrecognised, old.rules, switches)
    block = dataset_stats(ds.kind, ds.n_prompts_config, files, record.rules, ds.unrecognised)
    for gone in old.files.values():
        if gone.name not in record.files:
            block["files"][gone.name] = _vanished_entry(gone)
    update_rates(block, record, now)
    return record, block


def _vanished_entry(gone: FileState) -> dict[str, Any]:
    return {
        "bytes": 0,
        "lines": 0,
        "pending_bytes": 0,
        "mtime": None,
        "role": gone.role,
        "error": VANISHED,
    }


def _checkpoint(old: FileState | None) -> Checkpoint | None:
    return old.checkpoint if old is not None and old.error is None else None


def _job(
    data_file: DataFile, old: DatasetRecord, switches: Switches, now: float, settle: float
) -> ScanJob:
    checkpoint = _checkpoint(old.files.get(data_file.name))
    f = data_file
    return ScanJob(f.key, f.path, f.name, f.role, checkpoint, switches, now, settle)


def _refresh_file(
    data_file: DataFile,
    old: FileState | None,
    scans: Mapping[str, FileScan] | None,
    switches: Switches,
    now: float,
    settle_seconds: float,
) -> FileState:
    scan = scans.get(data_file.key) if scans else None
    if scan is None:
        f = data_file
        checkpoint = _checkpoint(old)
        scan = scan_file(f.path, f.name, f.role, checkpoint, None, switches, now, settle_seconds)
    return _merge(data_file, old, scan)


def _merge(data_file: DataFile, old: FileState | None, scan: FileScan) -> FileState:
    state = FileState(data_file.dataset, data_file.name, data_file.role)
    if scan.read is None:
        state.error = scan.error
        return state
    base = old.tally if old is not None and not scan.restarted else FileTally()
    state.tally = base + scan.delta
    state.checkpoint = scan.read.checkpoint
    state.pending_bytes = scan.read.pending_bytes
    state.mtime = scan.read.mtime
    state.last_read = scan.read.reason
    return state


def _signature(files: list[FileState], unrecognised: tuple[str, ...]) -> str:
    # Everything that tells a resumed read from a restarted one: a file rewritten to the same
    # length (new ids, same offset) must still re-run the dataset rules.
    parts = [
        (
            f.name,
            f.role,
            f.error,
            f.tally.records,
            f.tally.nonzero,
            f.checkpoint.offset,
            f.checkpoint.head_sum,
            f.checkpoint.tail_sum,
            f.checkpoint.inode,
        )
        for f in files
    ]
    return hashlib.blake2b(orjson.dumps([parts, unrecognised]), digest_size=8).hexdigest()


def rule_evaluation(switches: Switches) -> Any:
    """The module that evaluates the rules: `rules.rows`, or `rules.frame` when asked for."""
    if switches.rules == "pandera":
        from genledger.rules import frame

        return frame
    from genledger.rules import rows

    return rows


def root_failures(unrecognised: tuple[str, ...], switches: Switches) -> dict[str, RuleTally]:
    """The rule failures of files in no dataset (paths relative to the data root)."""
    if not unrecognised:
        return {}
    rows = [{"file": path, "recognised": False} for path in unrecognised]
    return dict(rule_evaluation(switches).folder_failures(rows))


def _dataset_rules(
    files: list[FileState], unrecognised: tuple[str, ...], old: DatasetState, switches: Switches
) -> DatasetState:
    signature = _signature(files, unrecognised)
    if old.signature == signature:
        return old
    evaluation = rule_evaluation(switches)

    responses = [f for f in files if f.role == "responses"]
    failures = evaluation.id_failures([(f.name, f.tally.ids) for f in responses])
    rows: list[dict[str, Any]] = [
        {"file": f.name, "role": f.role, "records": f.tally.records, "error": f.error}
        for f in files
        if f.role != "prompts"
    ]
    # Only a prompts file so far: no record yet must say so, not pass on no
    # data (docs/design.md §6).
    failures.update(evaluation.file_failures(rows or [NO_RESPONSES_YET]))
    n_done = sum(f.tally.records for f in responses)
    n_nonzero = sum(f.tally.nonzero for f in responses)
    aggregate = evaluation.dataset_failures(n_done, n_nonzero)
    for tally in aggregate.values():
        for example in tally.examples:
            example["file"] = RESPONSE_FILES  # the rule is about all response shards at once
    failures.update(aggregate)
    folder = [{"file": f.name, "recognised": True} for f in files]
    folder += [{"file": path, "recognised": False} for path in unrecognised]
    failures.update(evaluation.folder_failures(folder))
    return DatasetState(signature, failures)
