"""One refresh: discover, read what is new, validate, write the stats JSON, commit state."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from genledger.config import Config, is_url
from genledger.ledger import jsonio
from genledger.ledger.cost import (
    Costing,
    DatasetCost,
    Fleet,
    ModelCost,
    cost_fields,
    costing_key,
    dataset_cost,
    fleet_of,
    share_fleet,
    total_fields,
)
from genledger.ledger.rates import total_rate, update_rates
from genledger.ledger.records import DatasetRecord, DatasetState, FileState, counting_signature
from genledger.ledger.stats import dataset_block, dataset_sections, document, totals
from genledger.refresh.dataset import (
    Counted,
    as_listed,
    dataset_rules,
    file_rows,
    job_of,
    record_quantiles,
    refresh_record,
    total_quantiles,
)
from genledger.refresh.gone import gone_files, kind_of_files
from genledger.refresh.metrics import metrics_files
from genledger.refresh.moved import follow_moves
from genledger.refresh.quiet import Quiet, listing_key, quiet_block, reuse
from genledger.refresh.reading import Reading
from genledger.refresh.state import StateStore
from genledger.rules import rows as rule_rows
from genledger.rules.result import RuleTally
from genledger.tail.discovery import Dataset, open_root, survey
from genledger.tail.roots import root_id

if TYPE_CHECKING:
    from genledger.refresh.engine import Progress
    from genledger.refresh.filescan import FileScan
    from genledger.refresh.parallel import ScanJob


class UsageError(ValueError):
    """Bad invocation: a required path is not set. The message says which."""


@dataclass
class Refresh:
    """A finished refresh: the stats written and the records committed."""

    stats: dict[str, Any]
    records: Mapping[str, DatasetRecord]
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
        ("metrics path", config.metrics_path),
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
    config: Config,
    full: bool = False,
    now: float | None = None,
    forget_missing: bool = False,
    progress: Progress | None = None,
) -> Refresh:
    """Bring the stats JSON up to date with the data root (incrementally unless `full`).
    `forget_missing`: files and datasets counted before and gone now are dropped from the
    state instead of being reported (again) as gone. `progress`: told the pieces done of a
    scan on a Ray cluster (`[engine] ray`)."""
    store = _store(config)
    if config.stats_path is None:
        raise UsageError("no stats path: pass -o STATS.json or set GENLEDGER_STATS_PATH")
    assert config.data_root is not None
    found = survey(config.data_root, config)
    datasets = found.datasets
    readings = {ds.name: Reading.of(config, ds.name) for ds in datasets}
    now = time.time() if now is None else now
    # a folder that is a dataset's folder under another name is no dataset gone
    aliases = {alias for ds in datasets for alias in ds.aliases if "/" not in alias}
    missing = store.other_datasets({ds.name for ds in datasets} | aliases)
    with ExitStack() as stack:
        for name in sorted({ds.name for ds in datasets} | set(missing)):
            stack.enter_context(store.locked(name))
        key = costing_key(config)
        keys = {ds.name: listing_key(ds, readings[ds.name], config.health, key) for ds in datasets}
        # Datasets none of whose files moved since a refresh that found them quiet: reused
        quiet = {} if full else _quiet(store, datasets, keys, readings, now)
        datasets = [ds for ds in datasets if ds.name not in quiet]
        previous = {ds.name: _previous(store, ds, full) for ds in datasets}
        # files renamed or copied away under a name no pattern matches keep their counts
        datasets = [_follow(ds, previous) for ds in datasets]
        # The parallel lever (refresh.parallel): big reads run in forked workers first.
        # Files the walk listed as their checkpoints saw them: nothing to open or read.
        ready = {
            f.key: scan
            for ds in datasets
            for f in ds.files
            if f.error is None
            and (scan := as_listed(f, previous[ds.name].files.get(f.name))) is not None
        }
        jobs = [
            job_of(f, previous[ds.name].files.get(f.name), readings[ds.name], now)
            for ds in datasets
            for f in ds.files
            if f.error is None and f.key not in ready
        ]
        done, scan_notices = _scans(jobs, config, progress)
        counted = {
            ds.name: refresh_record(
                ds,
                previous[ds.name],
                now,
                {**ready, **done},
                readings[ds.name],
                config.health,
                forget_missing,
            )
            for ds in datasets
        }
        for name, (record, reused) in quiet.items():
            rate = update_rates(reused.sections, record, now)
            counted[name] = Counted(record, reused.sections, rate)
        counted = dict(sorted(counted.items()))
        known = {name: reused.cost for name, (_, reused) in quiet.items()}
        costs, fleet, made = _priced(config, store, counted, now, known=known)
        for ds in datasets:  # counted now: kept for a later refresh that finds them quiet
            one = counted[ds.name]
            one.record.quiet = quiet_block(
                ds, one.record, one.sections, made[ds.name], keys[ds.name], readings[ds.name], now
            )
        blocks = {name: one.block(costs[name]) for name, one in counted.items()}
        if not forget_missing:
            blocks.update(_gone_datasets(config, store, missing, fleet))
        blocks = dict(sorted(blocks.items()))
        outside = root_failures(found.unrecognised, found.problems, len(blocks))
        run = totals(
            blocks,
            outside,
            total_fields(list(blocks.values()), fleet),
            total_rate(blocks),
            total_quantiles(
                quiet[name][1].quantiles if name in quiet else record_quantiles(one.record)
                for name, one in counted.items()
            ),
        )
        stats = document(store.data_root, blocks, run, now, found.unrecognised, found.problems)
        # Checkpoints move only once the stats that include them are durable: written first,
        # in the records' round of syncs
        store.save_all((one.record for one in counted.values()), first=_outputs(config, stats))
        if forget_missing:
            store.forget(missing)
    notices = [*_notices(previous), *scan_notices]
    notices += _unknown_datasets(config, blocks)
    records = KeptRecords(store, {name: one.record for name, one in counted.items()})
    return Refresh(stats, records, config.stats_path, notices)


def _scans(
    jobs: list[ScanJob], config: Config, progress: Progress | None
) -> tuple[dict[str, FileScan], list[str]]:
    """The files' reads done ahead, on this machine or a Ray cluster (`[engine] ray`), and
    their notices. Imported here: a refresh whose datasets are all quiet reads nothing and
    skips the scanning half (~15 ms of start-up)."""
    if not jobs:
        return {}, []
    from genledger.refresh.engine import scan_on_cluster
    from genledger.refresh.parallel import scan_all

    if config.engine.ray is None:
        scans = scan_all(jobs, config.switches.workers)
    else:
        scans = scan_on_cluster(jobs, config.engine.ray, progress)
    return scans.done, scans.notices


def _outputs(config: Config, stats: dict[str, Any]) -> list[tuple[Path, bytes]]:
    """The stats JSON and, when configured, its metrics and their memo in the state dir
    (written together, each atomically)."""
    assert config.stats_path is not None
    files = [(config.stats_path, jsonio.dumps(stats, indent=True))]
    if config.metrics_path is not None:
        max_models, state_dir = config.metrics.max_models, config.resolved_state_dir()
        files += metrics_files(stats, max_models, config.metrics_path, state_dir)
    return files


def _gone_datasets(
    config: Config, store: StateStore, missing: list[str], fleet: Fleet | None
) -> dict[str, dict[str, Any]]:
    """The blocks of the datasets the state dir knows and the root no longer holds."""
    blocks = {}
    for name in missing:
        sections = _gone_dataset(config, store.load(name, history_only=True))
        if sections is not None:
            cost = cost_fields(None, 0, sections["n_prompts"], fleet)
            blocks[name] = dataset_block(sections, cost, None)
    return blocks


def _gone_dataset(config: Config, record: DatasetRecord) -> dict[str, Any] | None:
    """The sections of a dataset the state dir knows and the root no longer holds: each of its
    files gone, with the OS's reason (a share unmounted: "No such file or directory"); None
    when none of its files was ever read (nothing counted is missed)."""
    assert config.data_root is not None
    folder = open_root(config.data_root).source(record.name)
    files = gone_files(record, folder, set())
    if not files:
        return None
    rules = dataset_rules(files, (), DatasetState())
    n_prompts = config.n_prompts.get(record.name)
    return dataset_sections(kind_of_files(files), n_prompts, files, rules, ())


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
    counted: Mapping[str, Counted],
    now: float,
    others: bool = False,
    known: Mapping[str, DatasetCost] | None = None,
) -> tuple[dict[str, dict[str, Any]], Fleet | None, dict[str, dict[str, Any]]]:
    """The cost fields of every refreshed dataset, the fleet shared over these datasets
    (with `others`: over every dataset's kept fleet summary), and the costs priced here (not
    `known`: kept by quiet datasets) as `DatasetCost.to_dict`, before the fleet's share."""
    costing = Costing.of(config, store.read_extra(PRICES_FILE))
    costs, made = {}, {}
    for name, one in counted.items():
        record = one.record
        if known is not None and name in known:
            cost = costs[name] = known[name]
        else:
            responses = [f for f in record.files.values() if f.role == "responses"]
            cost = costs[name] = dataset_cost(name, responses, costing, now)
            made[name] = cost.to_dict()
        if cost.fleet_first is not None:
            record.fleet_first = min(cost.fleet_first, record.fleet_first or cost.fleet_first)
            cost.fleet_first = record.fleet_first
    kept = _fleet_summaries(store, set(counted)) if others else []
    fleet = fleet_of(config.fleet, [*costs.values(), *kept])
    share_fleet(fleet, costs.values())
    fields = {
        name: cost_fields(costs[name], one.sections["n_done"], one.sections["n_prompts"], fleet)
        for name, one in counted.items()
    }
    remembered = costing.table.dump(store.read_extra(PRICES_FILE))
    if remembered is not None:
        store.write_extra(PRICES_FILE, remembered)
    for name, cost in costs.items():
        _keep_fleet_summary(store, name, cost)
    if not others:  # every dataset of the root was refreshed: the others are gone
        store.drop_fleet_summaries(counted)
    return fields, fleet, made


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
        dataset, old = follow_moves(dataset, old)
        reading = Reading.of(config, dataset.name)
        one = refresh_record(dataset, old, now, None, reading, config.health)
        costs, _, _ = _priced(config, store, {dataset.name: one}, now, others=True)
        store.save(one.record)
    return one.record, one.block(costs[dataset.name])


