"""Where a refresh's scans run: this machine's cores (`refresh.parallel`, the default) or a
Ray cluster (`[engine] ray`, `collect --ray`: `refresh.ray_engine`). Ray is an optional extra
and is imported only here, only when a cluster is asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the scanning half: a refresh that reads nothing never imports it
    from genledger.refresh.parallel import ScanJob, Scans

Progress = Callable[[int, int], None]  # (pieces done, pieces in all), as they finish
RAY_MISSING = (
    "a Ray cluster ({address}) was asked for and Ray is not installed: pip install 'genledger[ray]'"
)
UNREACHABLE = "cannot reach the Ray cluster at {address}: {why}"


class EngineError(ValueError):
    """The configured engine cannot be used (Ray missing, a cluster out of reach): one line."""


def scan_on_cluster(jobs: list[ScanJob], address: str, progress: Progress | None = None) -> Scans:
    """Scan `jobs` on the Ray cluster at `address` (every job: none is left to scan here but
    one whose file changed while its pieces were read)."""
    try:
        from genledger.refresh import ray_engine
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "ray":
            raise
        raise EngineError(RAY_MISSING.format(address=address)) from None
    return ray_engine.scan_on_ray(jobs, address, progress)
