"""One refresh: discover, read what is new, validate, write the stats JSON, commit state."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from genledger.config import Config, HealthSettings, is_url
from genledger.ledger import jsonio
from genledger.ledger.books import NONZERO, RECORDS
from genledger.ledger.cost import (
    Costing,
    DatasetCost,
    Fleet,
    ModelCost,
    cost_fields,
    dataset_cost,
    fleet_of,
    share_fleet,
    total_fields,
)
from genledger.ledger.health import DEFAULT_HEALTH
from genledger.ledger.prompts import Join, join
from genledger.ledger.quantiles import Quantiles
from genledger.ledger.rates import total_rate, update_rates
from genledger.ledger.records import DatasetRecord, DatasetState, FileState, counting_signature
from genledger.ledger.stats import dataset_stats, document
from genledger.ledger.streambooks import StreamBooks
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows
from genledger.refresh.atomic import atomic_write_bytes
from genledger.refresh.filescan import FileScan
from genledger.refresh.gone import gone_files, is_gone, kind_of_files
from genledger.refresh.parallel import ScanJob, scan_all, scan_job
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.refresh.state import StateStore
from genledger.rules import rows as rule_rows
from genledger.rules.result import RuleTally
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import DataFile, Dataset, open_root, survey
from genledger.tail.roots import root_id

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


class UsageError(ValueError):
    """Bad invocation: a required path is not set. The message says which."""


@dataclass
class Refresh:
    """A finished refresh: the stats written and the records committed."""

    stats: dict[str, Any]
    records: dict[str, DatasetRecord]
    stats_path: Path
    notices: list[str] = field(default_factory=list)  # one line each, for people

    @property
    def has_errors(self) -> bool:
        """Some dataset has an error-severity failure."""
        return bool(self.stats["totals"]["quality"]["status"] == "error")


def _store(config: Config) -> StateStore:
    if config.data_root is None:
        raise UsageError("no data root: pass DATA_ROOT or set GENLEDGER_DATA_ROOT")
    refuse_writes_inside(config)
    signature = counting_signature(config.format_set, config.counting_settings())
    return StateStore(
        config.resolved_state_dir(),
        root_id(config.data_root),
        signature,
        config.patterns.lock_wait_seconds,
    )


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
    readings = {ds.name: Reading.of(config, ds.name) for ds in datasets}
    now = time.time() if now is None else now
    missing = store.other_datasets({ds.name for ds in datasets})
    with ExitStack() as stack:
        for name in sorted({ds.name for ds in datasets} | set(missing)):
            stack.enter_context(store.locked(name))
        previous = {ds.name: _previous(store, ds, full) for ds in datasets}
        # The parallel lever (refresh.parallel): big reads run in forked workers first.
        jobs = [
            _job(f, previous[ds.name].files.get(f.name), readings[ds.name], now)
            for ds in datasets
            for f in ds.files
            if f.error is None
        ]
        scans = scan_all(jobs, config.switches.workers)
        refreshed = {
            ds.name: refresh_record(
                ds,
                previous[ds.name],
                now,
                scans.done,
                readings[ds.name],
                config.health,
                forget_missing,
            )
            for ds in datasets
        }
        blocks = {name: block for name, (_, block) in refreshed.items()}
        fleet = _priced(config, store, refreshed, now)
        if not forget_missing:
            blocks.update(_gone_datasets(config, store, missing, fleet))
        blocks = dict(sorted(blocks.items()))
        outside = root_failures(found.unrecognised, found.problems, len(blocks))
        stats = document(store.data_root, blocks, now, found.unrecognised, outside, found.problems)
        stats["totals"]["rate"] = total_rate(blocks)
        with_cost(stats["totals"], total_fields(list(blocks.values()), fleet))
        stats["totals"]["health"]["output_tokens"] = total_quantiles(
            record for record, _ in refreshed.values()
        )
        atomic_write_bytes(config.stats_path, jsonio.dumps(stats, indent=True))
        # Checkpoints move only once the stats that include them are durable.
        store.save_all(record for record, _ in refreshed.values())
        if forget_missing:
            store.forget(missing)
    notices = [*_notices(previous), *scans.notices]
    notices += _unknown_datasets(config, blocks)
    records = {name: rec for name, (rec, _) in refreshed.items()}
    return Refresh(stats, records, config.stats_path, notices)


def _gone_datasets(
    config: Config, store: StateStore, missing: list[str], fleet: Fleet | None
) -> dict[str, dict[str, Any]]:
    """The blocks of the datasets the state dir knows and the root no longer holds."""
    blocks = {}
    for name in missing:
        block = _gone_dataset(config, store.load(name, history_only=True))
        if block is not None:
            with_cost(block, cost_fields(None, 0, block["n_prompts"], fleet))
            blocks[name] = block
    return blocks


def _gone_dataset(config: Config, record: DatasetRecord) -> dict[str, Any] | None:
    """The block of a dataset the state dir knows and the root no longer holds: each of its
    files gone, with the OS's reason (a share unmounted: "No such file or directory"); None
    when none of its files was ever read (nothing counted is missed)."""
    assert config.data_root is not None
    folder = open_root(config.data_root).source(record.name)
    files = gone_files(record, folder, set())
    if not files:
        return None
    rules = _dataset_rules(files, (), DatasetState())
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


PRICES_FILE = "prices.json"  # the rates found so far (genledger.ledger.prices), in the state dir


def _priced(
    config: Config,
    store: StateStore,
    refreshed: Mapping[str, tuple[DatasetRecord, dict[str, Any]]],
    now: float,
    others: bool = False,
) -> Fleet | None:
    """Price every refreshed dataset and put its cost fields in its block; the fleet is
    shared over these datasets (with `others`: over every dataset's kept fleet summary)."""
    costing = Costing.of(config, store.read_extra(PRICES_FILE))
    costs = {}
    for name, (record, _) in refreshed.items():
        responses = [f for f in record.files.values() if f.role == "responses"]
        cost = costs[name] = dataset_cost(name, responses, costing, now)
        if cost.fleet_first is not None:
            record.fleet_first = min(cost.fleet_first, record.fleet_first or cost.fleet_first)
            cost.fleet_first = record.fleet_first
    kept = _fleet_summaries(store, set(refreshed)) if others else []
    fleet = fleet_of(config.fleet, [*costs.values(), *kept])
    share_fleet(fleet, costs.values())
    for name, (_, block) in refreshed.items():
        fields = cost_fields(costs[name], block["n_done"], block["n_prompts"], fleet)
        with_cost(block, fields)
    remembered = costing.table.dump(store.read_extra(PRICES_FILE))
    if remembered is not None:
        store.write_extra(PRICES_FILE, remembered)
    for name, cost in costs.items():
        _keep_fleet_summary(store, name, cost)
    if not others:  # every dataset of the root was refreshed: the others are gone
        store.drop_fleet_summaries(refreshed)
    return fleet


def with_cost(block: dict[str, Any], fields: dict[str, Any]) -> None:
    """Put the cost fields in a stats block, before its quality."""
    tail = {
        key: block.pop(key)
        for key in list(block)
        if key in ("quality", "files", "unrecognised", "rate")
    }
    block.update(fields)
    block.update(tail)


def _keep_fleet_summary(store: StateStore, name: str, cost: DatasetCost) -> None:
    path = store.fleet_name(name)
    summary = [cost.fleet_tokens, cost.fleet_records, cost.fleet_first, cost.fleet_last]
    if cost.fleet_records or store.read_extra(path) is not None:
        store.write_extra(path, orjson.dumps({"dataset": name, "fleet": summary}))


def _fleet_summaries(store: StateStore, skip: set[str]) -> list[DatasetCost]:
    """The fleet summaries other refreshes kept, as costs (of datasets not in `skip`)."""
    found = []
    for raw in store.fleet_summaries():
        try:
            data = orjson.loads(raw)
            tokens, records, first, last = data["fleet"]
            if data["dataset"] in skip or not records:
                continue
            cost = DatasetCost(fleet_first=float(first), fleet_last=float(last))
            cost.models["fleet"] = ModelCost(fleet_tokens=int(tokens), fleet_records=int(records))
        except (ValueError, KeyError, TypeError):
            continue  # a damaged summary: that dataset's share waits for its next refresh
        found.append(cost)
    return found


def _notices(previous: Mapping[str, DatasetRecord]) -> list[str]:
    """Why committed records were not resumed, once per reason."""
    reasons: dict[str, list[str]] = {}
    for name, record in previous.items():
        if record.notice is not None:
            reasons.setdefault(record.notice, []).append(name)
    return [
        reason if len(names) == 1 else f"{reason} ({len(names)} datasets)"
        for reason, names in reasons.items()
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
        old = _previous(store, dataset, full)
        reading = Reading.of(config, dataset.name)
        record, block = refresh_record(dataset, old, now, None, reading, config.health)
        _priced(config, store, {dataset.name: (record, block)}, now, others=True)
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
    reading: Reading = DEFAULT_READING,
    health: HealthSettings = DEFAULT_HEALTH,
    forget_missing: bool = False,
) -> tuple[DatasetRecord, dict[str, Any]]:
    """Scan a dataset's files from `old` (or take `scans` made already, by file key);
    return its new record and its stats block. Files of `old` the walk no longer lists stay
    in the record as gone (`genledger.refresh.gone`), unless `forget_missing`."""
    readable = {} if old.files_only_named else old.files  # a full re-read: no checkpoints
    windows = _windows(old, health)
    files = []
    for f in ds.files:
        state, delta = _refresh_file(f, readable.get(f.name), scans, reading, now)
        windows.counted(delta.trail)  # records counted in file order: the latest window
        known = old.files.get(state.name)  # read at some refresh before: missed if it goes
        state.ever_read = state.ever_read or (known is not None and known.ever_read)
        files.append(state)
    if not forget_missing:
        files += gone_files(old, ds.path, {f.name for f in ds.files})
    record = DatasetRecord(
        ds.name,
        old.data_root,
        {f.name: f for f in files},
        history=old.history,
        signature=old.signature,
        fleet_first=old.fleet_first,
        windows=windows,
    )
    record.rules = _dataset_rules(files, ds.unrecognised, old.rules, reading.prompt_key)
    block = dataset_stats(
        ds.kind, ds.n_prompts_config, files, record.rules, ds.unrecognised, windows, health
    )
    update_rates(block, record, now)
    return record, block


def _windows(old: DatasetRecord, health: HealthSettings) -> Windows:
    """The windows to count on: the old record's, or fresh ones when the size changed."""
    if old.windows.limit == health.window:
        return Windows(health.window, list(old.windows.first), list(old.windows.latest))
    return Windows(health.window)


def total_quantiles(records: Iterable[DatasetRecord]) -> dict[str, int] | None:
    """Output-length quantiles over every dataset's response files."""
    merged = Quantiles()
    for record in records:
        for f in record.files.values():
            merged = merged + f.tally.quantiles.get("output_tokens", Quantiles())
    return merged.summary()


def _checkpoint(old: FileState | None) -> Checkpoint | None:
    # A file in error (unreadable, gone) is read again from its start once it can be.
    return old.checkpoint if old is not None and old.error is None else None


def _job(data_file: DataFile, old: FileState | None, reading: Reading, now: float) -> ScanJob:
    f = data_file
    return ScanJob(f.key, f.path, f.name, f.role, _checkpoint(old), reading, now)


def _refresh_file(
    data_file: DataFile,
    old: FileState | None,
    scans: Mapping[str, FileScan] | None,
    reading: Reading,
    now: float,
) -> tuple[FileState, FileTally]:
    """The file's new state, and what this refresh counted in it."""
    if data_file.error is not None:  # listed, but nothing to open (a FIFO, a folder)
        state = FileState(data_file.dataset, data_file.name, data_file.role, error=data_file.error)
        return state, FileTally()
    scan = scans.get(data_file.key) if scans else None
    if scan is None:
        scan = scan_job(_job(data_file, old, reading, now))
    state = _merge(data_file, old, scan, now - reading.settle_seconds)
    if state.settled:  # a stream still open in a settled file is a request now (§13a)
        state.tally = state.tally.settle_streams(
            StreamBooks(data_file.name, reading.formats, reading.params)
        )
    return state, scan.delta


def _merge(
    data_file: DataFile, old: FileState | None, scan: FileScan, settled_by: float
) -> FileState:
    """The file's new state; `settled_by`: a file last written before then has settled."""
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
    state.settled = scan.read.mtime <= settled_by
    return state


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


def root_failures(
    unrecognised: tuple[str, ...], problems: tuple[tuple[str, str], ...] = (), n_datasets: int = 1
) -> dict[str, RuleTally]:
    """The rule failures outside every dataset (paths relative to the data root): files
    matching no pattern, entries that cannot be read (`problems`: path, reason), and a root
    holding no dataset."""
    failures = rule_rows.root_failures(n_datasets)
    if unrecognised:
        rows = [{"file": path, "recognised": False} for path in unrecognised]
        failures.update(rule_rows.folder_failures(rows))
    if problems:
        unreadable = [FileState("", path, "responses", error=why) for path, why in problems]
        failures.update(rule_rows.file_failures(file_rows(unreadable)))
    return failures


def file_rows(files: list[FileState]) -> list[dict[str, Any]]:
    """The files table of a dataset's files (prompts files too: they can be unreadable or end
    without a newline)."""
    return [f.rule_row() for f in files]


def _dataset_rules(
    files: list[FileState],
    unrecognised: tuple[str, ...],
    old: DatasetState,
    prompt_key: str | None = None,
) -> DatasetState:
    signature = _signature(files, unrecognised)
    if old.signature == signature:
        return old
    responses = [f for f in files if f.role == "responses"]
    failures = rule_rows.id_failures([(f.name, f.tally.ids) for f in responses])
    failures.update(
        rule_rows.answer_failures(
            (f.name, f.tally.hashes["answers"]) for f in responses if "answers" in f.tally.hashes
        )
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
    prompts = [f for f in files if f.role == "prompts"]
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
