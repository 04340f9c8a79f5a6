"""How a remote root is reached: the calls a connection answers (`Link`), and its two kinds.

- `SFTPLink`: an SFTP session (`tail.sftp`) over OpenSSH's `ssh` (`tail.openssh`), for
  `sftp://` roots: the walk, stat and ranged reads, pipelined.
- `FsspecLink`: an fsspec filesystem: s3fs for `s3://` roots, and sshfs (asyncssh) for
  `sftp://` roots when `GENLEDGER_SSH_TRANSPORT=asyncssh` chooses it.

Nothing here turns a failure into words: `tail.remote` does, for both kinds.
"""

from __future__ import annotations

import os
import posixpath
from datetime import datetime
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from genledger.config import ENV_SSH_CONFIG, ENV_SSH_KEY
from genledger.config import ENV_SSH_KNOWN_HOSTS as ENV_KNOWN_HOSTS
from genledger.tail.roots import FileInfo

STREAM_BLOCK = 4 << 20


class Stat(NamedTuple):
    """What a path is on a remote root."""

    is_dir: bool
    size: int
    mtime_ns: int


class Ranged(Protocol):
    """An open remote file: ranged reads."""

    def read(self, offset: int, length: int) -> bytes:
        """The bytes at [offset, offset+length), fewer where the file ends first."""
        ...

    def close(self) -> None:
        """Release it."""
        ...


class Link(Protocol):
    """This process's connection to a remote root (one per transport)."""

    def info(self, path: str) -> Stat:
        """What `path` is; FileNotFoundError when it is not there."""
        ...

    def files(self, base: str) -> list[FileInfo]:
        """Every regular file under `base` (paths relative to it), hidden folders not walked."""
        ...

    def open(self, path: str) -> Ranged:
        """`path` for ranged reads."""
        ...

    def stream(self, path: str) -> IO[bytes] | None:
        """`path` for one sequential read, or None: read it through `open`."""
        ...

    def close(self) -> None:
        """End the connection."""
        ...


class SFTPLink:
    """An sftp:// root through OpenSSH's `ssh` and our SFTP client."""

    def __init__(self, connection: Any) -> None:  # tail.openssh.SSHConnection (loaded to connect)
        self.connection = connection
        self.sftp = connection.sftp

    def info(self, path: str) -> Stat:
        found = self.sftp.stat(path)
        return Stat(found.is_dir, found.size, found.mtime * 1_000_000_000)

    def files(self, base: str) -> list[FileInfo]:
        """Breadth first, each level's folders listed in one pipelined round; links are
        followed (a folder reached twice is walked once), as on a local root."""
        found: list[FileInfo] = []
        top = self.sftp.realpath(base)
        seen, level = {top}, [("", top)]
        while level:
            listings = self.sftp.listdirs([_join(base, rel) for rel, _ in level])
            deeper: list[tuple[str, str]] = []
            links: list[tuple[str, str]] = []
            for (rel, real), listing in zip(level, listings, strict=True):
                if isinstance(listing, OSError):
                    if not rel:
                        raise listing
                    continue  # an unlistable subfolder holds nothing we can read (as local)
                for name, attrs in listing:
                    child = f"{rel}/{name}" if rel else name
                    if attrs.is_link:
                        links.append((child, name))
                    elif attrs.is_dir:
                        if not name.startswith(".") and f"{real}/{name}" not in seen:
                            seen.add(f"{real}/{name}")
                            deeper.append((child, f"{real}/{name}"))
                    elif attrs.is_file:
                        found.append(FileInfo(child, attrs.size, attrs.mtime * 1_000_000_000))
            deeper += self._links(base, links, found, seen)
            level = deeper
        return found

    def _links(
        self, base: str, links: list[tuple[str, str]], found: list[FileInfo], seen: set[str]
    ) -> list[tuple[str, str]]:
        """Follow links: files join `found`; folders not seen yet are returned to walk."""
        folders = []
        targets = self.sftp.stat_many([_join(base, child) for child, _ in links])
        for (child, name), attrs in zip(links, targets, strict=True):
            if isinstance(attrs, OSError):
                continue  # dangling
            if attrs.is_file:
                found.append(FileInfo(child, attrs.size, attrs.mtime * 1_000_000_000))
            elif attrs.is_dir and not name.startswith("."):
                real = self.sftp.realpath(_join(base, child))
                if real not in seen:
                    seen.add(real)
                    folders.append((child, real))
        return folders

    def open(self, path: str) -> Ranged:
        return _SFTPFile(self.sftp, self.sftp.open(path))

    def stream(self, path: str) -> IO[bytes] | None:
        return None

    def close(self) -> None:
        self.connection.close()


def _join(base: str, rel: str) -> str:
    return posixpath.join(base, rel) if rel else base


