"""Incremental reading of one growing file: new complete lines since its checkpoint."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass

from genledger.tail.checkpoint import START, Checkpoint, resume_decision
from genledger.tail.fingerprint import TAIL_WINDOW, Fingerprint, checksum
from genledger.tail.lines import Block, Line, LineSplitter
from genledger.tail.roots import Handle, LocalHandle, Source, open_source
from genledger.tail.sealed import prefetched

CHUNK_SIZE = 8 << 20  # bounded reads keep memory flat in the file size


class FileUnreadable(Exception):
    """The file vanished or cannot be read; the message says which, without a traceback."""


@dataclass(frozen=True, slots=True)
class Span:
    """A byte range of a file to read as is (a piece of a split read): no resume check;
    `stop` None reads to the end. Both ends must be line starts."""

    start: int
    stop: int | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What a finished read left: the new checkpoint and the file's visible state."""

    checkpoint: Checkpoint
    restarted: bool
    reason: str
    pending_bytes: int
    size: int
    mtime: float


class FileReader:
    """Read the complete lines a file gained since `checkpoint`, in bounded chunks.

    Use as a context manager; iterate `lines()` to the end, then take `result()`.
    """

    def __init__(
        self,
        path: Source,
        checkpoint: Checkpoint | None = None,
        chunk_size: int = 0,
        span: Span | None = None,
    ):
        self.path = path
        self._cp = checkpoint or START
        self._chunk = chunk_size or CHUNK_SIZE
        self._span = span
        self._handle: Handle | None = None
        self._result: ReadResult | None = None

    def __enter__(self) -> FileReader:
        try:
            self._handle = open_source(self.path)
        except FileNotFoundError as exc:
            raise FileUnreadable("vanished (no such file)") from exc
        except IsADirectoryError as exc:
            raise FileUnreadable("is a directory") from exc
        except OSError as exc:
            raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc
        if self._span is not None:  # a piece of a split read: its caller decided where
            self.start, self.reason = self._span.start, "piece"
            return self
        try:
            self.start, self.reason = resume_decision(self._cp, self._handle)
        except OSError as exc:
            self.close()
            raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the file."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def new_bytes(self) -> int:
        """Bytes between the resume point and the end of the read."""
        return self._end() - self.start

    def _end(self) -> int:
        stop = self._span.stop if self._span is not None else None
        size = self.handle.size
        return size if stop is None else min(stop, size)

    @property
    def handle(self) -> Handle:
        """The open file (inside the `with` block)."""
        assert self._handle is not None, "use FileReader as a context manager"
        return self._handle

    @property
    def restarted(self) -> bool:
        """True when this read begins at byte 0 (a new, truncated or replaced file)."""
        return self.start == 0

    def lines(self) -> Iterator[Line]:
        """Yield complete lines in [start, size-at-open); the partial tail stays pending."""
        for block in self.blocks():
            yield from block.lines()

    def blocks(self) -> Iterator[Block]:
        """Yield the complete lines in [start, size-at-open), a bounded read at a time."""
        # A piece numbers its lines from 0 and knows no head: the caller joins the pieces.
        cp = self._cp if self.start and self._span is None else START
        number = cp.lines
        head_len, head_sum = cp.file.head_len, cp.file.head_sum
        position, end, size, seen = self.start, self._end(), self._chunk, self.start
        handle = self.handle
        last_data, last_at = b"", 0  # the latest read: the closing window is often inside it
        try:
            if not isinstance(handle, LocalHandle):
                state = yield from self._ahead_blocks(handle, position, end, number, cp)
                position, number, seen, head_len, head_sum, last_data, last_at = state
            while position < end and isinstance(handle, LocalHandle):
                # Each read starts at the first incomplete line, so no tail is carried over
                # (and copied); a line longer than a read doubles the read until it fits.
                data = handle.read_some(position, min(size, end - position))
                if not data:
                    break
                seen = position + len(data)
                last = data.rfind(b"\n")
                if last < 0:
                    if seen >= end:
                        break
                    size *= 2
                    continue
                size = self._chunk
                block = Block(data, position, number, last + 1)
                last_data, last_at = data, position
                if head_sum is None and position == 0:
                    head_len, head_sum = _head(data)
                yield block
                position, number = block.next_offset, block.next_number
        except OSError as exc:
            raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc
        # The window ends at the checkpoint and spans up to TAIL_WINDOW bytes, however short
        # the last line: a truncate-and-rewrite that keeps the first line is still noticed.
        tail_start = max(0, position - TAIL_WINDOW)
        if last_data and last_at <= tail_start:  # no second read (a remote one costs bytes)
            tail = last_data[tail_start - last_at : position - last_at]
        else:
            tail = handle.read_at(tail_start, position - tail_start)
        device, inode = handle.identity or (0, 0)
        seen_file = Fingerprint(seen, handle.mtime_ns, device, inode, head_len, head_sum)
        self._result = ReadResult(
            checkpoint=Checkpoint(
                offset=position,
                lines=number,
                file=seen_file,
                tail_start=tail_start,
                tail_sum=checksum(tail),
            ),
            restarted=self.restarted,
            reason=self.reason,
            pending_bytes=seen - position,
            size=seen,
            mtime=handle.mtime_ns / 1e9,
        )

    def _ahead_blocks(
        self, handle: Handle, position: int, end: int, number: int, cp: Checkpoint
    ) -> Generator[Block, None, tuple[int, int, int, int, str | None, bytes, int]]:
        """The blocks of a remote read: contiguous ranged reads, each byte fetched once, the
        next one in flight (a thread) while this one is parsed; a partial line is carried."""
        head_len, head_sum = cp.file.head_len, cp.file.head_sum
        splitter, last_data, last_at = LineSplitter(position, number), b"", 0
        ranges = range(position, end, self._chunk)
        pieces = prefetched(handle.read_at(p, min(self._chunk, end - p)) for p in ranges)
        for piece in pieces:
            for block in splitter.blocks(piece):
                last_data, last_at = block.data, block.offset
                if head_sum is None and block.offset == 0:
                    head_len, head_sum = _head(block.data)
                yield block
        at, number = splitter.offset, splitter.line_number
        return at, number, at + splitter.pending, head_len, head_sum, last_data, last_at

    def result(self) -> ReadResult:
        """The checkpoint and file facts after `lines()` was exhausted."""
        if self._result is None:
            raise RuntimeError("result() before lines() was exhausted")
        return self._result


def _head(data: bytes) -> tuple[int, str]:
    """The length and checksum of the first line of a file's first read."""
    head_len = data.find(b"\n") + 1
    return head_len, checksum(data[:head_len])
