"""The `stats_json` asset: the stats JSON v1, refreshed and written atomically."""

from collections.abc import Generator, Iterator
from collections.abc import Set as AbstractSet
from typing import Any

import dagster as dg

from assets.naming import STATS_KEY
from assets.recording import Event, plan, record, recorded_state, summary
from assets.results import RoleResult, dataset_results
from assets.signature import dataset_signature, signature_token
from assets.spec import DatasetSpec, Location
from checks.asset_checks import (
    every_dataset_present,
    every_file_recognised,
    files_check_spec,
    stats_check_spec,
)
from genledger.refresh.collect import Refresh, refresh
from genledger.tail.discovery import DataRootError, Dataset, discover


def stats_metadata(stats: dict[str, Any], path: str) -> dict[str, Any]:
    """Totals and per-dataset status counts as numbers, plus where the JSON was written."""
    totals = stats["totals"]
    by_status = totals["quality"].get("datasets_by_status", {})
    metadata: dict[str, Any] = {
        "path": dg.MetadataValue.path(path),
        "data_root": stats["data_root"],
        "status": totals["quality"]["status"],
        "datasets": dg.MetadataValue.int(len(stats["datasets"])),
    }
    for status in ("ok", "warn", "error"):
        metadata[f"datasets_{status}"] = dg.MetadataValue.int(int(by_status.get(status, 0)))
    for name in ("n_done", "n_counted", "total_comp", "total_prompt", "n_tokenized"):
        metadata[name] = dg.MetadataValue.int(int(totals[name]))
    metadata["total_tokens"] = dg.MetadataValue.int(int(totals["total_tokens"]))
    for name in ("n_prompts", "progress", "avg_comp", "avg_tokens"):
        if totals.get(name) is not None:
            value = totals[name]
            metadata[name] = (
                dg.MetadataValue.int(value)
                if isinstance(value, int)
                else dg.MetadataValue.float(float(value))
            )
    metadata["unrecognised_files"] = dg.MetadataValue.int(
        int(stats.get("unrecognised", {}).get("count", 0))
        + sum(int(d.get("unrecognised", {}).get("count", 0)) for d in stats["datasets"].values())
    )
    metadata["failures"] = dg.MetadataValue.json(
        {f["check"]: f["count"] for f in totals["quality"]["failures"]}
    )
    return metadata


def build_stats_asset(location: Location) -> dg.AssetsDefinition:
    """`stats_json`, downstream of every file asset; fails clearly if the location cannot load."""
    deps = [key for spec in location.specs for key in spec.asset_keys]
    expected = [spec.name for spec in location.specs]
    config = location.config

    @dg.asset(
        key=STATS_KEY,
        deps=deps,
        group_name="genledger",
        kinds={"json"},
        owners=list(config.dagster.owners),
        check_specs=[stats_check_spec(), files_check_spec()],
        description=(
            "The stats JSON v1 of the whole run (same numbers as `genledger collect`), "
            "written atomically to GENLEDGER_STATS_PATH."
        ),
    )
    def stats_json(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult | Event]:
        if location.problem is not None:
            context.log.error(location.problem)
            raise dg.Failure(description=location.problem, allow_retries=False)
        specs = recordable(location, context.run.asset_selection)
        # Taken before reading: a file that grows during the refresh differs from it next time,
        # so its dataset is recorded again rather than its growth missed.
        found = current_datasets(location)
        signatures = {
            s.key: signature_token(dataset_signature(found.get(s.name, s.dataset))) for s in specs
        }
        result = refresh(config)
        path = str(result.stats_path)
        context.log.info(f"wrote {path}: status {result.stats['totals']['quality']['status']}")
        recorded = yield from record_datasets(
            context.instance, location, specs, found, signatures, result
        )
        metadata = stats_metadata(result.stats, path)
        yield dg.MaterializeResult(metadata={**metadata, **recorded})
        yield every_dataset_present(result.stats, expected)
        yield every_file_recognised(result.stats)

    return stats_json


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
            result.records[s.name],
            signatures[s.key],
        )
        for s in specs
        if s.name in blocks and s.name in result.records
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
