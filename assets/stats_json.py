"""The `stats_json` asset: the stats JSON v1, refreshed and written atomically."""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from assets.metadata import cost_metadata
from assets.naming import STATS_KEY
from assets.spec import Location
from checks.asset_checks import (
    every_dataset_present,
    every_file_recognised,
    files_check_spec,
    stats_check_spec,
)
from genledger.refresh.collect import refresh


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
    metadata.update(cost_metadata(totals))
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
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        if location.problem is not None:
            context.log.error(location.problem)
            raise dg.Failure(description=location.problem, allow_retries=False)
        result = refresh(config)
        path = str(result.stats_path)
        context.log.info(f"wrote {path}: status {result.stats['totals']['quality']['status']}")
        yield dg.MaterializeResult(metadata=stats_metadata(result.stats, path))
        yield every_dataset_present(result.stats, expected)
        yield every_file_recognised(result.stats)

    return stats_json
