"""One refresh: discover, read what is new, validate, write the stats JSON, commit state."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from genledger.config import Config, Switches, is_url
from genledger.fast.parallel import ScanJob, scan_all
from genledger.ledger import jsonio
from genledger.ledger.filescan import FileScan
from genledger.ledger.rates import total_rate, update_rates
from genledger.ledger.records import DatasetRecord, DatasetState, FileState
from genledger.ledger.stats import dataset_stats, document
from genledger.ledger.tally import FileTally, RuleTally
from genledger.parse.declarations import declared, use_formats
from genledger.refresh.atomic import atomic_write_bytes
from genledger.refresh.missing import gone_files, kind_of_files
from genledger.refresh.scan import SETTLE_SECONDS, scan_file, scan_job
from genledger.refresh.sealed import scan_parquet_groups
from genledger.refresh.state import StateStore
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import DataFile, Dataset, survey
from genledger.tail.lines import limit_lines
from genledger.tail.roots import open_root, root_id

RESPONSE_FILES = "raw_responses*.jsonl"  # how examples name all response shards at once
DEFAULT_SWITCHES = Switches()
NO_RESPONSES_YET = {
    "file": RESPONSE_FILES,
    "role": "responses",
    "records": 0,
    "error": None,
    "pending_bytes": 0,
    "settled": False,
    "line": 0,
}


class UsageError(ValueError):
    """Bad invocation: a required path is not set. The message says which."""


@dataclass
class Refresh:
    """A finished refresh: the stats written and the records committed."""

    stats: dict[str, Any]
    records: dict[str, DatasetRecord]
    stats_path: Path
    notices: list[str] = field(default_factory=list)  # one line each, for the operator

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
    refuse_writes_inside(config)
    return StateStore(config.resolved_state_dir(), root_id(config.data_root))


def refuse_writes_inside(config: Config) -> None:
    """Raise `UsageError` when the stats path or the state dir resolves inside a local data
    root: genledger never writes there (`-o ROOT/ds/raw_responses.jsonl` replaced a shard)."""
    if config.data_root is None or is_url(config.data_root):
        return
    root = os.path.realpath(config.data_root)
    for what, path in (
        ("stats path", config.stats_path),
        ("state dir", config.resolved_state_dir()),
    ):
        if path is None:
            continue
        real = os.path.realpath(path)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            raise UsageError(
                f"the {what} {path} is inside the data root {config.data_root}: "
                "genledger never writes into the data root; choose a path outside it"
            )


def refresh(
    config: Config, full: bool = False, now: float | None = None, forget_missing: bool = False
) -> Refresh:
    """Bring the stats JSON up to date with the data root (incrementally unless `full`).
    `forget_missing`: files and datasets counted before and gone now are dropped from the
    state instead of being reported (again) as gone."""
    store = _store(config)
    if config.stats_path is None:
        raise UsageError("no stats path: pass -o STATS.json or set GENLEDGER_STATS_PATH")
    assert config.data_root is not None
    found = survey(config.data_root, config)
    datasets = found.datasets
    now = time.time() if now is None else now
    missing = store.other_datasets({ds.name for ds in datasets})
    with ExitStack() as stack:
        for name in sorted({ds.name for ds in datasets} | set(missing)):
            stack.enter_context(store.locked(name))
        previous = {ds.name: _previous(store, ds, full) for ds in datasets}
        # Parallel lever (genledger/fast/parallel.py): big reads run in forked workers first.
        switches = config.switches
        settle = config.patterns.settle_seconds
        jobs = [
            _job(f, previous[ds.name], switches, now, settle)
            for ds in datasets
            for f in ds.files
            if f.error is None
        ]
        scans = scan_all(jobs, scan_job, switches.workers, scan_parquet_groups)
        refreshed = {
            ds.name: refresh_record(
                ds, previous[ds.name], now, scans, switches, settle, forget_missing
            )
            for ds in datasets
        }
        blocks = {name: block for name, (_, block) in refreshed.items()}
        if not forget_missing:
            for name in missing:
                block = _gone_dataset(config, store.load(name, history_only=True))
                if block is not None:
                    blocks[name] = block
        blocks = dict(sorted(blocks.items()))
        outside = root_failures(found.unrecognised, switches, found.problems, len(blocks))
        stats = document(store.data_root, blocks, now, found.unrecognised, outside, found.problems)
        stats["totals"]["rate"] = total_rate(blocks)
        atomic_write_bytes(config.stats_path, jsonio.dumps(stats, indent=True))
        # Checkpoints move only once the stats that include them are durable.
        store.save_all(record for record, _ in refreshed.values())
        if forget_missing:
            store.forget(missing)
    records = {name: rec for name, (rec, _) in refreshed.items()}
    notices = [*store.notices, *_unknown_datasets(config, blocks)]
    return Refresh(stats, records, config.stats_path, notices)


def _gone_dataset(config: Config, record: DatasetRecord) -> dict[str, Any] | None:
    """The block of a dataset the state dir knows and the root no longer holds: each of its
    files gone, with the OS's reason (a share unmounted: "No such file or directory"); None
    when none of its files was ever read (nothing counted is missed)."""
    assert config.data_root is not None
    folder = open_root(config.data_root).source(record.name)
    files = gone_files(record, folder, set())
    if not files:
        return None
    rules = _dataset_rules(files, (), DatasetState(), config.switches)
    n_prompts = config.n_prompts.get(record.name)
    return dataset_stats(kind_of_files(files), n_prompts, files, rules, ())


def _unknown_datasets(config: Config, blocks: Mapping[str, Any]) -> list[str]:
    where = config.source or "the config"
    return [
        f'{where}: [datasets."{name}"] names no dataset of the data root (yet): its n_prompts '
        "applies once a folder of that name holds a recognised file"
        for name in sorted(config.n_prompts)
        if name not in blocks
    ]


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
    forget_missing: bool = False,
) -> tuple[DatasetRecord, dict[str, Any]]:
    """Scan a dataset's files from `old` (or take `scans` made already, by file key);
    return its new record and its stats block. Files of `old` the walk no longer lists stay
    in the record as gone (`genledger.refresh.missing`), unless `forget_missing`."""
    readable = {} if old.files_only_named else old.files  # a full re-read: no checkpoints
    files = [
        _refresh_file(f, readable.get(f.name), scans, switches, now, settle_seconds)
        for f in ds.files
    ]
    for state in files:  # read at some refresh before: missed if it goes
        known = old.files.get(state.name)
        state.ever_read = state.ever_read or (known is not None and known.ever_read)
    if not forget_missing:
        files += gone_files(old, ds.path, {f.name for f in ds.files})
    record = DatasetRecord(ds.name, old.data_root, {f.name: f for f in files}, history=old.history)
    record.rules = _dataset_rules(files, ds.unrecognised, old.rules, switches)
    block = dataset_stats(ds.kind, ds.n_prompts_config, files, record.rules, ds.unrecognised)
    update_rates(block, record, now)
    return record, block


def _checkpoint(old: FileState | None) -> Checkpoint | None:
    # A file in error (unreadable, gone) is read again from its start once it can be.
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
    if data_file.error is not None:  # listed, but nothing to open (a FIFO, a folder)
        return FileState(data_file.dataset, data_file.name, data_file.role, error=data_file.error)
    scan = scans.get(data_file.key) if scans else None
    if scan is None:
        f = data_file
        checkpoint = _checkpoint(old)
        scan = scan_file(f.path, f.name, f.role, checkpoint, None, switches, now, settle_seconds)
    return _merge(data_file, old, scan, now, settle_seconds)


def _merge(
    data_file: DataFile, old: FileState | None, scan: FileScan, now: float, settle: float
) -> FileState:
    state = FileState(data_file.dataset, data_file.name, data_file.role)
    if scan.read is None:
        state.error = scan.error
        return state
    state.ever_read = True
    base = old.tally if old is not None and not scan.restarted else FileTally()
    state.tally = base + scan.delta
    state.checkpoint = scan.read.checkpoint
    state.pending_bytes = scan.read.pending_bytes
    state.mtime = scan.read.mtime
    state.last_read = scan.read.reason
    state.settled = now - scan.read.mtime >= settle
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
            f.pending_bytes,
            f.settled,
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


def root_failures(
    unrecognised: tuple[str, ...],
    switches: Switches,
    problems: tuple[tuple[str, str], ...] = (),
    n_datasets: int = 1,
) -> dict[str, RuleTally]:
    """The rule failures outside every dataset (paths relative to the data root): files
    matching no pattern, entries that cannot be read (`problems`: path, reason), and a root
    holding no dataset."""
    evaluation = rule_evaluation(switches)
    failures: dict[str, RuleTally] = dict(evaluation.root_failures(n_datasets))
    if unrecognised:
        rows = [{"file": path, "recognised": False} for path in unrecognised]
        failures.update(evaluation.folder_failures(rows))
    if problems:
        unreadable = [FileState("", path, "responses", error=why) for path, why in problems]
        failures.update(evaluation.file_failures([f.rule_row() for f in unreadable]))
    return failures


def _dataset_rules(
    files: list[FileState], unrecognised: tuple[str, ...], old: DatasetState, switches: Switches
) -> DatasetState:
    signature = _signature(files, unrecognised)
    if old.signature == signature:
        return old
    evaluation = rule_evaluation(switches)

    responses = [f for f in files if f.role == "responses"]
    failures = evaluation.id_failures([(f.name, f.tally.ids) for f in responses])
    rows: list[dict[str, Any]] = [f.rule_row() for f in files]
    if all(f.role == "prompts" for f in files):
        # Only a prompts file so far: no record yet must say so, not pass on no
        # data (docs/design.md §6).
        rows.append(NO_RESPONSES_YET)
    failures.update(evaluation.file_failures(rows))
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
