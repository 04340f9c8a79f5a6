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

import errno
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
    """One regular file under a root: its path relative to the root and what it looks like;
    or, with `kind` other than "file", something else the walk met (see `LocalRoot.walk`)."""

    path: str  # '/'-separated, relative to the root; bytes not UTF-8 shown escaped (`shown`)
    size: int
    mtime_ns: int
    kind: str = "file"  # "file", "folder" (named like a data file), "other", "unlistable"
    error: str | None = None  # why it cannot be read: the OS's reason
    raw: str | None = None  # the path as the file system spells it, where `path` differs
    node: tuple[int, int] | None = None  # (device, inode) where the file system has them
    linked: bool = False  # reached through a symbolic link (itself one, or a folder on the way)
    alias_of: str | None = None  # kind "alias": the folder walked already, of which this is one

    @property
    def readable(self) -> bool:
        """A regular file seen whole (not a folder, not a problem)."""
        return self.kind == "file" and self.error is None


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
        self.fd, st = open_regular(path)
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


def open_regular(path: Path | str) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file `path`, and its stat. Opened without
    blocking, so a FIFO put where a file was listed cannot hang the read (its open would wait
    for a writer); anything but a regular file raises OSError with the reason."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({kind_of(st.st_mode)})", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def shown(name: str) -> str:
    """A name from the file system as text: bytes that are not UTF-8 (which Python keeps as
    lone surrogates, and no JSON may hold) escaped as `\\xNN`."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


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
    return os.fdopen(open_regular(source)[0], "rb", buffering=0)


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
        walk saw of it: its path as the file system spells it)."""
        if listed is not None and listed.raw is not None:
            rel = listed.raw
        elif "\\" in rel:
            rel = self._raw(rel)
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
        sorted by path (relative to the root); and what else the walk met, never dropped in
        silence: a folder it cannot list (`unlistable`), a FIFO, device, socket or broken
        link (`other`), a file it cannot stat, each with the OS's reason, and each folder
        named like a data file (`folder`: discovery decides whether it is one)."""
        self.check()
        found: list[FileInfo] = []
        seen: dict[tuple[int, int], str] = {}  # folders walked, by identity: each once
        raw = self._raw(under) if "\\" in under else under
        prefix = f"{under}/" if under else ""
        # Folders reached through a symbolic link wait until every real folder is walked: a
        # link is then an alias of the real folder (`alias`), never the other way round.
        links: list[tuple[Path, str, str]] = []
        self._walk(self.path / raw, prefix, f"{raw}/" if raw else "", found, seen, links)
        while links:
            folder, rel, raw_rel = links.pop(0)
            self._walk(folder, rel, raw_rel, found, seen, links, linked=True)
        found.sort(key=lambda f: f.path)
        return found

    def _raw(self, rel: str) -> str:
        """The path as the file system spells it, of a path shown with escaped bytes."""
        parts, folder = [], self.path
        for part in rel.split("/"):
            try:
                names = os.listdir(folder)
            except OSError:
                names = []
            part = next((n for n in names if shown(n) == part), part)
            parts.append(part)
            folder = folder / part
        return "/".join(parts)

    def _walk(
        self,
        folder: Path,
        prefix: str,
        raw_prefix: str,
        found: list[FileInfo],
        seen: dict[tuple[int, int], str],
        links: list[tuple[Path, str, str]],
        linked: bool = False,
    ) -> None:
        try:
            st = os.stat(folder)
            node = (st.st_dev, st.st_ino)
            if node in seen:  # walked already under another name: an alias of that folder
                here, raw_here = prefix.rstrip("/"), raw_prefix.rstrip("/")
                raw_or_none = raw_here if raw_here != here else None
                found.append(FileInfo(here, 0, 0, "alias", None, raw_or_none, alias_of=seen[node]))
                return
            seen[node] = prefix.rstrip("/")
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            return  # gone while listed: the next refresh sees the new state
        except OSError as exc:
            why = f"cannot list the folder: {exc.strerror or exc}"
            found.append(FileInfo(prefix, 0, 0, "unlistable", why, raw_prefix))
            return
        for entry in entries:
            name = shown(entry.name)
            rel, raw = prefix + name, raw_prefix + entry.name
            raw_or_none = raw if raw != rel else None
            try:
                if entry.is_dir():
                    if not entry.name.startswith("."):  # hidden folders (.git, .cache) too
                        if name.endswith(DATA_SUFFIXES):
                            found.append(
                                FileInfo(rel, 0, 0, "folder", "is a directory", raw_or_none)
                            )
                        if entry.is_symlink():
                            links.append((Path(entry.path), rel + "/", raw + "/"))
                        else:
                            self._walk(
                                Path(entry.path), rel + "/", raw + "/", found, seen, links, linked
                            )
                elif entry.is_file():
                    st = entry.stat()
                    node, through = (st.st_dev, st.st_ino), linked or entry.is_symlink()
                    size, mtime = st.st_size, st.st_mtime_ns
                    info = FileInfo(rel, size, mtime, raw=raw_or_none, node=node, linked=through)
                    found.append(info)
                else:
                    found.append(FileInfo(rel, 0, 0, "other", _not_regular(entry), raw_or_none))
            except FileNotFoundError:
                continue  # gone while listed: the next refresh sees the new state
            except OSError as exc:
                why = f"unreadable: {exc.strerror or exc}"
                found.append(FileInfo(rel, 0, 0, "other", why, raw_or_none))


# A folder whose name ends like this is named like a data file (discovery decides).
DATA_SUFFIXES = (".jsonl", ".gz", ".zst", ".zstd", ".parquet")


def _not_regular(entry: os.DirEntry[str]) -> str:
    """Why a directory entry that is neither a file nor a folder cannot be read."""
    try:
        mode = os.stat(entry.path).st_mode  # through a symlink: what it points to
    except FileNotFoundError:
        return "a broken symbolic link (No such file or directory)"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return f"not a regular file ({kind_of(mode)})"


def iter_chunks(stream: IO[bytes], size: int) -> Iterator[bytes]:
    """A stream's bytes in reads of up to `size` bytes."""
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk
