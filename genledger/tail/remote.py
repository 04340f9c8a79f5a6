"""Remote data roots: `sftp://[user@]host[:port]/abs/path` (fsspec + sshfs) and
`s3://bucket/prefix` (fsspec + s3fs), behind the calls of a local root (`tail.roots`).

Plain files are read with ranged reads (a refresh transfers the new bytes, not the file);
there is no inode, so the content fingerprint alone says whether a file is the one a
checkpoint was taken on. Credentials come from the environment only, and never appear in a
message: `GENLEDGER_SSH_KEY` (else the agent and ~/.ssh), `GENLEDGER_SSH_KNOWN_HOSTS` (else
~/.ssh/known_hosts; an unknown or changed host key is refused), the standard AWS variables
(`AWS_ENDPOINT_URL` for S3-compatible stores). Every failure to reach or read the root is a
`DataRootError` with one line saying what and where: the refresh stops before it writes
anything, so no checkpoint moves.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from genledger.tail.roots import DataRootError, FileInfo, RemoteFile

ENV_SSH_KEY = "GENLEDGER_SSH_KEY"
ENV_KNOWN_HOSTS = "GENLEDGER_SSH_KNOWN_HOSTS"
CONNECT_TIMEOUT_S = 10.0  # a host that does not answer is given up well within 15 s
STREAM_BLOCK = 4 << 20


class Transfer:
    """Bytes read through remote roots in this process (what a refresh cost on the wire;
    forked scan workers count their own, unseen here)."""

    bytes_read = 0

    @classmethod
    def add(cls, data: bytes) -> bytes:
        """Count `data` and pass it on."""
        cls.bytes_read += len(data)
        return data


# The threads a connection starts: fsspec's event loop, and the loop's default executor (name
# lookups). Both wait idle unless a call of this process's main thread is in flight.
TRANSPORT_THREADS = ("fsspecIO", "asyncio_")


def transport_thread(thread: threading.Thread) -> bool:
    """A thread of the remote transport (idle between calls: forking beside it is safe)."""
    return thread.name.startswith(TRANSPORT_THREADS)


# One connection per (root, credentials, process): a changed key or known_hosts reconnects.
_FILESYSTEMS: dict[tuple[str, ...], Any] = {}
CREDENTIAL_VARIABLES = (ENV_SSH_KEY, ENV_KNOWN_HOSTS, "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID")


@dataclass(frozen=True)
class RemoteRoot:
    """A remote folder of dataset folders; a plain picklable value (no connection inside)."""

    scheme: str  # "sftp" | "s3"
    netloc: str  # [user@]host[:port] or the bucket
    base: str  # the folder's path on the filesystem: "/abs/path" or "bucket/prefix"
    host: str = ""
    port: int | None = None
    user: str | None = None

    @classmethod
    def from_url(cls, url: str) -> RemoteRoot:
        """Parse a root URL; raises `DataRootError` on a malformed one."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise DataRootError(f"data root {url}: not a valid URL ({exc})") from exc
        path = unquote(parts.path).rstrip("/")
        if parts.scheme == "sftp":
            if not parts.hostname or not parts.path.startswith("/"):
                raise DataRootError(f"data root {url}: expected sftp://[user@]host[:port]/path")
            netloc = parts.netloc.rsplit("@", 1)[-1]
            user = unquote(parts.username) if parts.username else None
            return cls("sftp", netloc, path or "/", parts.hostname, port, user)
        if parts.scheme == "s3":
            if not parts.netloc:
                raise DataRootError(f"data root {url}: expected s3://bucket/prefix")
            return cls("s3", parts.netloc, f"{parts.netloc}{path}")
        raise DataRootError(f"data root {url}: only sftp:// and s3:// URLs are supported")

    @property
    def url(self) -> str:
        """The root as a URL (no password: none is ever taken from it)."""
        who = f"{self.user}@" if self.user else ""
        if self.scheme == "sftp":
            return f"sftp://{who}{self.netloc}{self.base}"
        return f"s3://{self.base}"

    def url_of(self, path: str) -> str:
        """A remote path as a URL."""
        who = f"{self.user}@" if self.user else ""
        return f"sftp://{who}{self.netloc}{path}" if self.scheme == "sftp" else f"s3://{path}"

    def where(self) -> str:
        """The host or bucket, for messages."""
        if self.scheme == "sftp":
            return f"{self.host}:{self.port or 22}"
        return f"bucket {self.netloc}"

    # -- the connection ---------------------------------------------------------------------

    def filesystem(self) -> Any:
        """This process's fsspec filesystem of the root (connected once, then reused)."""
        key = (self.url, str(os.getpid()), *(os.environ.get(v, "") for v in CREDENTIAL_VARIABLES))
        fs = _FILESYSTEMS.get(key)
        if fs is None:
            with self.errors("cannot connect"):
                fs = _sftp(self) if self.scheme == "sftp" else _s3()
            _FILESYSTEMS[key] = fs
        return fs

    @contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Turn whatever the transport raises into one `DataRootError` line."""
        try:
            yield
        except (DataRootError, _Vanished):
            raise
        except Exception as exc:  # asyncssh, botocore and OS errors alike
            self.forget()  # a lost connection is not reused: the next call connects anew
            raise DataRootError(f"data root {self.url}: {explain(exc, self, doing)}") from None

    def forget(self) -> None:
        """Drop this process's connection to the root."""
        for key in [k for k in _FILESYSTEMS if k[0] == self.url]:
            del _FILESYSTEMS[key]

    # -- the root calls -----------------------------------------------------------------------

    def source(self, rel: str, listed: FileInfo | None = None) -> RemoteFile:
        """The file at `rel` (relative to the root); `listed`: its size and mtime as walked."""
        path = posixpath.join(self.base, rel) if rel else self.base
        return RemoteFile(self, path, (listed.size, listed.mtime_ns) if listed else None)

    def check(self) -> None:
        """Raise `DataRootError` unless the root is a folder we can list."""
        fs = self.filesystem()
        with self.errors("cannot list"):
            info = fs.info(self.base)
        if info.get("type") != "directory":
            raise DataRootError(f"data root {self.url} is not a directory")

    def walk(self) -> list[FileInfo]:
        """Every regular file under the root, at any depth, sorted by path."""
        self.check()  # missing, or a file: said as such, not listed as nothing
        fs = self.filesystem()
        with self.errors("cannot list"):
            found = fs.find(self.base, detail=True)
        files = []
        prefix = self.base.rstrip("/") + "/"
        for path, info in found.items():
            rel = path[len(prefix) :] if path.startswith(prefix) else path.lstrip("/")
            if info.get("type") != "file" or any(p.startswith(".") for p in rel.split("/")[:-1]):
                continue  # hidden folders are not walked, as on a local root
            files.append(FileInfo(rel, int(info.get("size") or 0), _mtime_ns(info)))
        files.sort(key=lambda f: f.path)
        return files

    def open(self, path: str) -> RemoteHandle:
        """The file for ranged reads; FileNotFoundError when it is gone."""
        return RemoteHandle(self, path)

    def stream(self, path: str) -> IO[bytes]:
        """The file for one sequential read (sealed files)."""
        fs = self.filesystem()
        with self._missing_passes("cannot open"):
            if self.scheme == "sftp":
                raw = fs.open(path, "rb")
            else:
                raw = fs.open(path, "rb", block_size=STREAM_BLOCK, cache_type="readahead")
        counted: IO[bytes] = _Counted(raw, self)  # type: ignore[assignment]
        return counted

    def stat(self, path: str) -> tuple[int, int] | None:
        """(size, mtime_ns), or None when it cannot be seen."""
        try:
            info = self.filesystem().info(path)
        except Exception:
            return None
        return int(info.get("size") or 0), _mtime_ns(info)

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
            raise FileNotFoundError(2, "No such file", str(gone.__cause__)) from None


