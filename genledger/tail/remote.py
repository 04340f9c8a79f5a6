"""Remote data roots: `sftp://[user@]HOST[:port]/abs/path` and `s3://bucket/prefix`, behind the
calls of a local root (`tail.roots`).

An sftp:// root is reached the way the user's own `ssh` reaches HOST: OpenSSH's `ssh` carries
the bytes (`tail.openssh`: their config's aliases, jump hosts, agent and known_hosts) and an
SFTP client speaks over its pipes (`tail.sftp`). `GENLEDGER_SSH_TRANSPORT=asyncssh` chooses
asyncssh instead (fsspec + sshfs: for machines without an `ssh` binary; it reads its own
subset of the ssh config), never silently. An s3:// root goes through fsspec + s3fs with the
standard AWS variables (`AWS_ENDPOINT_URL` for S3-compatible stores). `tail.links` holds the
connections of both kinds; this module names the root, its calls and its failures.

Plain files are read with ranged reads (a refresh transfers the new bytes, not the file);
there is no inode, so the content fingerprint alone says whether a file is the one a
checkpoint was taken on. Credentials come from the environment only and never appear in a
message; a password in a URL is refused (`without_password`). Every failure to reach or read
the root is a `DataRootError` with one line saying what and where: the refresh stops before
it writes anything, so no checkpoint moves.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from genledger.config import ENV_SSH_CONFIG, ENV_SSH_KEY, ENV_SSH_TRANSPORT
from genledger.config import ENV_SSH_KNOWN_HOSTS as ENV_KNOWN_HOSTS
from genledger.tail.links import FsspecLink, Link, Ranged, SFTPLink, asyncssh_fs, s3_fs
from genledger.tail.roots import DataRootError, FileInfo, RemoteFile

CONNECT_TIMEOUT_S = 10  # connect, every hop, handshake and login: well within 15 s
IDLE_TIMEOUT_S = 15  # a server silent this long while we wait for it is given up
TRANSPORTS = ("openssh", "asyncssh")


class Transfer:
    """Bytes read through remote roots in this process (what a refresh cost on the wire;
    forked scan workers count their own, unseen here)."""

    bytes_read = 0

    @classmethod
    def add(cls, data: bytes) -> bytes:
        """Count `data` and pass it on."""
        cls.bytes_read += len(data)
        return data


# The threads an fsspec connection starts (S3, and SFTP through asyncssh): fsspec's event
# loop, and the loop's default executor (name lookups). Both wait idle unless a call of this
# process's main thread is in flight. OpenSSH's transport starts none.
TRANSPORT_THREADS = ("fsspecIO", "asyncio_")


def transport_thread(thread: threading.Thread) -> bool:
    """A thread of the remote transport (idle between calls: forking beside it is safe)."""
    return thread.name.startswith(TRANSPORT_THREADS)


def without_password(url: str) -> str:
    """`url` with the password of its user part taken out (`sftp://me:pw@host/p` becomes
    `sftp://me@host/p`): how a URL is shown or stored anywhere a password could be in it."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a malformed authority: hide all of it, below
    except ValueError:
        return re.sub(r"(://)[^@]*@", r"\1...@", url, count=1)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    netloc = f"{parts.username}@{host}" if parts.username else host
    return urlunsplit(parts._replace(netloc=netloc))


# What ssh takes as a host alias or name, and as a user; nothing that could be an option.
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@-]*")


# One connection per (root, settings, process): a changed key, config or transport reconnects.
_LINKS: dict[tuple[str, ...], Link] = {}
_CONNECTING = threading.Lock()
_SPARES: dict[tuple[str, ...], Any] = {}  # (root, settings, process): its tail.openssh.Spares


def _workers() -> int:
    """The scan workers a refresh would fork (as `genledger.refresh.parallel` counts them)."""
    configured = os.environ.get("GENLEDGER_WORKERS", "").strip()
    if configured.isdigit():
        return int(configured)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


SETTING_VARIABLES = (
    ENV_SSH_KEY,
    ENV_KNOWN_HOSTS,
    ENV_SSH_CONFIG,
    ENV_SSH_TRANSPORT,
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
)


