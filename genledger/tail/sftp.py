"""An SFTP (version 3) client over a pair of pipes: the protocol of OpenSSH's `sftp-server`.

OpenSSH's own `ssh` carries the bytes (`genledger.tail.openssh` starts it); this module frames
requests and replies, nothing else. It is written here rather than taken from a library
because the libraries measured cannot keep up with `ssh` (docs/performance.md, "Remote
reads over SFTP"): paramiko's client and asyncssh's, each run over the same pipes, spend
1.5 CPU s or more of Python per 370 MB, where this one spends ~0.4.

Reads are ranged and pipelined: one `read` keeps up to `WINDOW` requests of the server's
largest read size in flight and lands each reply straight in the result's buffer. Listing
and stat calls of many paths are pipelined the same way. Every wait on the server is bounded
(`idle_timeout`); every failure is an exception: an `OSError` for a path the server refused
(`FileNotFoundError`, `PermissionError`), `ConnectionLost` when the pipe ends, `TimeoutError`
when the server stays silent, `ProtocolError` for a reply that makes no sense. After any
exception but a refused path the client is closed (requests may still be in flight).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Packet types (draft-ietf-secsh-filexfer-02, the version OpenSSH speaks)
INIT, VERSION, OPEN, CLOSE, READ = 1, 2, 3, 4, 5
OPENDIR, READDIR, REALPATH, STAT = 11, 12, 16, 17
STATUS, HANDLE, DATA, NAME, ATTRS = 101, 102, 103, 104, 105
EXTENDED, EXTENDED_REPLY = 200, 201
# Status codes
OK, EOF, NO_SUCH_FILE, PERMISSION_DENIED = 0, 1, 2, 3
# Attribute flags
HAS_SIZE, HAS_UIDGID, HAS_PERMISSIONS, HAS_TIMES, HAS_EXTENDED = 1, 2, 4, 8, 0x80000000
OPEN_READ = 1

SAFE_READ = 32768  # the read size every server takes (the draft's minimum packet size)
MAX_READ = 255 * 1024  # OpenSSH's `limits@openssh.com` max read: fewer replies to frame
WINDOW = 64  # requests in flight at most (16 MB of reads): covers a WAN's delay x bandwidth
MAX_PACKET = 1 << 20  # a reply longer than this is not one we asked for
KEEP_BUFFER = (
    16 << 20
)  # reads up to this size reuse one buffer (8 MB ones: 0.2 s less CPU a 400 MB)
STAGE = 1 << 20  # bytes taken from the pipe at most at once (a Linux pipe holds 1 MB at most)
HEADER = struct.Struct(">IBII")  # length, type, id, the first uint32 of the body


class ConnectionLost(ConnectionError):
    """The pipe to the server ended (the transport said why, where it could)."""


class ProtocolError(Exception):
    """A reply that is not SFTP version 3 as we asked for it."""


@dataclass(frozen=True, slots=True)
class Attrs:
    """What the server says about a path (mtime in whole seconds: SFTP v3 has no more)."""

    size: int
    mode: int
    mtime: int

    @property
    def is_dir(self) -> bool:
        """A directory."""
        return stat.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        """A regular file."""
        return stat.S_ISREG(self.mode)

    @property
    def is_link(self) -> bool:
        """A symbolic link (only a listing says so; `stat` follows links)."""
        return stat.S_ISLNK(self.mode)


Entry = tuple[str, Attrs]  # a name in a folder and what it is (links not followed)


def encode(path: str) -> bytes:
    """A path as the server gets it (names that were not UTF-8 go back as they came)."""
    return path.encode("utf-8", "surrogateescape")


def decode(name: bytes) -> str:
    """A name as the server sent it, undecodable bytes escaped as the OS does."""
    return name.decode("utf-8", "surrogateescape")


def string(data: bytes) -> bytes:
    """An SFTP string: a uint32 length, then the bytes."""
    return struct.pack(">I", len(data)) + data


class Cursor:
    """Reads the fields of one reply's body."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def u32(self) -> int:
        (value,) = struct.unpack_from(">I", self.data, self.at)
        self.at += 4
        return int(value)

    def u64(self) -> int:
        (value,) = struct.unpack_from(">Q", self.data, self.at)
        self.at += 8
        return int(value)

    def string(self) -> bytes:
        size = self.u32()
        value = self.data[self.at : self.at + size]
        if len(value) != size:
            raise ProtocolError("a string runs past the end of its reply")
        self.at += size
        return value

    def attrs(self) -> Attrs:
        flags = self.u32()
        size = self.u64() if flags & HAS_SIZE else 0
        if flags & HAS_UIDGID:
            self.at += 8
        mode = self.u32() if flags & HAS_PERMISSIONS else 0
        mtime = 0
        if flags & HAS_TIMES:
            self.at += 4  # atime
            mtime = self.u32()
        if flags & HAS_EXTENDED:
            for _ in range(2 * self.u32()):
                self.string()
        return Attrs(size, mode, mtime)


