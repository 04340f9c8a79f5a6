"""Data roots: where a run's files live, listed and read the same way wherever that is.

A root lists its regular files recursively (size, mtime, identity) and opens one of them
for ranged reads (`Handle.read_at`) or for a sequential stream (sealed files). The local root
keeps the fast path: `os.scandir`, a file descriptor and `os.pread`. Remote roots
(`genledger.tail.remote`, which imports this module, never the reverse) put SFTP and S3
behind the same calls.

A file to read is a `Source`: a local `Path`, or a `RemoteFile` (a remote root and a path in
it); both are small, picklable values, so scan jobs can name files without opening them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol


class DataRootError(Exception):
    """The data root is missing, unreachable or cannot be listed; the message says which.
    Not an OSError: a remote root failing mid-refresh must stop the refresh (nothing written,
    no checkpoint moved), not turn into one file's read error."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One regular file under a root: its path relative to the root and what it looks like."""

    path: str  # '/'-separated, relative to the root
    size: int
    mtime_ns: int


class Handle(Protocol):
    """An open file for ranged reads, with what it looked like when opened."""

    size: int
    mtime_ns: int
    identity: tuple[int, int] | None  # (device, inode); None where there is no inode

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly the bytes at [offset, offset+length) (fewer if the file is shorter)."""
        ...

    def close(self) -> None:
        """Release the file."""
        ...


class LocalHandle:
    """A local file: one descriptor, `os.pread` (the fast path of every plain read)."""

    __slots__ = ("fd", "identity", "mtime_ns", "size")

    def __init__(self, path: Path | str) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(self.fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, "Is a directory", str(path))
        except BaseException:
            os.close(self.fd)
            raise
        self.size, self.mtime_ns = st.st_size, st.st_mtime_ns
        self.identity: tuple[int, int] | None = (st.st_dev, st.st_ino)

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly the bytes at [offset, offset+length) (fewer if the file is shorter)."""
        parts: list[bytes] = []
        while length > 0:
            part = os.pread(self.fd, length, offset)
            if not part:
                break
            parts.append(part)
            offset += len(part)
            length -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_some(self, offset: int, length: int) -> bytes:
        """One `pread`: at most `length` bytes at `offset` (the hot loop's read)."""
        return os.pread(self.fd, length, offset)

    def close(self) -> None:
        """Release the descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass(frozen=True)
class RemoteFile:
    """A file of a remote root: the root (a picklable description) and its full remote path."""

    root: Any  # genledger.tail.remote.RemoteRoot (which imports this module)
    path: str
    listed: tuple[int, int] | None = field(default=None, compare=False)  # (size, mtime_ns)

    def __str__(self) -> str:
        return self.root.url_of(self.path)


Source = Path | RemoteFile


def open_source(source: Source | str) -> Handle:
    """Open a file for ranged reads; raises OSError (FileNotFoundError when it is gone)."""
    if isinstance(source, RemoteFile):
        handle: Handle = source.root.open(source.path)
        return handle
    return LocalHandle(source)


def stream_source(source: Source | str) -> IO[bytes]:
    """Open a file for one sequential read (sealed files); raises OSError."""
    if isinstance(source, RemoteFile):
        stream: IO[bytes] = source.root.stream(source.path)
        return stream
    return open(source, "rb", buffering=0)


def stat_source(source: Source | str) -> tuple[int, int] | None:
    """(size, mtime_ns) of a file, or None when it cannot be seen."""
    if isinstance(source, RemoteFile):
        found: tuple[int, int] | None = source.root.stat(source.path)
        return found
    try:
        st = os.stat(source)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def root_id(root: Path | str) -> str:
    """The root's identity in state and stats: a URL as given, a folder's absolute path."""
    return root if isinstance(root, str) else str(root.resolve())


class LocalRoot:
    """A local folder of dataset folders."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = str(path)

    def source(self, rel: str, listed: FileInfo | None = None) -> Source:
        """The file at `rel` (relative to the root) as a readable source (`listed`: what the
        walk saw of it, kept by remote roots only)."""
        return self.path / rel if rel else self.path

    def check(self) -> None:
        """Raise `DataRootError` unless the root is a listable folder."""
        try:
            with os.scandir(self.path):
                pass
        except FileNotFoundError as exc:
            raise DataRootError(f"data root {self.path} does not exist") from exc
        except NotADirectoryError as exc:
            raise DataRootError(f"data root {self.path} is not a directory") from exc
        except OSError as exc:
            raise DataRootError(
                f"data root {self.path} cannot be read: {exc.strerror or exc}"
            ) from exc

    def walk(self, under: str = "") -> list[FileInfo]:
        """Every regular file under the root (or only its folder `under`), at any depth,
        sorted by path (relative to the root)."""
        self.check()
        found: list[FileInfo] = []
        seen: set[tuple[int, int]] = set()  # folders already walked: symlink loops end here
        self._walk(self.path / under, f"{under}/" if under else "", found, seen)
        found.sort(key=lambda f: f.path)
        return found

    def _walk(self, folder: Path, prefix: str, found: list[FileInfo], seen: set[Any]) -> None:
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
            entries = list(os.scandir(folder))
        except OSError:
            return  # an unlistable subfolder holds nothing we can read
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir():
                    if not entry.name.startswith("."):  # hidden folders (.git, .cache) too
                        self._walk(Path(entry.path), rel + "/", found, seen)
                elif entry.is_file():
                    st = entry.stat()
                    found.append(FileInfo(rel, st.st_size, st.st_mtime_ns))
            except OSError:
                continue  # vanished while listed: the next refresh sees the new state


def iter_chunks(stream: IO[bytes], size: int) -> Iterator[bytes]:
    """A stream's bytes in reads of up to `size` bytes."""
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk
