"""The refresh job: what the file sensor and the schedule run, one op for the whole data root.

The op refreshes every dataset (`assets/refresh.py`), writes the stats JSON and reports what
`stats_json`'s own step would — its materialization and its two checks — plus the news and the
due datasets' file assets and checks, all as events of the op. An op rather than a run of the
`stats_json` asset: an asset step first reads the data version of each of its upstream assets
(one query per file asset never materialized yet: 5.6 s of a run at 300 datasets) and a run of
a subset of the asset job plans and snapshots that subset (4 s at 300); this job is the same
few steps whatever the number of datasets. `stats_json` stays an asset for lineage and for
runs launched by hand. The job declares `stats_json` as the asset it keeps (an asset layer
with no asset step in it), so Dagster lists the file sensor and the schedule, whose job
this is, among the automations on the asset's page.
"""

from collections.abc import Iterator

import dagster as dg
from dagster._core.definitions.assets.job.asset_layer import (
    AssetLayer,  # the type JobDefinition takes for a job's assets (not exported)
)

from assets.naming import STATS_KEY
from assets.ray_cluster import RayCluster, ray_cluster
from assets.recording import Event, as_evaluation
from assets.refresh import refresh_and_record
from assets.spec import Location
from checks.asset_checks import every_dataset_present, every_file_recognised

REFRESH_JOB = "genledger_refresh"


def build_refresh_job(location: Location) -> dg.JobDefinition:
    """The job of one op refreshing the root and recording `stats_json` and the changes."""
    expected = [spec.name for spec in location.specs]

    @dg.op(name="refresh_data_root", out={})
    def refresh_data_root(context: dg.OpExecutionContext, ray: RayCluster) -> Iterator[Event]:
        if location.problem is not None:
            context.log.error(location.problem)
            raise dg.Failure(description=location.problem, allow_retries=False)
        config, progress = ray.configured(location.config), ray.progress(context.log)
        specs = list(location.specs)
        done = yield from refresh_and_record(context.instance, location, specs, config, progress)
        context.log.info(done.line)
        yield dg.AssetMaterialization(asset_key=STATS_KEY, metadata=done.metadata)
        for check in (
            every_dataset_present(done.stats, expected),
            every_file_recognised(done.stats),
        ):
            yield as_evaluation(check)

    @dg.graph(name=REFRESH_JOB)
    def genledger_refresh() -> None:
        refresh_data_root()

    return genledger_refresh.to_job(
        executor_def=dg.in_process_executor,  # one op: a step process would only add cost
        resource_defs={"ray": ray_cluster(location.config)},  # `[engine] ray`: scans on Ray
        # no asset step: Dagster maps the sensor and the schedule of this job to stats_json
        asset_layer=AssetLayer.for_external_job([STATS_KEY]),
        description=(
            "Refresh the whole data root once, write the stats JSON, record stats_json and the "
            "datasets that changed (news at once, the rest in turn)."
        ),
    )
