"""Cold scans on a Ray cluster: the local pool's pieces as Ray tasks, joined the same way.

The jobs are cut as the local pool cuts them (`parallel.cut_jobs`, for the cluster's CPUs);
each piece is one task running `Piece.scan`, the function a forked worker runs, and the
partial scans are joined by the same `Cut.joined`, so the stats JSON is the local one's. A
task carries values only (the job, its checkpoint, the reading with the format declarations
and switches); an `s3://` or `sftp://` file is opened with the worker's own environment, as
`tail.remote` reads it, so no credential travels in a task. A task whose worker or node dies,
or that raises, runs again (Ray's retries, bounded by `TASK_RETRIES`); a piece that still
fails makes its file unreadable, with the reason, never dropped. Results are taken as they
finish, so the driver holds the partials of unfinished files only.

Partials merge in a tree of three levels, each the local one: a file's pieces in file order
(`split.join`, `join_groups`), a dataset's files (`collect.refresh_record`), the datasets'
totals (`ledger.stats`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import ray
from ray.exceptions import RayError, RayTaskError

from genledger.ledger.tally import FileTally
from genledger.refresh.engine import UNREACHABLE, EngineError, Progress
from genledger.refresh.filescan import FileScan
from genledger.refresh.parallel import Cut, Piece, ScanJob, Scans, cut_jobs

TASK_RETRIES = 5  # tries after the first, for a dead worker or node and for an exception:
# a task sent again to a node not yet known dead fails again, so a lost node may cost two
LOCAL = "local"  # a Ray of this process's own, stopped after the scan (benchmarks, trials)
REASON_CHARS = 300
CONNECT_S = 10.0  # a head that does not accept a connection by then is out of reach
# Ray Client's server starts a process for each driver that connects; on a busy head that can
# outlast the client's patience once, so a connection that timed out is tried again.
CONNECT_TRIES = 3
WAIT_S = 0.2  # how long the driver gathers finished pieces before taking them


@dataclass
class RayScans(Scans):
    """The scans, and how many pieces each node of the cluster finished."""

    nodes: Counter[str] = field(default_factory=Counter)


@ray.remote(max_retries=TASK_RETRIES, retry_exceptions=True)
def scan_piece(piece: Piece) -> tuple[str, FileScan]:
    """One piece's scan, on whichever node Ray chose, and that node's id."""
    return ray.get_runtime_context().get_node_id(), piece.scan()


def scan_on_ray(jobs: list[ScanJob], address: str, progress: Progress | None = None) -> RayScans:
    """Scan every job on the cluster at `address` (`auto`: the one this machine is a node of;
    `local`: a Ray started for this scan); raises `EngineError` when it cannot be reached."""
    if not jobs:
        return RayScans({}, [])
    with _connected(address):
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        cut = cut_jobs(jobs, cpus)
        parts, failed, nodes = _run(cut, progress)
    scans = cut.joined({key: done for key, done in parts.items() if key not in failed})
    for key, reason in failed.items():
        scans[key] = FileScan(FileTally(), error=reason)
    on = f"{len(nodes)} node" + ("s" if len(nodes) != 1 else "")
    notice = f"scanned on Ray: {len(cut.pieces)} pieces of {len(jobs)} files on {on}"
    return RayScans(scans, [notice], nodes)


@contextlib.contextmanager
def _connected(address: str) -> Iterator[None]:
    """Connected to the cluster for the block; a process connected already (to whichever
    cluster) scans on that connection and stays connected."""
    if ray.is_initialized():
        yield
        return
    _reachable(address)
    _init(address)
    try:
        yield
    finally:
        ray.shutdown()


def _init(address: str) -> None:
    """Connect this process to the cluster; raises `EngineError` with Ray's reason when it
    cannot (a timed-out connection is tried `CONNECT_TRIES` times)."""
    for attempt in range(1, CONNECT_TRIES + 1):
        try:
            ray.init(
                address=None if address == LOCAL else address,
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
            return
        except ConnectionError as exc:
            ray.shutdown()
            if attempt == CONNECT_TRIES:
                raise EngineError(UNREACHABLE.format(address=address, why=_line(exc))) from None
        except Exception as exc:  # Ray raises several kinds here; each is one line for people
            raise EngineError(UNREACHABLE.format(address=address, why=_line(exc))) from None


def _reachable(address: str) -> None:
    """Raise `EngineError` when nothing listens at a `HOST:PORT` (or `ray://HOST:PORT`)
    address: Ray itself would retry the connection for ever, a line every few seconds."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # `auto`, `local`: Ray finds (or starts) the cluster itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_S).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise EngineError(UNREACHABLE.format(address=address, why=why)) from None


def _run(
    cut: Cut, progress: Progress | None
) -> tuple[dict[str, dict[int, FileScan]], dict[str, str], Counter[str]]:
    """Every piece's scan by job key and index, the jobs with a piece that failed for good
    (and why), and the pieces each node finished."""
    pending = {scan_piece.remote(piece): piece for piece in cut.pieces}
    parts: dict[str, dict[int, FileScan]] = {p.job.key: {} for p in cut.pieces}
    failed: dict[str, str] = {}
    nodes: Counter[str] = Counter()
    total, waiting = len(pending), list(pending)
    while waiting:
        # Whatever finished within WAIT_S, in one call: a call per piece would cost the
        # driver time squared in the number of pieces (100k shards).
        ready, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=WAIT_S)
        for ref in ready:
            piece = pending.pop(ref)
            try:
                node, scan = ray.get(ref)
            except RayError as exc:
                failed.setdefault(piece.job.key, _unreadable(exc))
                continue
            nodes[node] += 1
            parts[piece.job.key][piece.index] = scan
        if progress is not None and ready:
            progress(total - len(pending), total)
    return parts, failed, nodes


def _unreadable(exc: RayError) -> str:
    """Why a file could not be scanned on the cluster, in one line."""
    cause = exc.cause if isinstance(exc, RayTaskError) and exc.cause is not None else exc
    return f"the Ray cluster could not scan it ({TASK_RETRIES} retries): {_line(cause)}"


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:REASON_CHARS]
