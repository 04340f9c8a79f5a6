"""One refresh: discover, read what is new, validate, write the stats JSON, commit state."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from genledger.atomic import atomic_write_bytes
from genledger.config import Config
from genledger.discovery import DataFile, Dataset, discover
from genledger.scan import FileScan, scan_file
from genledger.state import DatasetState, FileState, RunState
from genledger.stats import dataset_stats, document
from genledger.tally import FileTally

VANISHED = "vanished since the last refresh"


class UsageError(ValueError):
    """Bad invocation: a required path is not set. The message says which."""


@dataclass
class Refresh:
    """A finished refresh: the stats written and the state committed."""

    stats: dict[str, Any]
    state: RunState
    stats_path: Path

    @property
    def has_errors(self) -> bool:
        """Some dataset has an error-severity failure."""
        return self.stats["totals"]["quality"]["status"] == "error"


def refresh(config: Config, full: bool = False, now: float | None = None) -> Refresh:
    """Bring the stats JSON up to date with the data root (incrementally unless `full`)."""
    if config.data_root is None:
        raise UsageError("no data root: pass DATA_ROOT or set GENLEDGER_DATA_ROOT")
    if config.stats_path is None:
        raise UsageError("no stats path: pass -o STATS.json or set GENLEDGER_STATS_PATH")
    root = str(config.data_root.resolve())
    datasets = discover(config.data_root, config)
    state_dir = config.resolved_state_dir()
    old = RunState(root) if full else RunState.load(state_dir, root)
    new = RunState(root, history=old.history)
    blocks = {ds.name: _refresh_dataset(ds, old, new) for ds in datasets}
    stats = document(root, blocks, time.time() if now is None else now)
    atomic_write_bytes(config.stats_path, orjson.dumps(stats, option=orjson.OPT_INDENT_2))
    # The checkpoint moves only once the stats that include it are durable.
    new.save(state_dir)
    return Refresh(stats, new, config.stats_path)


def _refresh_dataset(ds: Dataset, old: RunState, new: RunState) -> dict[str, Any]:
    files = [_refresh_file(f, old.files.get(f.key)) for f in ds.files]
    for state in files:
        new.files[f"{ds.name}/{state.name}"] = state
    dataset_state = _dataset_rules(ds, files, old.datasets.get(ds.name))
    new.datasets[ds.name] = dataset_state
    block = dataset_stats(ds.kind, ds.n_prompts_config, files, dataset_state)
    present = {f.name for f in ds.files}
    for gone in old.files.values():
        if gone.dataset == ds.name and gone.name not in present:
            block["files"][gone.name] = {
                "bytes": 0,
                "lines": 0,
                "pending_bytes": 0,
                "mtime": None,
                "role": gone.role,
                "error": VANISHED,
            }
    return block


def _refresh_file(data_file: DataFile, old: FileState | None) -> FileState:
    checkpoint = old.checkpoint if old is not None and old.error is None else None
    scan = scan_file(data_file.path, data_file.name, data_file.role, checkpoint)
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


def _signature(files: list[FileState]) -> str:
    parts = [
        (f.name, f.role, f.checkpoint.offset, f.checkpoint.head_sum, f.checkpoint.inode, f.error)
        for f in files
    ]
    return hashlib.blake2b(orjson.dumps(parts), digest_size=8).hexdigest()


def _dataset_rules(ds: Dataset, files: list[FileState], old: DatasetState | None) -> DatasetState:
    signature = _signature(files)
    if old is not None and old.signature == signature:
        return old
    # Dataset-level rules need pandas; they run only when one of the dataset's files changed.
    from genledger.quality import dataset_failures, file_failures, id_failures

    responses = [f for f in files if f.role == "responses"]
    failures = id_failures((f.name, f.tally) for f in responses)
    rows = [
        {"file": f.name, "role": f.role, "records": f.tally.records, "error": f.error}
        for f in files
        if f.role != "prompts"
    ]
    failures.update(file_failures(rows))
    n_done = sum(f.tally.records for f in responses)
    n_nonzero = sum(f.tally.nonzero for f in responses)
    failures.update(dataset_failures(ds.name, n_done, n_nonzero))
    return DatasetState(signature, failures)
