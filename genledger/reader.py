"""Incremental reading of one growing file: new complete lines since its checkpoint."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from genledger.checkpoint import START, Checkpoint, resume_decision
from genledger.fingerprint import TAIL_WINDOW, checksum, read_at
from genledger.lines import Line, LineSplitter

CHUNK_SIZE = 8 << 20  # bounded reads keep memory flat in the file size


class FileUnreadable(Exception):
    """The file vanished or cannot be read; the message says which, without a traceback."""


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

    def __init__(self, path: Path, checkpoint: Checkpoint | None = None, chunk_size: int = 0):
        self.path = path
        self._cp = checkpoint or START
        self._chunk = chunk_size or CHUNK_SIZE
        self._fd = -1
        self._result: ReadResult | None = None

    def __enter__(self) -> FileReader:
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
            self._st = os.fstat(self._fd)
        except FileNotFoundError as exc:
            raise FileUnreadable("vanished (no such file)") from exc
        except IsADirectoryError as exc:
            raise FileUnreadable("is a directory") from exc
        except OSError as exc:
            raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc
        try:
            self.start, self.reason = resume_decision(self._cp, self._st, self._fd)
        except OSError as exc:
            self.close()
            raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the file descriptor."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def restarted(self) -> bool:
        """True when this read begins at byte 0 (a new, truncated or replaced file)."""
        return self.start == 0

    def lines(self) -> Iterator[Line]:
        """Yield complete lines in [start, size-at-open); the partial tail stays pending."""
        cp = self._cp if self.start else START
        splitter = LineSplitter(self.start, cp.lines if self.start else 0)
        head_len, head_sum = (cp.head_len, cp.head_sum) if self.start else (0, None)
        position, end = self.start, self._st.st_size
        try:
            while position < end:
                chunk = os.pread(self._fd, min(self._chunk, end - position), position)
                if not chunk:
                    break
                position += len(chunk)
                for line in splitter.feed(chunk):
                    if head_sum is None:
                        head_len = line.end
                        head_sum = checksum(read_at(self._fd, 0, head_len))
                    yield line
        except OSError as exc:
            raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc
        # The window ends at the checkpoint and spans up to TAIL_WINDOW bytes, however short
        # the last line: a truncate-and-rewrite that keeps the first line is still noticed.
        tail_start = max(0, splitter.offset - TAIL_WINDOW)
        tail = read_at(self._fd, tail_start, splitter.offset - tail_start)
        self._result = ReadResult(
            checkpoint=Checkpoint(
                offset=splitter.offset,
                lines=splitter.line_number,
                head_len=head_len,
                head_sum=head_sum,
                tail_start=tail_start,
                tail_sum=checksum(tail),
                size=position,
                mtime_ns=self._st.st_mtime_ns,
                device=self._st.st_dev,
                inode=self._st.st_ino,
            ),
            restarted=self.restarted,
            reason=self.reason,
            pending_bytes=position - splitter.offset,
            size=position,
            mtime=self._st.st_mtime,
        )

    def result(self) -> ReadResult:
        """The checkpoint and file facts after `lines()` was exhausted."""
        if self._result is None:
            raise RuntimeError("result() before lines() was exhausted")
        return self._result
