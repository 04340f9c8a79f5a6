"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import time
from pathlib import Path

STALE_TEMP_S = 900  # a temp file this old belongs to a writer that was killed mid-write


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a fsynced temp file in the same folder and `os.replace`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        # A failed write must not leave temp files behind next to the stats.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            # Name the file the caller asked for, not our temp file.
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    _fsync_dir(path.parent)
    _remove_stale_temps(path)


def _remove_stale_temps(path: Path) -> None:
    """Delete temp files that writers killed before `os.replace` left beside `path`."""
    cutoff = time.time() - STALE_TEMP_S
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            if leftover.stat().st_mtime < cutoff:
                leftover.unlink()


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: some filesystems refuse dir fds)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
