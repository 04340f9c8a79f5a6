"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import _thread
import contextlib
import errno
import os
import secrets
import stat
import time
from collections.abc import Sequence
from pathlib import Path

STALE_TEMP_S = 900  # a temp file this old belongs to a writer that was killed mid-write


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a fsynced temp file in the same folder and `os.replace`."""
    atomic_write_many([(path, data)])


def atomic_write_many(files: Sequence[tuple[Path, bytes]], durable: bool = True) -> None:
    """`atomic_write_bytes` of each (path, data), with the syncs done together: every temp
    file is written, then all are fsynced at once (the disk takes them in one go), then each
    is renamed over its path, then each folder is fsynced once. A failure before a rename
    leaves that path as it was, and no temp file behind. `durable=False`: no fsync (a reader
    still sees the old file or the new one; after a power cut the new one may be lost or
    empty), for files whose loss costs only a saving."""
    _write_groups([files], durable)


def atomic_write_in_turn(
    groups: Sequence[Sequence[tuple[Path, bytes]]], synced: Sequence[int] = ()
) -> None:
    """`atomic_write_many` of each group in turn, durably, with one sync for them all: every
    temp file is written, then all are fsynced at once together with the open files `synced`
    (the caller's, left open), then each group's files are renamed and their folders fsynced
    before the next group's are renamed in. So a group's renames are durable before any of the
    next group's happens, at the cost of one round of data syncs, not one a group. A failure
    leaves the paths not yet renamed as they were, and no temp file behind."""
    _write_groups(groups, True, synced)


def _write_groups(
    groups: Sequence[Sequence[tuple[Path, bytes]]], durable: bool, synced: Sequence[int] = ()
) -> None:
    """Write every group's temp files, sync them (and `synced`) once, then rename group by
    group, each group's folders fsynced before the next group's renames."""
    temps: list[tuple[str, Path]] = []  # written, not yet renamed
    fds: list[int] = []
    current = Path()
    try:
        for group in groups:
            for current, data in group:
                _write_temp(current, data, temps, fds)
        if durable:
            _sync([*fds, *synced])
        _close_all(fds)
        for group in groups:
            for _ in group:
                tmp, current = temps[0]
                os.replace(tmp, current)
                temps.pop(0)
            _settle_folders(group, durable)
    except BaseException as exc:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        # A failed write must not leave temp files behind next to the stats.
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            # Name the file the caller asked for, not our temp file.
            raise OSError(exc.errno, exc.strerror, str(current)) from exc
        raise


def _settle_folders(files: Sequence[tuple[Path, bytes]], durable: bool) -> None:
    """Fsync once each folder the files were renamed into (`durable`), and sweep its stale
    temp files."""
    folders: dict[Path, list[str]] = {}
    for path, _ in files:
        folders.setdefault(path.parent, []).append(path.name)
    for folder, names in folders.items():
        if durable:
            _fsync_dir(folder)
        _remove_stale_temps(folder, names)


def _write_temp(path: Path, data: bytes, temps: list[tuple[str, Path]], fds: list[int]) -> None:
    """A new temp file beside `path` holding `data`, noted in `temps`, its fd left open. It
    gets the mode of the file it replaces, else 0666 less the umask, as a plain `open` would
    give (mkstemp's 0600 locked out a dashboard running as another user)."""
    try:
        fd, tmp = _new_temp(path)
    except FileNotFoundError:  # made once, not tried for each of a refresh's many files
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _new_temp(path)
    fds.append(fd)
    temps.append((tmp, path))
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = None  # a new file: the umask applied by os.open decides
    if mode is not None and mode != stat.S_IMODE(os.fstat(fd).st_mode):
        os.fchmod(fd, mode)  # a metadata write, only when it changes something
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _new_temp(path: Path) -> tuple[int, str]:
    """An exclusive new file `.NAME.<random>.tmp` beside `path`, created 0666 less the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(path))


def _sync(fds: Sequence[int]) -> None:
    """fsync every fd, all at once in helper threads (the file system commits concurrent
    fsyncs together); the first failure is raised once all have ended."""
    failures: list[BaseException] = []

    def sync(fd: int, done: _thread.LockType | None = None) -> None:
        try:
            os.fsync(fd)
        except BaseException as exc:  # raised in this caller's thread, below
            failures.append(exc)
        finally:
            if done is not None:
                done.release()

    # `_thread`, not `threading.Thread`: its `start` waits until the new thread runs, one
    # thread after another, which on a busy machine cost more than the fsyncs themselves
    # (13 of them: 6-12 ms against 1.5-2 ms, benchmarks in docs/performance-log.md)
    waits = []
    for fd in fds[1:]:
        done = _thread.allocate_lock()
        done.acquire()
        try:
            _thread.start_new_thread(sync, (fd, done))
        except RuntimeError:  # no thread to be had: this one syncs it
            sync(fd, done)
        waits.append(done)
    if fds:
        sync(fds[0])
    for done in waits:
        done.acquire()
    if failures:
        raise failures[0]


def _close_all(fds: list[int]) -> None:
    """Close every fd, emptying `fds`."""
    while fds:
        os.close(fds.pop())


def _remove_stale_temps(folder: Path, names: list[str]) -> None:
    """Delete temp files that writers killed before `os.replace` left beside these files."""
    cutoff = time.time() - STALE_TEMP_S
    prefixes = tuple(f".{name}." for name in names)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not (entry.name.startswith(prefixes) and entry.name.endswith(".tmp")):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)


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
