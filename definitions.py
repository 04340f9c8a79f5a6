"""The composition root: the one place that assembles genledger's Dagster `Definitions`."""

from __future__ import annotations

import importlib
import importlib.util

import dagster as dg

from assets.factory import build_dataset_assets
from assets.spec import Location, load_location
from assets.stats_json import build_stats_asset
from automation.schedule import build_refresh_schedule
from automation.sensors import build_file_sensor

LOG = dg.get_dagster_logger("genledger")


def _notification_sensors(location: Location) -> list[dg.SensorDefinition]:
    """Sensors of `automation.notifications`, if that module exists (written separately)."""
    if importlib.util.find_spec("automation.notifications") is None:
        return []
    try:
        module = importlib.import_module("automation.notifications")
    except ImportError as exc:
        LOG.error("genledger: notification sensors unavailable: %s", exc)
        return []
    build = getattr(module, "build_notification_sensors", None)
    return list(build(location.config)) if build is not None else []


def build_defs(location: Location) -> dg.Definitions:
    """Assets, checks, schedule and sensors of one loaded location."""
    # A dataset with only a prompts file (generation not started) has no file asset yet.
    assets = [build_dataset_assets(s, location.config) for s in location.specs if s.roles]
    return dg.Definitions(
        assets=[*assets, build_stats_asset(location)],
        schedules=[build_refresh_schedule(location)],
        sensors=[build_file_sensor(location), *_notification_sensors(location)],
        # Steps are short and I/O-bound: one process per run, not one per step.
        executor=dg.in_process_executor,
    )


defs = build_defs(load_location())
