"""The composition root: the one place that assembles genledger's Dagster `Definitions`."""

from __future__ import annotations

import dagster as dg

from assets.factory import build_dataset_assets
from assets.refresh_job import build_refresh_job
from assets.spec import Location, load_location
from assets.stats_json import build_stats_asset
from automation.dead_runs import build_dead_run_sensor
from automation.notifications import build_notification_sensors
from automation.retention import build_retention_sensor
from automation.schedule import build_refresh_schedule
from automation.sensors import build_file_sensor

# `[dagster] executor` in genledger.toml. In-process (the default): steps are short and
# I/O-bound, so one process per run is cheapest. Multiprocess: each dataset's step in its own
# process, so a run of many changed datasets uses every core; forked from a server that has
# imported this module once, so a step does not pay for importing Dagster and pandas again.
EXECUTORS: dict[str, dg.ExecutorDefinition] = {
    "in_process": dg.in_process_executor,
    "multiprocess": dg.multiprocess_executor.configured({"start_method": {"forkserver": {}}}),
}


def build_defs(location: Location) -> dg.Definitions:
    """Assets, checks, schedule and sensors of one loaded location."""
    # A dataset with only a prompts file (generation not started) has no file asset yet.
    assets = [build_dataset_assets(s, location.config) for s in location.specs if s.roles]
    refresh = build_refresh_job(location)
    return dg.Definitions(
        assets=[*assets, build_stats_asset(location)],
        jobs=[refresh],
        schedules=[build_refresh_schedule(location, refresh)],
        sensors=[
            build_file_sensor(location, refresh),
            *build_notification_sensors(location.config),
            build_retention_sensor(location),
            build_dead_run_sensor(),
        ],
        executor=EXECUTORS[location.config.dagster.executor],
    )


defs = build_defs(load_location())