class Pipe:
    """The two pipe ends to the transport, read with a bound on how long the server may be
    silent. `lost()` says why the pipe ended (the transport knows: its error output).

    Each read takes whatever the pipe holds (up to a reply's wanted bytes plus `STAGE`), so
    each system call, and so each time a reading thread takes the GIL back from a parsing
    one, brings up to a pipe's worth of replies, not one reply's header or a piece of its
    data; what is beyond the bytes wanted now is staged and cut from there."""

    def __init__(
        self,
        reading: int,
        writing: int,
        lost: Callable[[], ConnectionLost],
        idle_timeout: float,
    ) -> None:
        self.reading, self.writing, self.lost = reading, writing, lost
        self.idle_timeout = idle_timeout
        self.deadline: float | None = None  # an absolute limit, while connecting
        self.staged = memoryview(bytearray(STAGE))
        self.start = self.end = 0  # the bytes received and not yet taken
        os.set_blocking(reading, False)

    def fill(self, view: memoryview) -> None:
        """Fill `view` with the next bytes from the server."""
        got, size = 0, len(view)
        while got < size:
            if self.start == self.end:  # nothing staged: one read into `view` and beyond
                got += self._receive(view[got:])
                continue
            count = min(size - got, self.end - self.start)
            view[got : got + count] = self.staged[self.start : self.start + count]
            got += count
            self.start += count

    def _receive(self, into: memoryview) -> int:
        """Wait for bytes; take all the pipe holds, the first of them straight `into` the
        caller's view (a reply's data lands where it belongs, uncopied), the rest staged.
        Returns the bytes that went `into` the view."""
        while True:
            try:
                count = os.readv(self.reading, [into, self.staged])
            except BlockingIOError:
                self._wait()
                continue
            if count == 0:
                raise self.lost()
            direct = min(count, len(into))
            self.start, self.end = 0, count - direct
            return direct

    def _wait(self) -> None:
        timeout = self.idle_timeout
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
        if timeout <= 0 or not select.select([self.reading], [], [], timeout)[0]:
            raise TimeoutError(errno.ETIMEDOUT, "the server did not answer")

    def write(self, data: bytes) -> None:
        """Send `data` (requests are small: the pipe takes them without waiting for long)."""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.writing, view) :]
        except (BrokenPipeError, ConnectionResetError):
            raise self.lost() from None


