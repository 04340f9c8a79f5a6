"""The Ray cluster the refresh op scans on (`[engine] ray`): a resource of the refresh job,
reporting the scan's progress in the run's log. Empty: the op scans on this machine's cores.

A plain resource over the engine's Ray client (`genledger.refresh.ray_engine`) rather than
dagster-ray's: those create and tear down clusters (KubeRay, a local one) or launch whole runs
as Ray jobs; this op only connects to a cluster that is already there, for its scan."""

from __future__ import annotations

import time
from dataclasses import replace

import dagster as dg

from genledger.config import Config, EngineSettings
from genledger.refresh.engine import Progress

LOG_EVERY_S = 5.0  # one progress line at most this often, and one at the end


class RayCluster(dg.ConfigurableResource):  # type: ignore[misc]
    """Where the refresh op's scans run: a Ray address (`auto`, `HOST:PORT`, `ray://...`);
    empty: this machine's cores."""

    address: str = ""

    def configured(self, config: Config) -> Config:
        """`config` scanning on this cluster (unchanged when no address is set)."""
        if not self.address:
            return config
        return replace(config, engine=EngineSettings(ray=self.address))

    def progress(self, log: dg.DagsterLogManager) -> Progress | None:
        """A callback logging the pieces done (None when no cluster is set)."""
        if not self.address:
            return None
        last = [0.0]

        def report(done: int, total: int) -> None:
            now = time.monotonic()
            if done == total or now - last[0] >= LOG_EVERY_S:
                last[0] = now
                log.info(f"Ray scan on {self.address}: {done}/{total} pieces done")

        return report


def ray_cluster(config: Config) -> RayCluster:
    """The resource of `[engine] ray` (or $GENLEDGER_RAY_ADDRESS)."""
    return RayCluster(address=config.engine.ray or "")
