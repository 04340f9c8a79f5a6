"""The schedule: refresh every dataset and the stats JSON on a cron (default every 5 minutes)."""

from __future__ import annotations

import dagster as dg

from assets.naming import SCOPE_TAG
from assets.spec import Location

SCHEDULE_NAME = "refresh_everything"


def build_refresh_schedule(location: Location) -> dg.ScheduleDefinition:
    """Runs all assets (checks included) on `dagster.schedule_cron`; skips if loading failed."""

    @dg.schedule(
        name=SCHEDULE_NAME,
        cron_schedule=location.config.dagster.schedule_cron,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultScheduleStatus.RUNNING,
        tags={SCOPE_TAG: "all"},
        description="Refresh every dataset's file assets and the stats JSON.",
    )
    def refresh_everything(
        context: dg.ScheduleEvaluationContext,
    ) -> dg.RunRequest | dg.SkipReason:
        if location.problem is not None:
            return dg.SkipReason(location.problem)
        return dg.RunRequest(tags={SCOPE_TAG: "all"})

    return refresh_everything