class SFTPClient:
    """One SFTP session over `pipe`; `start` it first. Thread-safe: one call at a time."""

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.read_size = SAFE_READ
        self.closed = False
        self._greeted = False
        self._next_id = 0
        self._ignored: set[int] = set()  # replies nobody waits for (CLOSE's)
        self._header = bytearray(HEADER.size)
        self._buffer = bytearray(0)  # reads land here, kept: a fresh one faults in every page
        self._lock = threading.Lock()

    # -- starting --------------------------------------------------------------------------

    def hello(self) -> None:
        """Say hello (SFTP version 3), without waiting for the answer (`start` reads it)."""
        if not self._greeted:
            self.pipe.write(struct.pack(">IBI", 5, INIT, 3))
            self._greeted = True

    def start(self, timeout: float) -> None:
        """Say hello and learn the server's read size, within `timeout` s."""
        self.pipe.deadline = time.monotonic() + timeout
        try:
            with self._using():
                self.hello()
                extensions = self._version()
                if b"limits@openssh.com" in extensions:
                    self.read_size = self._limits()
        finally:
            self.pipe.deadline = None

    def _version(self) -> dict[bytes, bytes]:
        self.pipe.fill(memoryview(self._header)[:9])
        size, kind, version = struct.unpack_from(">IBI", self._header)
        if kind != VERSION or version != 3 or not 5 <= size <= MAX_PACKET:
            raise ProtocolError(f"not an SFTP v3 server (type {kind}, version {version})")
        body = Cursor(self._take(size - 5))
        found = {}
        while body.at < len(body.data):
            name = body.string()
            found[name] = body.string()
        return found

    def _limits(self) -> int:
        kind, body = self._ask([(EXTENDED, string(b"limits@openssh.com"))])[0]
        if kind != EXTENDED_REPLY:
            return SAFE_READ
        body.u64()  # max packet length
        max_read = body.u64()
        return min(MAX_READ, max_read) if max_read >= SAFE_READ else SAFE_READ

    # -- requests --------------------------------------------------------------------------

    def stat(self, path: str) -> Attrs:
        """What `path` is (links followed); OSError when it cannot be seen."""
        return self._attrs(self.stat_many([path])[0])

    def stat_many(self, paths: list[str]) -> list[Attrs | OSError]:
        """`stat` of each path, pipelined; a path the server refused gives its OSError."""
        with self._using():
            replies = self._ask([(STAT, string(encode(p))) for p in paths])
        return [self._attrs_or_error(r, p) for r, p in zip(replies, paths, strict=True)]

    def realpath(self, path: str) -> str:
        """The server's canonical form of `path` (links resolved)."""
        with self._using():
            kind, body = self._ask([(REALPATH, string(encode(path)))])[0]
        self._check(kind, body, path, NAME)
        if body.u32() != 1:
            raise ProtocolError("REALPATH gave other than one name")
        return decode(body.string())

    def open(self, path: str) -> bytes:
        """A handle of `path` opened for reading; OSError when refused."""
        with self._using():
            request = string(encode(path)) + struct.pack(">II", OPEN_READ, 0)
            kind, body = self._ask([(OPEN, request)])[0]
        self._check(kind, body, path, HANDLE)
        return body.string()

    def close_handle(self, handle: bytes) -> None:
        """Release a handle; its reply is not waited for (it is read with the next ones)."""
        if self.closed:
            return
        with self._using():
            request_id = self._send([(CLOSE, string(handle))])[0]
            self._ignored.add(request_id)

    def listdirs(self, paths: list[str]) -> list[list[Entry] | OSError]:
        """The entries of each folder (without `.` and `..`), pipelined across folders; a
        folder the server refused gives its OSError."""
        with self._using():
            opened = self._ask([(OPENDIR, string(encode(p))) for p in paths])
            results: list[list[Entry] | OSError] = []
            handles: dict[int, bytes] = {}
            for index, ((kind, body), path) in enumerate(zip(opened, paths, strict=True)):
                try:
                    self._check(kind, body, path, HANDLE)
                except OSError as exc:
                    results.append(exc)
                    continue
                results.append([])
                handles[index] = body.string()
            while handles:  # a READDIR to each open folder per round, until each says EOF
                order = list(handles)
                replies = self._ask([(READDIR, string(handles[i])) for i in order])
                for index, (kind, body) in zip(order, replies, strict=True):
                    if not self._entries(kind, body, paths[index], results, index):
                        self._ignored.add(self._send([(CLOSE, string(handles.pop(index)))])[0])
        return results

    def _entries(
        self, kind: int, body: Cursor, path: str, results: list[list[Entry] | OSError], at: int
    ) -> bool:
        """Add one READDIR reply's names to `results[at]`; False at the folder's end."""
        if kind == STATUS:
            code = body.u32()
            if code == EOF:
                return False
            results[at] = self._error(code, body, path)
            return False
        if kind != NAME:
            raise ProtocolError(f"READDIR answered with type {kind}")
        found = results[at]
        assert isinstance(found, list)
        for _ in range(body.u32()):
            name = body.string()
            body.string()  # the `ls -l` line
            attrs = body.attrs()
            if name not in (b".", b".."):
                found.append((decode(name), attrs))
        return True

    def read(self, handle: bytes, offset: int, length: int) -> bytes:
        """The bytes at [offset, offset+length) of an open file, fewer where it ends first."""
        if length <= 0:
            return b""
        with self._using():
            view = self._view(length)
            end = self._read_into(handle, offset, view)
            return bytes(view[:end])

    def _view(self, length: int) -> memoryview:
        """Where a read of `length` bytes lands: the kept buffer (grown as needed), or a
        fresh one for a read longer than `KEEP_BUFFER`."""
        if length > KEEP_BUFFER:
            return memoryview(bytearray(length))
        if length > len(self._buffer):
            self._buffer = bytearray(length)
        return memoryview(self._buffer)[:length]

    def _read_into(self, handle: bytes, offset: int, view: memoryview) -> int:
        """Fill `view` from `offset`, up to `WINDOW` requests in flight; the bytes filled
        before the file ended (a short reply is asked again for the rest)."""
        end, step = len(view), self.read_size
        todo = deque((at, min(step, end - at)) for at in range(0, end, step))
        flying: dict[int, tuple[int, int]] = {}
        prefix = string(handle)
        while todo or flying:
            batch: list[tuple[int, int]] = []
            while todo and len(flying) + len(batch) < WINDOW:
                at, size = todo.popleft()
                if at < end:
                    batch.append((at, size))
            if batch:
                requests = [(READ, prefix + struct.pack(">QI", offset + a, s)) for a, s in batch]
                flying.update(zip(self._send(requests), batch, strict=True))
            if not flying:
                break
            request_id, kind, first, rest = self._reply()
            if request_id not in flying:
                self._skip(request_id, kind, rest)
                continue
            at, size = flying.pop(request_id)
            if kind == DATA:
                if first > size or rest != first:
                    raise ProtocolError(f"READ of {size} bytes answered with {first}")
                self.pipe.fill(view[at : at + first])
                if 0 < first < size:
                    todo.appendleft((at + first, size - first))
                elif first == 0:
                    end = min(end, at)
            elif kind == STATUS and first == EOF:
                self._take(rest)
                end = min(end, at)
            else:
                self._check(kind, self._body(first, rest), "an open file", DATA)
        return end

    # -- the wire --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _using(self) -> Iterator[None]:
        """One call at a time. A failure while replies may still be on their way closes the
        client (a refused path is a reply, read whole, and is raised after this)."""
        with self._lock:
            if self.closed:
                raise ConnectionLost("the SFTP session was closed after an earlier failure")
            try:
                yield
            except BaseException:
                self.closed = True
                raise

    def _send(self, requests: list[tuple[int, bytes]]) -> list[int]:
        ids, packets = [], []
        for kind, body in requests:
            self._next_id = (self._next_id + 1) & 0xFFFFFFFF
            ids.append(self._next_id)
            packets.append(struct.pack(">IBI", len(body) + 5, kind, self._next_id) + body)
        self.pipe.write(b"".join(packets))
        return ids

    def _ask(self, requests: list[tuple[int, bytes]]) -> list[tuple[int, Cursor]]:
        """Send `requests` (up to `WINDOW` in flight) and return their replies in order."""
        replies: dict[int, tuple[int, Cursor]] = {}
        ids: list[int] = []
        pending = deque(requests)
        waiting: set[int] = set()
        while pending or waiting:
            batch = [pending.popleft() for _ in range(min(len(pending), WINDOW - len(waiting)))]
            if batch:
                sent = self._send(batch)
                ids += sent
                waiting.update(sent)
            request_id, kind, first, rest = self._reply()
            if request_id not in waiting:
                self._skip(request_id, kind, rest)
                continue
            waiting.discard(request_id)
            replies[request_id] = (kind, self._body(first, rest))
        return [replies[i] for i in ids]

    def _reply(self) -> tuple[int, int, int, int]:
        """The next reply's id, type, first uint32 of its body, and the bytes after that."""
        self.pipe.fill(memoryview(self._header))
        size, kind, request_id, first = HEADER.unpack(self._header)
        if not 9 <= size <= MAX_PACKET + 64:
            raise ProtocolError(f"a reply of {size} bytes")
        return request_id, kind, first, size - 9

    def _skip(self, request_id: int, kind: int, rest: int) -> None:
        """Read past a reply nobody waits for; one we never asked for breaks the session."""
        if request_id not in self._ignored:
            raise ProtocolError(f"a reply (type {kind}) to a request never sent")
        self._ignored.discard(request_id)
        self._take(rest)

    def _take(self, size: int) -> bytes:
        data = bytearray(size)
        self.pipe.fill(memoryview(data))
        return bytes(data)

    def _body(self, first: int, rest: int) -> Cursor:
        return Cursor(struct.pack(">I", first) + self._take(rest))

    # -- replies ---------------------------------------------------------------------------

    def _check(self, kind: int, body: Cursor, path: str, wanted: int) -> None:
        """Raise the server's refusal, or a ProtocolError for a reply of another type."""
        if kind == STATUS:
            code = body.u32()
            if code != OK or wanted != STATUS:
                raise self._error(code, body, path)
        elif kind != wanted:
            raise ProtocolError(f"expected reply type {wanted}, got {kind}")

    def _error(self, code: int, body: Cursor, path: str) -> OSError:
        message = decode(body.string()) if body.at < len(body.data) else ""
        kind, number = _ERRORS.get(code, (OSError, errno.EIO))
        return kind(number, message or os.strerror(number), path)

    def _attrs(self, found: Attrs | OSError) -> Attrs:
        if isinstance(found, OSError):
            raise found
        return found

    def _attrs_or_error(self, reply: tuple[int, Cursor], path: str) -> Attrs | OSError:
        kind, body = reply
        try:
            self._check(kind, body, path, ATTRS)
        except OSError as exc:
            return exc
        return body.attrs()


_ERRORS: dict[int, tuple[type[OSError], int]] = {
    EOF: (OSError, errno.ENODATA),
    NO_SUCH_FILE: (FileNotFoundError, errno.ENOENT),
    PERMISSION_DENIED: (PermissionError, errno.EACCES),
}
