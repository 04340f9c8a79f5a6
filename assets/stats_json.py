"""The `stats_json` asset: the stats JSON v1, refreshed and written atomically.

Materialized by hand it refreshes like a refresh run (`assets/refresh.py`) and records the
datasets whose own steps are not in the same run; the automated runs use the refresh job
(`assets/refresh_job.py`), which reports this asset's materialization and checks itself.
"""

from collections.abc import Iterator

import dagster as dg

from assets.naming import STATS_KEY
from assets.recording import Event
from assets.refresh import recordable, refresh_and_record
from assets.spec import Location
from checks.asset_checks import (
    every_dataset_present,
    every_file_recognised,
    files_check_spec,
    stats_check_spec,
)


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
            "written atomically to GENLEDGER_STATS_PATH (and its metrics beside it). Kept "
            "fresh by the file sensor dataset_files_changed and the schedule "
            "refresh_everything, both through the genledger_refresh job."
        ),
    )
    def stats_json(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult | Event]:
        if location.problem is not None:
            context.log.error(location.problem)
            raise dg.Failure(description=location.problem, allow_retries=False)
        specs = recordable(location, context.run.asset_selection)
        done = yield from refresh_and_record(context.instance, location, specs)
        context.log.info(done.line)
        yield dg.MaterializeResult(metadata=done.metadata)
        yield every_dataset_present(done.stats, expected)
        yield every_file_recognised(done.stats)

    return stats_json