@dataclass(frozen=True)
class RemoteRoot:
    """A remote folder of dataset folders; a plain picklable value (no connection inside)."""

    scheme: str  # "sftp" | "s3"
    netloc: str  # host[:port] (no user) or the bucket
    base: str  # the folder's path on the filesystem: "/abs/path" or "bucket/prefix"
    host: str = ""  # as written: an alias of the ssh config, a name or an address
    port: int | None = None
    user: str | None = None

    @classmethod
    def from_url(cls, url: str) -> RemoteRoot:
        """Parse a root URL; raises `DataRootError` on a malformed one or one with a password."""
        shown = without_password(url)
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise DataRootError(f"data root {shown}: not a valid URL ({exc})") from None
        if parts.password is not None:
            raise DataRootError(
                f"data root {shown}: a password in the URL is refused (it would be stored "
                "and shown): sign in with a key (the agent, the ssh config's IdentityFile "
                f"or {ENV_SSH_KEY}) or, for S3, the AWS variables"
            )
        path = unquote(parts.path).rstrip("/")
        netloc = parts.netloc.rsplit("@", 1)[-1]
        if parts.scheme == "sftp":
            return cls._sftp(shown, parts.path, path, netloc, port, parts.username)
        if parts.scheme == "s3":
            if not parts.netloc:
                raise DataRootError(f"data root {shown}: expected s3://bucket/prefix")
            return cls("s3", netloc, f"{netloc}{path}")
        raise DataRootError(f"data root {shown}: only sftp:// and s3:// URLs are supported")

    @classmethod
    def _sftp(
        cls, shown: str, raw: str, path: str, netloc: str, port: int | None, user: str | None
    ) -> RemoteRoot:
        host = netloc[1 : netloc.find("]")] if netloc.startswith("[") else netloc.split(":")[0]
        if not host or not raw.startswith("/"):
            raise DataRootError(f"data root {shown}: expected sftp://[user@]host[:port]/path")
        name = unquote(user) if user else None
        if not (HOST_NAME.fullmatch(host) or re.fullmatch(r"[0-9A-Fa-f:.]+", host)):
            raise DataRootError(f"data root {shown}: {host!r} is not a host name ssh takes")
        if name is not None and not USER_NAME.fullmatch(name):
            raise DataRootError(f"data root {shown}: {name!r} is not a user name ssh takes")
        return cls("sftp", netloc, path or "/", host, port, name)

    @property
    def url(self) -> str:
        """The root as a URL (never with a password: none is taken)."""
        return self.url_of(self.base) if self.scheme == "sftp" else f"s3://{self.base}"

    def url_of(self, path: str) -> str:
        """A remote path as a URL."""
        who = f"{self.user}@" if self.user else ""
        return f"sftp://{who}{self.netloc}{path}" if self.scheme == "sftp" else f"s3://{path}"

    def where(self) -> str:
        """The host (as the URL names it) or bucket, for messages."""
        if self.scheme == "sftp":
            return self.netloc
        return f"bucket {self.netloc}"

    # -- the connection ---------------------------------------------------------------------

    def link(self) -> Link:
        """This process's connection to the root (made once, then reused; a forked scan
        worker takes one its parent started for it, where one is left)."""
        key = self._key()
        with _CONNECTING:  # threads of a Dagster process share one connection, not race to two
            link = _LINKS.get(key)
            if link is None:
                with self.errors("cannot connect"):
                    link = self._adopted() or self._connect()
                _LINKS[key] = link
        return link

    def _key(self, pid: int | None = None) -> tuple[str, ...]:
        settings = (os.environ.get(v, "") for v in SETTING_VARIABLES)
        return (self.url, str(pid or os.getpid()), *settings)

    def _openssh(self) -> bool:
        transport = os.environ.get(ENV_SSH_TRANSPORT, "").strip() or "openssh"
        return self.scheme == "sftp" and transport == "openssh"

    def _adopted(self) -> Link | None:
        spares = _SPARES.get(self._key(os.getppid()))
        if spares is None or not self._openssh():
            return None
        connection = spares.take()
        return None if connection is None else SFTPLink(connection)

    def _offer_spares(self) -> Any:
        """Start a connection for each scan worker a refresh may fork, beside this process's
        own (`tail.openssh.Spares`); None where no worker would take one."""
        count = _workers()
        if count < 2 or not self._openssh():
            return None
        from genledger.tail.openssh import Spares, SSHConnection

        def start() -> SSHConnection:
            timeouts = (CONNECT_TIMEOUT_S, IDLE_TIMEOUT_S)
            return SSHConnection(self.host, self.user, self.port, *timeouts, wait=False)

        spares = _SPARES.setdefault(self._key(), Spares())
        spares.refill(count, start)
        return spares

    def _connect(self) -> Link:
        if self.scheme == "s3":
            return FsspecLink(s3_fs())
        transport = os.environ.get(ENV_SSH_TRANSPORT, "").strip() or "openssh"
        if transport == "openssh":
            from genledger.tail.openssh import SSHConnection  # not loaded for local roots

            connection = SSHConnection(
                self.host, self.user, self.port, CONNECT_TIMEOUT_S, IDLE_TIMEOUT_S
            )
            return SFTPLink(connection)
        if transport == "asyncssh":
            return FsspecLink(asyncssh_fs(self.host, self.user, self.port, CONNECT_TIMEOUT_S))
        raise DataRootError(
            f"data root {self.url}: {ENV_SSH_TRANSPORT}={transport!r}: expected "
            + " or ".join(TRANSPORTS)
        )

    @contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Turn whatever the transport raises into one `DataRootError` line."""
        try:
            yield
        except (DataRootError, _Vanished):
            raise
        except Exception as exc:  # ssh, SFTP, asyncssh, botocore and OS errors alike
            self.forget()  # a lost connection is not reused: the next call connects anew
            raise DataRootError(f"data root {self.url}: {explain(exc, self, doing)}") from None

    def forget(self) -> None:
        """Close and drop this process's connection to the root (and its spares)."""
        mine = str(os.getpid())
        for key in [k for k in _LINKS if k[0] == self.url]:
            link = _LINKS.pop(key)
            if key[1] == mine:  # a parent's connection is the parent's to close
                with contextlib.suppress(Exception):
                    link.close()
        for key in [k for k in _SPARES if k[0] == self.url and k[1] == mine]:
            for connection in _SPARES.pop(key).started:
                with contextlib.suppress(Exception):
                    connection.close()

    # -- the root calls -----------------------------------------------------------------------

    def source(self, rel: str, listed: FileInfo | None = None) -> RemoteFile:
        """The file at `rel` (relative to the root); `listed`: its size and mtime as walked."""
        path = posixpath.join(self.base, rel) if rel else self.base
        return RemoteFile(self, path, (listed.size, listed.mtime_ns) if listed else None)

    def check(self) -> None:
        """Raise `DataRootError` unless the root is a folder we can list."""
        link = self.link()
        with self.errors("cannot list"):
            found = link.info(self.base)
        if not found.is_dir:
            raise DataRootError(f"data root {self.url} is not a directory")

    def walk(self) -> list[FileInfo]:
        """Every regular file under the root, at any depth, sorted by path."""
        spares = self._offer_spares()  # their handshakes run beside ours and the listing
        self.check()  # missing, or a file: said as such, not listed as nothing
        link = self.link()
        with self.errors("cannot list"):
            files = link.files(self.base)
        if spares is not None:
            spares.settle()
        files.sort(key=lambda f: f.path)
        return files

    def open(self, path: str) -> RemoteHandle:
        """The file for ranged reads; FileNotFoundError when it is gone."""
        return RemoteHandle(self, path)

    def stream(self, path: str) -> IO[bytes]:
        """The file for one sequential read (sealed files)."""
        link = self.link()
        with self._missing_passes("cannot open"):
            raw = link.stream(path)
        if raw is None:
            ranged: IO[bytes] = RangedStream(self.open(path))  # type: ignore[assignment]
            return ranged
        counted: IO[bytes] = _Counted(raw, self)  # type: ignore[assignment]
        return counted

    def stat(self, path: str) -> tuple[int, int] | None:
        """(size, mtime_ns), or None when it cannot be seen."""
        try:
            found = self.link().info(path)
        except Exception:
            return None
        return found.size, found.mtime_ns

    @contextmanager
    def _missing_passes(self, doing: str) -> Iterator[None]:
        """Like `errors`, but a file that vanished stays a FileNotFoundError (that file's
        problem, not the root's)."""
        try:
            with self.errors(doing):
                try:
                    yield
                except FileNotFoundError as exc:
                    raise _Vanished() from exc
        except _Vanished as gone:
            path = getattr(gone.__cause__, "filename", None) or str(gone.__cause__)
            raise FileNotFoundError(2, "No such file", path) from None


