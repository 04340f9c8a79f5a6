"""Scan many files at once in forked workers (the parallel lever).

Each worker scans the piece it is given (`refresh.split`: big reads are cut at line starts,
so the cores stay evenly busy) or a whole small file, and sends back only the compact
FileScan, so the parent stays small; joined, the pieces give the result the same call gives
in-process; a big local Parquet file goes in pieces of whole row groups. Forking happens
before pandas is imported, and only when it pays: enough new bytes, 2+ usable cores, a
single-threaded process (forking a threaded one, such as a Dagster server, is not safe) — a
remote root's idle transport threads aside.

Remote files are forked too, whole (no pieces: cutting them would fetch bytes twice): each
worker opens its own connection, so transfer and parsing run on both cores instead of taking
turns on one interpreter lock (benchmarks/remote.py, docs/performance.md).

A worker that dies (the OOM killer's SIGKILL) breaks the pool: the pieces it left undone are
scanned in this process instead, with a notice — the parent never waits for ever.

How jobs are cut into pieces and joined back (`cut_jobs`, `Cut.joined`) is shared with the
Ray engine (`refresh.ray_engine`), which runs the same pieces as tasks on a cluster.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from genledger.fast import vector
from genledger.ledger import quantiles
from genledger.ledger.chain import chained
from genledger.ledger.quantiles import PENDING_MAX
from genledger.refresh.filescan import FileScan
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.refresh.scan import scan_file
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import form_of
from genledger.tail.reader import Span
from genledger.tail.roots import RemoteFile, Source, stat_source

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future, ProcessPoolExecutor

    from genledger.refresh.split import Plan

# Sealed files' scans, cutting reads into pieces, Parquet row groups and the remote
# transport are imported where they are used: a small refresh of plain local files reads in
# place and never needs them (with those of `genledger/refresh/scan.py`, ~3.5 ms of its start-up)

MIN_PARALLEL_BYTES = 32 << 20  # below this, fork + pickling cost more than they save
# Stored bytes of a Parquet piece at most: one file (HF `datasets` writes one) keeps 2 cores
# busy, and pieces stay big enough that opening the file again for each costs nothing.
PARQUET_PIECE_BYTES = 32 << 20
SEALED_WEIGHT = 4  # a compressed or Parquet byte is worth about this many plain ones
WORKER_DIED = "a scan worker died (killed by a signal: out of memory?); scanned in process"


@dataclass(frozen=True)
class ScanJob:
    """One file to read from its checkpoint; `key` names it in the result."""

    key: str
    path: Source
    name: str
    role: str
    checkpoint: Checkpoint | None
    reading: Reading = DEFAULT_READING
    now: float | None = None  # for sealed files: has an early end of stream settled?

    @property
    def sealed(self) -> bool:
        """Read whole (gzip, zstd, Parquet), never in pieces."""
        return form_of(self.name) != "jsonl"

    def new_bytes(self) -> int:
        """About how many bytes this read will parse (0 when the file is gone); a remote
        file's size and mtime as listed (no round trip)."""
        listed = self.path.listed if isinstance(self.path, RemoteFile) else None
        found = stat_source(self.path) if listed is None else listed
        if found is None:
            return 0
        size, mtime_ns = found
        cp = self.checkpoint
        if self.sealed:  # all or nothing; decoding costs several times the stored bytes
            unchanged = cp is not None and (cp.file.size, cp.file.mtime_ns) == (size, mtime_ns)
            return 0 if unchanged else size * SEALED_WEIGHT
        done = cp.offset if cp is not None else 0
        return size - done if size >= done else size


def scan_job(job: ScanJob, span: Span | None = None, groups: range | None = None) -> FileScan:
    """Scan one job: the whole read, a `span` of it, or some row `groups` of a Parquet file
    (rows numbered as in the whole file, the checkpoint the whole file's)."""
    if groups is not None:
        from genledger.refresh.sealed import scan_sealed

        now = job.now if job.now is not None else 0.0
        return scan_sealed(job.path, job.name, job.role, job.checkpoint, now, job.reading, groups)
    return scan_file(job.path, job.name, job.role, job.checkpoint, span, job.reading, job.now)