class _Vanished(Exception):
    """A file (not the root) that is gone."""


class RemoteHandle:
    """A remote file for ranged reads: each read asks for exactly its bytes."""

    def __init__(self, root: RemoteRoot, path: str) -> None:
        self.root, self.path = root, path
        fs = root.filesystem()
        with root._missing_passes("cannot read"):
            info = fs.info(path)
            if info.get("type") == "directory":
                raise IsADirectoryError(21, "Is a directory", path)
        self.size = int(info.get("size") or 0)
        self.mtime_ns = _mtime_ns(info)
        self.identity: tuple[int, int] | None = None  # no inode: the fingerprint decides
        self._file: Any = None

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly the bytes at [offset, offset+length) (fewer past the end)."""
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        with self.root._missing_passes("cannot read"):
            if self.root.scheme == "s3":
                data = self.root.filesystem().cat_file(self.path, start=offset, end=offset + length)
            else:
                if self._file is None:
                    self._file = self.root.filesystem().open(self.path, "rb")
                data = self._file.read(length, offset)  # asyncssh: a pipelined ranged read
        return Transfer.add(bytes(data))

    def read_some(self, offset: int, length: int) -> bytes:
        """Same as `read_at` (a remote read is one ranged request)."""
        return self.read_at(offset, length)

    def close(self) -> None:
        """Release the remote file."""
        if self._file is not None:
            with contextlib.suppress(Exception):  # a lost connection has nothing to close
                self._file.close()
            self._file = None


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


def _mtime_ns(info: dict[str, Any]) -> int:
    value = info.get("mtime") or info.get("LastModified") or info.get("last_modified")
    if isinstance(value, datetime):
        return int(value.timestamp() * 1e9)
    if isinstance(value, int | float):
        return int(value * 1e9)
    return 0


# AES-GCM runs in OpenSSL with the CPU's AES instructions: 1.5x asyncssh's default
# chacha20-poly1305 for a plain SFTP read (docs/performance.md); ours is the first choice.
CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)


def _sftp(root: RemoteRoot) -> Any:
    from sshfs import SSHFileSystem

    # asyncssh's connect and login timeouts each bound the TCP connect, SSH handshake and
    # login together; `timeout` bounds sshfs's whole connect call (a silent host is given up
    # after 10 s: tests/genledger/tail/test_remote.py).
    options = {**ssh_options(root), "timeout": CONNECT_TIMEOUT_S + 2}
    fs = SSHFileSystem(root.host, skip_instance_cache=True, **options)
    quiet_about_losses(fs.loop)
    return fs


LOST_SENDS = "socket.send() raised exception."  # asyncio's note on each write after a loss


def quiet_about_losses(loop: Any) -> None:
    """A lost connection is said once, in our `DataRootError` line: asyncio would also print
    a note for every pipelined SFTP request still sent, and a traceback for every one nobody
    awaits any more. Other loop errors keep asyncio's default handling."""

    def handler(loop: Any, context: dict[str, Any]) -> None:
        if not _a_loss(context.get("exception")):
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    import logging  # remote roots only: 3 ms of every local start otherwise

    log = logging.getLogger("asyncio")
    if _drop_lost_sends not in log.filters:
        log.addFilter(_drop_lost_sends)