class _Vanished(Exception):
    """A file (not the root) that is gone."""


class RemoteHandle:
    """A remote file for ranged reads: each read asks for exactly its bytes (the file is
    opened on the server at the first read: an unchanged file costs one stat)."""

    def __init__(self, root: RemoteRoot, path: str) -> None:
        self.root, self.path = root, path
        self.link = root.link()
        with root._missing_passes("cannot read"):
            found = self.link.info(path)
        if found.is_dir:
            raise IsADirectoryError(21, "Is a directory", path)
        self.size, self.mtime_ns = found.size, found.mtime_ns
        self.identity: tuple[int, int] | None = None  # no inode: the fingerprint decides
        self._file: Ranged | None = None

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly the bytes at [offset, offset+length) (fewer past the end)."""
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        with self.root._missing_passes("cannot read"):
            if self._file is None:
                self._file = self.link.open(self.path)
            data = self._file.read(offset, length)
        return Transfer.add(data)

    def read_some(self, offset: int, length: int) -> bytes:
        """Same as `read_at` (a remote read is one ranged request)."""
        return self.read_at(offset, length)

    def close(self) -> None:
        """Release the remote file."""
        if self._file is not None:
            with contextlib.suppress(Exception):  # a lost connection has nothing to close
                self._file.close()
            self._file = None


class RangedStream(io.RawIOBase):
    """A remote file as a sequential, seekable stream of ranged reads (sealed files)."""

    def __init__(self, handle: RemoteHandle) -> None:
        self.handle, self.position = handle, 0

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        left = self.handle.size - self.position
        data = self.handle.read_at(self.position, left if size is None or size < 0 else size)
        self.position += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def seek(self, offset: int, whence: int = 0) -> int:
        start = (0, self.position, self.handle.size)[whence]
        self.position = max(0, start + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.handle.close()
        super().close()


class _Counted:
    """A sequential remote stream that counts what it reads and names failures in one line."""

    def __init__(self, raw: Any, root: RemoteRoot) -> None:
        self.raw, self.root = raw, root

    def read(self, size: int = -1) -> bytes:
        with self.root.errors("cannot read"):
            return Transfer.add(bytes(self.raw.read(size)))

    def seek(self, offset: int, whence: int = 0) -> int:
        with self.root.errors("cannot read"):
            return int(self.raw.seek(offset, whence))

    def tell(self) -> int:
        return int(self.raw.tell())

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return bool(getattr(self.raw, "closed", False))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.raw.close()

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


EXPLAINERS: list[tuple[str, Callable[[Exception, RemoteRoot], str]]] = [
    (
        "HostKeyNotVerifiable",
        lambda e, r: (
            f"host key of {r.where()} is unknown or changed (refused): add the host's "
            f"key to {ENV_KNOWN_HOSTS} or ~/.ssh/known_hosts"
        ),
    ),
    (
        "PermissionDenied",
        lambda e, r: (
            f"authentication refused by {r.where()} (key from {ENV_SSH_KEY}, the agent or ~/.ssh)"
        ),
    ),
    ("NoCredentialsError", lambda e, r: "no AWS credentials (set AWS_ACCESS_KEY_ID and friends)"),
    ("EndpointConnectionError", lambda e, r: f"cannot reach the S3 endpoint ({_first_line(e)})"),
]


def explain(exc: Exception, root: RemoteRoot, doing: str) -> str:
    """One line for a transport failure, without secrets or a traceback."""
    kind = getattr(exc, "kind", None)  # tail.openssh.SSHFailed: what ssh said, in one line
    if kind == "timeout":
        return f"{doing}: {root.where()} did not answer within {CONNECT_TIMEOUT_S} s"
    if kind == "lost":
        return f"{doing}: cannot reach {root.where()} ({exc})"
    if kind is not None:
        return f"{doing}: {exc}"
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, words in EXPLAINERS:
        if name in names:
            return words(exc, root)
    text = _first_line(exc)
    if isinstance(exc, TimeoutError) and root.scheme == "sftp" and doing != "cannot connect":
        return f"{doing}: {root.where()} did not answer within {IDLE_TIMEOUT_S} s"
    if isinstance(exc, PermissionError) or "Permission denied" in text:
        return EXPLAINERS[1][1](exc, root)
    if names & {"ConnectionLost", "SFTPConnectionLost", "SFTPNoConnection"} or (
        "Connection lost" in text
    ):
        return f"{doing}: cannot reach {root.where()} (connection lost)"
    if isinstance(exc, FileNotFoundError) or "NoSuchBucket" in text or "NoSuchKey" in text:
        return f"{doing}: no such {'bucket or prefix' if root.scheme == 's3' else 'path'}"
    if isinstance(exc, TimeoutError) or "timed out" in text.lower():
        return f"{doing}: {root.where()} did not answer within {CONNECT_TIMEOUT_S} s"
    if isinstance(exc, ConnectionRefusedError | ConnectionResetError | OSError):
        return f"{doing}: cannot reach {root.where()} ({text or type(exc).__name__})"
    return f"{doing}: {type(exc).__name__}: {text}"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:200]