def workers_wanted(configured: int | None = None) -> int:
    """Worker processes to use: as configured (`Switches.workers`), else the usable cores
    that no other process keeps busy right now (at least 1). A worker on a core another
    process holds scans no sooner than this process would, and costs its fork, its pickles
    and a second interpreter's caches (docs/performance.md, tenth round)."""
    if configured is not None:
        return configured
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return max(1, cores - busy_cores())


def busy_cores(loadavg: str = "/proc/loadavg") -> int:
    """How many tasks besides this one are runnable at this moment (the kernel's count in
    `loadavg`'s fourth field, which counts this process too); 0 where it cannot tell."""
    try:
        with open(loadavg, "rb") as stats:
            running = int(stats.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(running - 1, 0)


def _worth_forking(jobs: list[ScanJob], workers: int, new: int) -> bool:
    """Whether `jobs` (`new` bytes to read in all) are worth forked workers."""
    if workers < 2 or not jobs or not _only_idle_threads():
        return False
    if new < MIN_PARALLEL_BYTES:
        return False
    import multiprocessing  # here: a refresh reading little never loads it (~12-30 ms)

    return "fork" in multiprocessing.get_all_start_methods()


def _only_idle_threads() -> bool:
    """No thread but this one, or else only a remote root's transport threads, which sit idle
    while this (the only caller of the transport) forks; a worker opens its own connection."""
    main = threading.current_thread()
    others = [t for t in threading.enumerate() if t is not main]
    if not others:
        return True
    from genledger.tail.remote import transport_thread

    return all(transport_thread(t) for t in others)


@dataclass(frozen=True)
class Piece:
    """One task of a scan: a job's whole read, a span of it, or some of its row groups."""

    job: ScanJob
    index: int
    span: Span | None  # None: the whole read, from the job's checkpoint
    groups: range | None = None  # a Parquet piece: these row groups
    stored: int = 0  # a Parquet piece's stored bytes

    def size(self) -> int:
        """About how many bytes this piece parses (pieces are handed out biggest first)."""
        if self.groups is not None:
            return self.stored * SEALED_WEIGHT
        if self.span is None:
            return self.job.new_bytes()
        from genledger.refresh.split import PIECE_BYTES

        stop = self.span.stop if self.span.stop is not None else self.span.start + PIECE_BYTES
        return stop - self.span.start

    def scan(self) -> FileScan:
        """Scan this piece (in whatever process runs it: everything it needs is in it)."""
        return scan_job(self.job, self.span, self.groups)


def _scan(piece: Piece) -> tuple[str, int, FileScan]:
    return piece.job.key, piece.index, piece.scan()


@dataclass
class Scans:
    """What the parallel lever scanned, by job key; `notices`: what went wrong on the way."""

    done: dict[str, FileScan]
    notices: list[str]


def scan_all(jobs: list[ScanJob], workers: int | None = None) -> Scans:
    """Scan `jobs` across processes when it pays; none done means: scan them in place. A job
    missing from the result (its file changed while it was read in pieces) is to be scanned
    in place too."""
    workers = workers_wanted(workers)
    new = sum(job.new_bytes() for job in jobs)
    if new >= vector.BULK_BYTES:
        # a big refresh of files each under the bulk size, read here (one core, or too little
        # to fork for): simdjson checks its UTF-8, not Python's decoder (2.5x slower)
        vector.load()
    if not _worth_forking(jobs, workers, new):
        return Scans({}, [])
    cut = cut_jobs(jobs, workers)
    joins = Joins(cut)
    notices = _run(cut.pieces, workers, jobs, joins.take)
    return Scans(joins.done(), notices)


@dataclass
class Cut:
    """A refresh's jobs cut into pieces (biggest first) for `workers` cores, and how each
    job's pieces join back (`joined`): what any engine running the pieces shares."""

    pieces: list[Piece]
    plans: dict[str, Plan | None]
    groups: dict[str, list[tuple[range, int]] | None]

    def joined(self, parts: dict[str, dict[int, FileScan]]) -> dict[str, FileScan]:
        """Each job's scan from its pieces' (by index); a job whose join failed is left out.
        `parts` is emptied as the jobs are joined, so each piece is freed once joined."""
        joins = Joins(self)
        while parts:
            key, done = parts.popitem()
            for index in sorted(done):
                joins.take(key, index, done.pop(index))
        return joins.done()


class Joins:
    """The jobs of a `Cut` joined as their pieces come in (`take`): a split read's pieces
    are chained as soon as those before them are in (`split.Joining`), so the parent never
    holds every piece's lists and their join at once; `done` gives each job's scan."""

    def __init__(self, cut: Cut) -> None:
        from genledger.refresh.split import Joining

        self.cut = cut
        self.split = {
            key: Joining(plan_)
            for key, plan_ in cut.plans.items()
            if plan_ is not None and cut.groups[key] is None
        }
        self.other: dict[str, dict[int, FileScan]] = {}  # whole reads and Parquet row groups

    def take(self, key: str, index: int, scan: FileScan) -> None:
        """The scan of piece `index` of job `key`."""
        joining = self.split.get(key)
        if joining is not None:
            joining.take(index, scan)
        else:
            self.other.setdefault(key, {})[index] = scan

    def done(self) -> dict[str, FileScan]:
        """Each job's scan; a job whose join failed (or that sent no piece) is left out."""
        scans = {key: found for key, j in self.split.items() if (found := j.result()) is not None}
        while self.other:
            key, done = self.other.popitem()
            ordered = [done.pop(index) for index in sorted(done)]
            joined = join_groups(ordered) if self.cut.groups[key] is not None else ordered[0]
            if joined is not None:
                scans[key] = joined
        return scans


def cut_jobs(jobs: list[ScanJob], workers: int) -> Cut:
    """The pieces of `jobs` as the local pool hands them to `workers` cores."""
    from genledger.refresh.split import plan

    plans = {job.key: None if _whole(job) else plan(job.path, job.checkpoint) for job in jobs}
    total = sum(job.new_bytes() for job in jobs) // SEALED_WEIGHT
    cut = max(1, min(PARQUET_PIECE_BYTES, total // (4 * workers)))
    groups = {job.key: _group_pieces(job, cut) for job in jobs}
    pieces = []
    for job in jobs:
        split_groups = groups[job.key]
        if split_groups is not None:
            pieces += [
                Piece(job, index, None, part, stored)
                for index, (part, stored) in enumerate(split_groups)
            ]
            continue
        pieces += [Piece(job, index, span) for index, span in enumerate(_spans(plans[job.key]))]
    # Biggest first, so the last piece to finish is a small one.
    pieces.sort(key=lambda piece: piece.size(), reverse=True)
    # zstd decompresses in a thread only where a core would otherwise idle (tail.sealed)
    if len(pieces) >= workers:
        pieces = [replace(p, job=replace(p.job, reading=_no_ahead(p.job.reading))) for p in pieces]
    return Cut(pieces, plans, groups)


def _no_ahead(reading: Reading) -> Reading:
    return replace(reading, zstd_ahead=False)


def _run(
    pieces: list[Piece],
    workers: int,
    jobs: list[ScanJob],
    take: Callable[[str, int, FileScan], None],
) -> list[str]:
    """Every piece's scan, in forked workers, handed to `take` as it comes in (in the order
    the pieces were sent: a scan taken is not held here); pieces a dead worker left undone
    are scanned here. Returns what went wrong on the way."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Loaded once here, simdjson (and for Parquet numpy and pyarrow) are shared by every
    # worker (copy-on-write) instead of imported by each of them.
    parquet = any(form_of(job.name) == "parquet" for job in jobs)
    vector.load(numpy=parquet)
    if parquet:
        import pyarrow.compute
        import pyarrow.parquet  # noqa: F401  (with compute: 50 ms a worker otherwise)
    _shared_ahead(pieces)
    notices: list[str] = []
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(min(workers, len(pieces)), mp_context=context)
    try:
        futures: list[tuple[Piece, Future[tuple[str, int, FileScan] | None]]] = [
            (piece, _submit(pool, piece)) for piece in pieces
        ]
        futures.reverse()
        while futures:
            piece, future = futures.pop()  # a future keeps its scan: dropped once taken
            try:
                # Once the pool broke, a piece not done is scanned here: one sent while the
                # pool was breaking may never be answered (CPython 3.11's executor fails
                # the pending pieces without its submit lock, so a submit racing it is lost).
                if notices and not future.done():
                    raise BrokenProcessPool
                done = future.result()
                if done is None:
                    raise BrokenProcessPool  # the pool broke before this piece was sent
                key, index, result = done
            except BrokenProcessPool:
                if not notices:
                    notices.append(WORKER_DIED)
                key, index, result = _scan(piece)
            take(key, index, result)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return notices


def _shared_ahead(pieces: list[Piece]) -> None:
    """Imported here once for every worker (shared by the fork), what each would otherwise
    import for itself: the quantile sketches' library (numpy with it, ~0.1 s) when a piece
    holds more records than a summary keeps exact (then its worker sketches them:
    `ledger.quantiles`). (Building the fast decoders here too made the pool hang now and
    then when a worker was killed: tests/genledger/refresh/test_parallel.py.)"""
    lines = [p for p in pieces if p.groups is None and p.job.role == "responses"]
    if any(_records_over(p, PENDING_MAX) for p in lines):
        vector.load(numpy=True)  # numpy first, with its one BLAS thread
        quantiles.load()


SAMPLE_BYTES = 1 << 16  # read from a piece's start to guess its records


def _records_over(piece: Piece, limit: int) -> bool:
    """Whether a local JSONL piece likely holds more than `limit` lines, by the lines of its
    first `SAMPLE_BYTES` (a guess: a wrong one costs time, never a count)."""
    path = piece.job.path
    if isinstance(path, RemoteFile) or form_of(piece.job.name) != "jsonl":
        return False
    cp = piece.job.checkpoint
    start = piece.span.start if piece.span is not None else cp.offset if cp is not None else 0
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            sample = fh.read(SAMPLE_BYTES)
    except OSError:
        return False
    return sample.count(b"\n") * piece.size() > limit * max(len(sample), 1)


def _submit(pool: ProcessPoolExecutor, piece: Piece) -> Future[Any]:
    """The piece sent to a worker; a future of None once the pool is broken (a worker died
    while pieces were still being sent): the caller scans that piece in process."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    try:
        return pool.submit(_scan, piece)
    except BrokenProcessPool:
        broken: Future[Any] = Future()
        broken.set_result(None)
        return broken


def _whole(job: ScanJob) -> bool:
    """Read in one piece: sealed files, and remote ones (a cut costs a ranged read)."""
    return job.sealed or isinstance(job.path, RemoteFile)


def _group_pieces(job: ScanJob, cut: int) -> list[tuple[range, int]] | None:
    """Runs of whole row groups of about `cut` stored bytes each, with their bytes, for a
    changed local Parquet file of responses or tokenized rows; None when one piece would do."""
    if form_of(job.name) != "parquet" or job.role == "prompts" or not job.new_bytes():
        return None
    if isinstance(job.path, RemoteFile):
        return None  # read whole: each piece would fetch the footer and its pages again
    from genledger.tail.parquet import group_bytes

    sizes = group_bytes(job.path)
    if sizes is None or len(sizes) < 2 or sum(sizes) < 2 * cut:
        return None
    pieces, start, stored = [], 0, 0
    for group, size in enumerate(sizes):
        stored += size
        if stored >= cut or group == len(sizes) - 1:
            pieces.append((range(start, group + 1), stored))
            start, stored = group + 1, 0
    return pieces if len(pieces) > 1 else None


def join_groups(scans: list[FileScan]) -> FileScan | None:
    """The scan of a whole Parquet file from its row-group pieces' (in order); None when a
    piece failed, met a corrupt row group (the whole read stops there) or saw another file.
    A join empties `scans`, as `split.join`'s."""
    reads = [scan.read for scan in scans]
    first = reads[0]
    if first is None or any(read != first for read in reads):
        return None
    if any(scan.error or "malformed_lines" in scan.delta.failures for scan in scans):
        return None
    deltas = [scan.delta for scan in scans]  # rows numbered as in the whole file: no shift
    scans.clear()
    return FileScan(chained(deltas), first)


def _spans(plan_: Plan | None) -> tuple[Span | None, ...]:
    return (None,) if plan_ is None else plan_.spans
