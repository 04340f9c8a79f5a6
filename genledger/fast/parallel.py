"""Scan many files at once in forked workers (the parallel lever).

Each worker runs the scan it is given (`refresh.scan.scan_job`) on a piece of a file
(`genledger.fast.split`: big reads are cut at line starts, so the cores stay evenly busy) or on
a whole small one — parse with the fast decoder, tally with the row evaluation of the rules —
and sends back only the compact FileScan, so the parent stays small; joined, the pieces give
the result the same call gives in-process; a big local Parquet file goes in pieces of whole
row groups (`scan_groups`). Forking happens before pandas is imported, and only when it pays:
enough new bytes, 2+ usable cores, a single-threaded process (forking a threaded one, such as
a Dagster server, is not safe) — a remote root's idle transport threads aside.

Remote files are forked too, whole (no pieces: cutting them would fetch bytes twice): each
worker opens its own connection, so transfer and parsing run on both cores instead of taking
turns on one interpreter lock (benchmarks/remote.py, docs/performance.md).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from genledger.config import Switches
from genledger.fast import vector
from genledger.fast.split import PIECE_BYTES, Plan, join, plan
from genledger.ledger.filescan import FileScan
from genledger.ledger.tally import FileTally
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.discovery import form_of
from genledger.tail.parquet import group_bytes
from genledger.tail.reader import Span
from genledger.tail.remote import transport_thread
from genledger.tail.roots import RemoteFile, Source, stat_source
from genledger.tail.sealed import zstd_ahead

MIN_PARALLEL_BYTES = 32 << 20  # below this, fork + pickling cost more than they save
# Stored bytes of a Parquet piece at most: one file (HF `datasets` writes one) keeps 2 cores
# busy, and pieces stay big enough that opening the file again for each costs nothing.
PARQUET_PIECE_BYTES = 32 << 20
SEALED_WEIGHT = 4  # a compressed or Parquet byte is worth about this many plain ones
SETTLE_SECONDS = 300.0  # default of `[files] settle_seconds` (genledger.config)


@dataclass(frozen=True)
class ScanJob:
    """One file to read from its checkpoint; `key` names it in the result."""

    key: str
    path: Source
    name: str
    role: str
    checkpoint: Checkpoint | None
    switches: Switches = field(default_factory=Switches)
    now: float | None = None  # for sealed files: has an early end of stream settled?
    settle_seconds: float = SETTLE_SECONDS

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
            unchanged = cp is not None and (cp.size, cp.mtime_ns) == (size, mtime_ns)
            return 0 if unchanged else size * SEALED_WEIGHT
        done = cp.offset if cp is not None else 0
        return size - done if size >= done else size


def workers_wanted(configured: int | None = None) -> int:
    """Worker processes to use: as configured (`Switches.workers`), else the usable cores."""
    if configured is not None:
        return configured
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def _worth_forking(jobs: list[ScanJob], workers: int) -> bool:
    if workers < 2 or not jobs or not _only_idle_threads():
        return False
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    return sum(job.new_bytes() for job in jobs) >= MIN_PARALLEL_BYTES


def _only_idle_threads() -> bool:
    """No thread but this one, or else only a remote root's transport threads, which sit idle
    while this (the only caller of the transport) forks; a worker opens its own connection."""
    main = threading.current_thread()
    return all(t is main or transport_thread(t) for t in threading.enumerate())


Scan = Callable[[ScanJob, Span | None], FileScan]  # a module-level function: it is pickled
GroupScan = Callable[[ScanJob, range], FileScan]  # a Parquet file's row groups, likewise


@dataclass(frozen=True)
class _Piece:
    job: ScanJob
    index: int
    span: Span | None  # None: the whole read, from the job's checkpoint
    scan: Scan
    groups: range | None = None  # a Parquet piece: these row groups, by `scan_groups`
    scan_groups: GroupScan | None = None
    stored: int = 0  # a Parquet piece's stored bytes

    def size(self) -> int:
        if self.groups is not None:
            return self.stored * SEALED_WEIGHT
        if self.span is None:
            return self.job.new_bytes()
        stop = self.span.stop if self.span.stop is not None else self.span.start + PIECE_BYTES
        return stop - self.span.start


def _scan(piece: _Piece) -> tuple[str, int, FileScan]:
    if piece.groups is not None and piece.scan_groups is not None:
        return piece.job.key, piece.index, piece.scan_groups(piece.job, piece.groups)
    return piece.job.key, piece.index, piece.scan(piece.job, piece.span)


def scan_all(
    jobs: list[ScanJob],
    scan: Scan,
    workers: int | None = None,
    scan_groups: GroupScan | None = None,
) -> dict[str, FileScan]:
    """Scan `jobs` across processes when it pays; an empty dict means: scan them in place.
    A job missing from the result (its file changed while it was read in pieces) is to be
    scanned in place too. `scan_groups`: how to scan row groups of a Parquet file (without
    it, each Parquet file is read whole by one worker)."""
    workers = workers_wanted(workers)
    if not _worth_forking(jobs, workers):
        return {}
    plans = {job.key: None if _whole(job) else plan(job.path, job.checkpoint) for job in jobs}
    total = sum(job.new_bytes() for job in jobs) // SEALED_WEIGHT
    cut = max(1, min(PARQUET_PIECE_BYTES, total // (4 * workers)))
    groups = {job.key: _group_pieces(job, cut) if scan_groups else None for job in jobs}
    pieces = []
    for job in jobs:
        split_groups = groups[job.key]
        if split_groups is not None:
            pieces += [
                _Piece(job, index, None, scan, part, scan_groups, stored)
                for index, (part, stored) in enumerate(split_groups)
            ]
            continue
        pieces += [
            _Piece(job, index, span, scan) for index, span in enumerate(_spans(plans[job.key]))
        ]
    # Biggest first, so the last piece to finish is a small one.
    pieces.sort(key=lambda piece: piece.size(), reverse=True)
    # Loaded once here, numpy and pyarrow are shared by every worker (copy-on-write) instead
    # of imported by each of them.
    vector.load()
    if any(form_of(job.name) == "parquet" for job in jobs):
        import pyarrow.compute
        import pyarrow.parquet  # noqa: F401  (with compute: 50 ms a worker otherwise)
    parts: dict[str, dict[int, FileScan]] = {job.key: {} for job in jobs}
    context = multiprocessing.get_context("fork")
    # zstd decompresses in a thread only where a core would otherwise idle (tail.sealed)
    idle = len(pieces) < workers
    with context.Pool(min(workers, len(pieces)), zstd_ahead, (idle,)) as pool:
        for key, index, result in pool.imap_unordered(_scan, pieces):
            parts[key][index] = result
    scans: dict[str, FileScan] = {}
    for key, done in parts.items():
        ordered = [done[index] for index in sorted(done)]
        plan_ = plans[key]
        if groups[key] is not None:
            joined = join_groups(ordered)
        else:
            joined = ordered[0] if plan_ is None else join(plan_, ordered)
        if joined is not None:
            scans[key] = joined
    return scans


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
    piece failed, met a corrupt row group (the whole read stops there) or saw another file."""
    reads = [scan.read for scan in scans]
    first = reads[0]
    if first is None or any(read != first for read in reads):
        return None
    if any(scan.error or "malformed_lines" in scan.delta.failures for scan in scans):
        return None
    delta = FileTally()
    for scan in scans:  # rows are numbered as in the whole file: no shift
        delta = delta + scan.delta
    return FileScan(delta, first)


def _spans(plan_: Plan | None) -> tuple[Span | None, ...]:
    return (None,) if plan_ is None else plan_.spans
