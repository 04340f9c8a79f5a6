"""Scan many files at once in forked workers (the parallel lever).

Each worker runs `scan.scan_file` on whole files — parse with the fast decoder, tally with the
pandas-free rules mirror — and sends back only the compact FileScan, so the parent stays small
and the result is the one the same call gives in-process. Forking happens before pandas is
imported, and only when it pays: enough new bytes, 2+ usable cores, a single-threaded process
(forking a threaded one, such as a Dagster server, is not safe).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from genledger import rawtext
from genledger.checkpoint import Checkpoint
from genledger.scan import FileScan, scan_file

MIN_PARALLEL_BYTES = 32 << 20  # below this, fork + pickling cost more than they save


@dataclass(frozen=True)
class ScanJob:
    """One file to read from its checkpoint; `key` names it in the result."""

    key: str
    path: Path
    name: str
    role: str
    checkpoint: Checkpoint | None

    def new_bytes(self) -> int:
        """About how many bytes this read will parse (0 when the file is gone)."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return 0
        done = self.checkpoint.offset if self.checkpoint is not None else 0
        return size - done if size >= done else size


def workers_wanted() -> int:
    """Worker processes to use: `GENLEDGER_WORKERS`, else the usable cores."""
    configured = os.environ.get("GENLEDGER_WORKERS", "")
    if configured.isdigit():
        return int(configured)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def _worth_forking(jobs: list[ScanJob], workers: int) -> bool:
    if workers < 2 or len(jobs) < 2 or threading.active_count() > 1:
        return False
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    return sum(job.new_bytes() for job in jobs) >= MIN_PARALLEL_BYTES


def _scan(job: ScanJob) -> tuple[str, FileScan]:
    return job.key, scan_file(job.path, job.name, job.role, job.checkpoint)


def scan_all(jobs: list[ScanJob], workers: int | None = None) -> dict[str, FileScan]:
    """Scan `jobs` across processes when it pays; an empty dict means: scan them in place."""
    workers = workers_wanted() if workers is None else workers
    if not _worth_forking(jobs, workers):
        return {}
    # Biggest first, so the last file to finish is a small one.
    ordered = sorted(jobs, key=lambda job: job.new_bytes(), reverse=True)
    # Loaded once here, the text lever's checks are shared by every worker (copy-on-write)
    # instead of imported by each of them.
    if any(job.role == "responses" for job in jobs):
        rawtext.load()
    scans: dict[str, FileScan] = {}
    context = multiprocessing.get_context("fork")
    with context.Pool(min(workers, len(jobs))) as pool:
        for key, scan in pool.imap_unordered(_scan, ordered):
            scans[key] = scan
    return scans