def _quiet(
    store: StateStore,
    datasets: list[Dataset],
    keys: Mapping[str, str | None],
    readings: Mapping[str, Reading],
    now: float,
) -> dict[str, tuple[DatasetRecord, Quiet]]:
    """The datasets none of whose files moved since a refresh that found them quiet
    (`refresh.quiet`): each one's record, its files left as stored, and what it reuses."""
    found = {}
    for ds in datasets:
        key = keys[ds.name]
        if key is None:
            continue
        record = store.load_quiet(ds.name, key)
        settle = readings[ds.name].settle_seconds
        reused = None if record is None else reuse(record, ds, key, now, settle)
        if record is not None and reused is not None:
            found[ds.name] = (record, reused)
    return found


class KeptRecords(Mapping[str, DatasetRecord]):
    """A refresh's records by dataset; a quiet dataset's (its files left as stored bytes) is
    read whole from the state dir only when asked for."""

    def __init__(self, store: StateStore, records: dict[str, DatasetRecord]) -> None:
        self.store, self.records = store, records

    def __getitem__(self, name: str) -> DatasetRecord:
        record = self.records[name]
        if record.kept_crc is not None:  # a quiet record: its files were not decoded
            record = self.records[name] = self.store.load(name)
        return record

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


def _follow(ds: Dataset, previous: dict[str, DatasetRecord]) -> Dataset:
    """`ds` with its counted files found under new names (`refresh.moved`); `previous`
    then holds their states under those names."""
    ds, previous[ds.name] = follow_moves(ds, previous[ds.name])
    return ds


def _previous(store: StateStore, ds: Dataset, full: bool) -> DatasetRecord:
    # --full forgets checkpoints and counts, not the rate history of the run.
    return store.load(ds.name, history_only=full)


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