class _SFTPFile:
    """An open SFTP handle."""

    def __init__(self, sftp: Any, handle: bytes) -> None:
        self.sftp, self.handle = sftp, handle

    def read(self, offset: int, length: int) -> bytes:
        data: bytes = self.sftp.read(self.handle, offset, length)
        return data

    def close(self) -> None:
        self.sftp.close_handle(self.handle)


class FsspecLink:
    """A root through an fsspec filesystem: S3 (s3fs), or SFTP through asyncssh (sshfs)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        self.s3 = type(fs).__name__ == "S3FileSystem"

    def info(self, path: str) -> Stat:
        found = self.fs.info(path)
        return Stat(found.get("type") == "directory", int(found.get("size") or 0), _mtime_ns(found))

    def files(self, base: str) -> list[FileInfo]:
        files = []
        prefix = base.rstrip("/") + "/"
        for path, info in self.fs.find(base, detail=True).items():
            rel = path[len(prefix) :] if path.startswith(prefix) else path.lstrip("/")
            if info.get("type") != "file" or any(p.startswith(".") for p in rel.split("/")[:-1]):
                continue  # hidden folders are not walked, as on a local root
            files.append(FileInfo(rel, int(info.get("size") or 0), _mtime_ns(info)))
        return files

    def open(self, path: str) -> Ranged:
        return _FsspecFile(self.fs, path, self.s3)

    def stream(self, path: str) -> IO[bytes] | None:
        if self.s3:
            return self.fs.open(path, "rb", block_size=STREAM_BLOCK, cache_type="readahead")  # type: ignore[no-any-return]
        return self.fs.open(path, "rb")  # type: ignore[no-any-return]

    def close(self) -> None:
        pass  # fsspec keeps its own sessions; a dropped filesystem closes with them


class _FsspecFile:
    """An fsspec file for ranged reads: S3 ranged GETs, or asyncssh's pipelined reads."""

    def __init__(self, fs: Any, path: str, s3: bool) -> None:
        self.fs, self.path = fs, path
        self.file = None if s3 else fs.open(path, "rb")

    def read(self, offset: int, length: int) -> bytes:
        if self.file is None:
            return bytes(self.fs.cat_file(self.path, start=offset, end=offset + length))
        return bytes(self.file.read(length, offset))

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _mtime_ns(info: dict[str, Any]) -> int:
    value = info.get("mtime") or info.get("LastModified") or info.get("last_modified")
    if isinstance(value, datetime):
        return int(value.timestamp() * 1e9)
    if isinstance(value, int | float):
        return int(value * 1e9)
    return 0


# The asyncssh fallback. AES-GCM runs in OpenSSL with the CPU's AES instructions: 1.5x
# asyncssh's default chacha20-poly1305 for a plain SFTP read (docs/performance.md).
CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)


def asyncssh_fs(host: str, user: str | None, port: int | None, timeout: int) -> Any:
    """sshfs's filesystem of a host through asyncssh (the fallback transport)."""
    from sshfs import SSHFileSystem

    # asyncssh's connect and login timeouts each bound the TCP connect, SSH handshake and
    # login together; `timeout` bounds sshfs's whole connect call.
    options = {**ssh_options(user, port, timeout), "timeout": timeout + 2}
    fs = SSHFileSystem(host, skip_instance_cache=True, **options)
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


def ssh_options(user: str | None, port: int | None, timeout: int) -> dict[str, Any]:
    """The asyncssh connection options of an sftp:// root (settings from the environment)."""
    import asyncssh

    options: dict[str, Any] = {
        "known_hosts": _known_hosts(asyncssh),
        "connect_timeout": timeout,
        "login_timeout": timeout,
        "encryption_algs": list(CIPHERS),
        "compression_algs": ["none"],  # JSONL would compress, but zlib costs more CPU than it saves
    }
    config = os.environ.get(ENV_SSH_CONFIG, "").strip()
    if config:  # else asyncssh reads ~/.ssh/config itself (its own subset of ssh_config)
        options["config"] = [os.path.expanduser(config)]
    key = os.environ.get(ENV_SSH_KEY, "").strip()
    if key:
        options["client_keys"] = [os.path.expanduser(key)]
    if user:
        options["username"] = user
    if port:
        options["port"] = port
    return options


def _known_hosts(asyncssh: Any) -> Any:
    """The trusted host keys: `GENLEDGER_SSH_KNOWN_HOSTS`, else ~/.ssh/known_hosts; none at all
    means every host is unknown (refused), never "accept anything"."""
    path = os.environ.get(ENV_KNOWN_HOSTS, "").strip() or str(Path.home() / ".ssh/known_hosts")
    path = os.path.expanduser(path)
    if os.path.isfile(path):
        return path
    return asyncssh.import_known_hosts("")


def s3_fs() -> Any:
    """s3fs's filesystem, with the standard AWS variables."""
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
