"""One refresh of the whole data root, as every refresh run does it, and what it records.

Discover the datasets and sign their files (before reading: a file that grows during the
refresh differs from its signature next time, so its dataset is recorded again rather than its
growth missed), refresh them all with the engine (only new bytes are read; the stats JSON is
written), then record in Dagster the news and the due datasets (`assets/recording.py`).
"""

from __future__ import annotations

from collections.abc import Generator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import dagster as dg

from assets.metadata import stats_metadata
from assets.recording import Event, plan, record, recorded_state, summary
from assets.results import RoleResult, dataset_results
from assets.signature import dataset_signature, signature_token
from assets.spec import DatasetSpec, Location
from genledger.config import Config
from genledger.ledger.records import DatasetRecord, FileState
from genledger.refresh.collect import Refresh, refresh
from genledger.refresh.engine import Progress
from genledger.tail.discovery import DataRootError, Dataset, discover


@dataclass(frozen=True)
class Refreshed:
    """A finished refresh: the stats JSON written and the `stats_json` metadata."""

    stats: dict[str, Any]
    metadata: dict[str, Any]
    line: str  # one line for the run's log


def recordable(location: Location, selection: AbstractSet[dg.AssetKey] | None) -> list[DatasetSpec]:
    """The datasets no step of this run materializes (`None`: the run selected everything)."""
    if selection is None:
        return []
    return [s for s in location.specs if not any(key in selection for key in s.asset_keys)]


def current_datasets(location: Location) -> dict[str, Dataset]:
    """The datasets as they are now, by name (those known at load time if the root fails)."""
    assert location.config.data_root is not None
    try:
        return {ds.name: ds for ds in discover(location.config.data_root, location.config)}
    except DataRootError:
        return {s.name: s.dataset for s in location.specs}


def refresh_and_record(
    instance: dg.DagsterInstance,
    location: Location,
    specs: list[DatasetSpec],
    config: Config | None = None,
    progress: Progress | None = None,
) -> Generator[Event, None, Refreshed]:
    """Refresh the whole root (with `config`, default the location's: it may scan on a Ray
    cluster, telling `progress`), then yield the records of `specs`' news and due datasets."""
    found = current_datasets(location)
    signatures = {
        s.key: signature_token(dataset_signature(found.get(s.name, s.dataset))) for s in specs
    }
    result = refresh(config or location.config, progress=progress)
    done = yield from record_datasets(instance, location, specs, found, signatures, result)
    path = str(result.stats_path)
    status = result.stats["totals"]["quality"]["status"]
    return Refreshed(
        result.stats,
        {**stats_metadata(result.stats, path), **done},
        f"wrote {path}: status {status}",
    )


def gone_record(name: str, block: dict[str, Any]) -> DatasetRecord:
    """The record of a dataset counted before and gone from the root (no refresh committed
    one): its files as its stats block reports them, each with its error."""
    files = {
        path: FileState(name, path, str(entry.get("role")), error=entry.get("error"))
        for path, entry in (block.get("files") or {}).items()
        if isinstance(entry, dict)
    }
    return DatasetRecord(name, "", files=files)


def record_datasets(
    instance: dg.DagsterInstance,
    location: Location,
    specs: list[DatasetSpec],
    found: dict[str, Dataset],
    signatures: dict[str, str],
    result: Refresh,
) -> Generator[Event, None, dict[str, Any]]:
    """Record the news and the due datasets (`assets/recording.py`); return what was done."""
    blocks = result.stats["datasets"]
    results: dict[str, list[RoleResult]] = {
        s.key: dataset_results(
            s,
            found.get(s.name, s.dataset),
            blocks[s.name],
            result.records.get(s.name) or gone_record(s.name, blocks[s.name]),
            signatures[s.key],
            location.config,
        )
        for s in specs
        if s.name in blocks
    }
    settings = location.config
    chosen = plan(
        results,
        signatures,
        recorded_state(instance, [s for s in specs if s.key in results]),
        settings.notify.worse_factor,
    )
    done = yield from record(chosen, results, settings.dagster.record_seconds)
    return summary(chosen, done)