def _drop_lost_sends(record: Any) -> bool:  # a logging.LogRecord
    return record.msg != LOST_SENDS


def _a_loss(exc: object) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"DisconnectError", "SFTPError", "ConnectionError"})


def ssh_options(root: RemoteRoot) -> dict[str, Any]:
    """The asyncssh connection options of an sftp:// root (credentials from the environment)."""
    import asyncssh

    options: dict[str, Any] = {
        "known_hosts": _known_hosts(asyncssh),
        "connect_timeout": CONNECT_TIMEOUT_S,
        "login_timeout": CONNECT_TIMEOUT_S,
        "encryption_algs": list(CIPHERS),
        "compression_algs": ["none"],  # JSONL would compress, but zlib costs more CPU than it saves
    }
    key = os.environ.get(ENV_SSH_KEY, "").strip()
    if key:
        options["client_keys"] = [os.path.expanduser(key)]
    if root.user:
        options["username"] = root.user
    if root.port:
        options["port"] = root.port
    return options


def _known_hosts(asyncssh: Any) -> Any:
    """The trusted host keys: `GENLEDGER_SSH_KNOWN_HOSTS`, else ~/.ssh/known_hosts; none at all
    means every host is unknown (refused), never "accept anything"."""
    path = os.environ.get(ENV_KNOWN_HOSTS, "").strip() or str(Path.home() / ".ssh/known_hosts")
    path = os.path.expanduser(path)
    if os.path.isfile(path):
        return path
    return asyncssh.import_known_hosts("")


def _s3() -> Any:
    from s3fs import S3FileSystem

    endpoint = os.environ.get("AWS_ENDPOINT_URL", "").strip() or None
    config = {
        "connect_timeout": 5,
        "read_timeout": 10,
        "retries": {"max_attempts": 2, "mode": "standard"},
    }
    return S3FileSystem(
        endpoint_url=endpoint,
        config_kwargs=config,
        skip_instance_cache=True,
        use_listings_cache=False,
    )


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
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, words in EXPLAINERS:
        if name in names:
            return words(exc, root)
    text = _first_line(exc)
    if isinstance(exc, PermissionError) or "Permission denied" in text:
        return EXPLAINERS[1][1](exc, root)
    if names & {"ConnectionLost", "SFTPConnectionLost", "SFTPNoConnection"} or (
        "Connection lost" in text
    ):
        return f"{doing}: cannot reach {root.where()} (connection lost)"
    if isinstance(exc, FileNotFoundError) or "NoSuchBucket" in text or "NoSuchKey" in text:
        return f"{doing}: no such {'bucket or prefix' if root.scheme == 's3' else 'path'}"
    if isinstance(exc, TimeoutError) or "timed out" in text.lower():
        return f"{doing}: {root.where()} did not answer within {CONNECT_TIMEOUT_S:.0f} s"
    if isinstance(exc, ConnectionRefusedError | ConnectionResetError | OSError):
        return f"{doing}: cannot reach {root.where()} ({text or type(exc).__name__})"
    return f"{doing}: {type(exc).__name__}: {text}"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:200]
