"""Split a byte stream into complete lines with the tailers' semantics (docs/tailing.md).

`\\n` is the only line end (raw U+2028, U+0085 or form feeds inside JSON strings are not),
a trailing `\\r` is stripped, a UTF-8 BOM at file offset 0 is stripped, and bytes after the
last `\\n` are pending: never yielded until their `\\n` arrives. A line longer than the cap
(`limit`, from `[files] max_line_bytes`) is a `LongLine`: its bytes are skipped, never held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from genledger.settings import MAX_LINE_BYTES

BOM = b"\xef\xbb\xbf"
CR = ord("\r")
# A line break followed by what `bytes.strip()` strips: where a blank line may start.
BLANK_START = re.compile(rb"\n[ \t\n\r\x0b\x0c]")


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line: 1-based number, byte offset of its start, content without `\\n`."""

    number: int
    offset: int
    content: bytes
    end: int  # offset just past its `\\n`


class Block:
    """The complete lines of one read; the hot path iterates `rows()`.

    `data` holds the bytes read from file offset `offset`; its lines are those ending at or
    before `data[end - 1]` (a `\\n`), and whatever follows is a partial line left pending.
    """

    __slots__ = ("_count", "data", "end", "number", "offset")

    def __init__(self, data: bytes, offset: int, number: int, end: int) -> None:
        self.data = data
        self.offset = offset  # file offset of data[0]
        self.number = number  # complete lines before this block
        self.end = end
        self._count = -1

    @property
    def next_number(self) -> int:
        """Complete lines up to the end of this block."""
        if self._count < 0:
            self._count = self.data.count(b"\n", 0, self.end)
        return self.number + self._count

    def walked(self, number: int) -> None:
        """Note that `number` lines end at or before the block's end: a reader that walked
        them all (`refresh.count`'s native walk) spares `next_number` a count of the read."""
        self._count = number - self.number

    @property
    def next_offset(self) -> int:
        """File offset just past this block's last `\\n`."""
        return self.offset + self.end

    def rows(
        self, start: int = 0, before: int = -1, end: int = -1
    ) -> Iterator[tuple[int, int, bytes]]:
        """(number, offset, content) of each line, with the `\\r` and BOM rules applied;
        only the lines from `data[start]` (a line's start, with `before` lines before it) up
        to `data[end]` (just past a newline) when given."""
        # memchr-backed find and one slice per line: bytes.split walks every byte in Python's
        # own loop (~14 % of a scan's instructions, measured with callgrind).
        data, find, stop = self.data, self.data.find, self.end if end < 0 else end
        number = self.number if before < 0 else before
        carriage = data.find(b"\r", start, stop) >= 0  # usually absent: then no line is looked at
        while start < stop:
            newline = find(b"\n", start, stop)
            content = data[start:newline]
            number += 1
            if carriage and content.endswith(b"\r"):
                content = content[:-1]
            if start == 0 and self.offset == 0 and content.startswith(BOM):
                content = content[len(BOM) :]
            yield number, self.offset + start, content
            start = newline + 1
        if stop == self.end:  # the lines up to the block's end are counted: keep their number
            self._count = number - self.number

    def spans(self) -> Iterator[tuple[int, int, int, int]]:
        """(number, offset, start, stop) of each line: `rows()` without copying the lines out
        (each is `data[start:stop]`, the same `\\r` and BOM rules applied)."""
        data, find, end = self.data, self.data.find, self.end
        number, start = self.number, 0
        carriage = data.find(b"\r", 0, end) >= 0
        while start < end:
            newline = find(b"\n", start, end)
            number += 1
            first, stop = start, newline
            if carriage and stop > first and data[stop - 1] == CR:
                stop -= 1
            if start == 0 and self.offset == 0 and data.startswith(BOM, 0, stop):
                first += len(BOM)
            yield number, self.offset + start, first, stop
            start = newline + 1
        self._count = number - self.number

    def non_blank(self) -> int:
        """How many of the lines are not blank (`is_blank`): counted without a loop over them
        when no line can be blank, that is, when none starts with ASCII whitespace (which takes
        an empty line too) and the block does not start a file with a BOM."""
        data = self.data
        bom = self.offset == 0 and data.startswith(BOM)
        if not data[:1].strip() or bom or BLANK_START.search(data, 0, self.end) is not None:
            return sum(not is_blank(row[2]) for row in self.rows())
        return self.next_number - self.number

    def lines(self) -> Iterator[Line]:
        """The same lines as `Line` objects."""
        previous: tuple[int, int, bytes] | None = None
        for row in self.rows():
            if previous is not None:
                yield Line(*previous, row[1])  # a line ends where the next one starts
            previous = row
        if previous is not None:
            yield Line(*previous, self.next_offset)


class LongLine(Block):
    """A complete line longer than the cap: no bytes kept, one malformed line where it starts
    (`number` lines before it, at file offset `offset`; the next line starts at `stop`)."""

    __slots__ = ("stop",)

    def __init__(self, offset: int, number: int, stop: int) -> None:
        super().__init__(b"", offset, number, 0)
        self.stop = stop
        self._count = 1

    @property
    def next_offset(self) -> int:
        """File offset just past this line's `\\n`."""
        return self.stop

    @property
    def length(self) -> int:
        """The line's bytes, its `\\n` excluded."""
        return self.stop - self.offset - 1

    def rows(
        self, start: int = 0, before: int = -1, end: int = -1
    ) -> Iterator[tuple[int, int, bytes]]:
        """No row: the line's content was skipped."""
        return iter(())

    def non_blank(self) -> int:
        """A line this long is not blank."""
        return 1

    def lines(self) -> Iterator[Line]:
        """The line, without its content."""
        yield Line(self.number + 1, self.offset, b"", self.stop)


def split_long(block: Block, limit: int) -> Iterator[Block]:
    """`block` as it is, or cut around its lines longer than `limit` (`LongLine`s). Only a
    block of more than `limit + 1` bytes can hold such a line: the common path pays one test."""
    if block.end <= limit + 1:
        yield block
        return
    data, find = block.data, block.data.find
    start, kept, number = 0, 0, block.number
    while start < block.end:
        newline = find(b"\n", start, block.end)
        if newline - start > limit:
            if kept < start:
                yield Block(data[kept:start], block.offset + kept, number, start - kept)
                number += data.count(b"\n", kept, start)
            yield LongLine(block.offset + start, number, block.offset + newline + 1)
            number, kept = number + 1, newline + 1
        start = newline + 1
    if kept < block.end:
        rest = data[kept:] if kept else data
        yield Block(rest, block.offset + kept, number, block.end - kept)


class LineSplitter:
    """Feed chunks in file order; get back complete lines. Keeps the partial tail as a list of
    pieces, joined once when its line completes (linear in the line's length, however many
    chunks it spans), and drops it once it is longer than the cap."""

    def __init__(self, offset: int = 0, line_number: int = 0, limit: int = MAX_LINE_BYTES) -> None:
        self.offset = offset  # file offset just after the last complete line
        self.line_number = line_number  # complete lines seen so far (blank ones too)
        self.limit = limit
        self._parts: list[bytes] = []  # the partial line, unless it is too long to keep
        self._pending = 0  # bytes after the last complete line
        self._skipping = False  # the partial line is longer than the cap: its bytes are dropped

    @property
    def pending(self) -> int:
        """Bytes after the last complete line."""
        return self._pending

    @property
    def tail(self) -> bytes:
        """The bytes after the last complete line (empty once they are longer than the cap)."""
        return b"".join(self._parts)

    def feed(self, chunk: bytes) -> Iterator[Line]:
        """Yield the complete lines that `chunk` finishes, blank ones included."""
        for block in self.blocks(chunk):
            yield from block.lines()

    def blocks(self, chunk: bytes) -> Iterator[Block]:
        """The blocks of complete lines that `chunk` finishes (none while no `\\n` came)."""
        first = chunk.find(b"\n")
        if first < 0:
            self._pending += len(chunk)
            if self._skipping or self._pending > self.limit:
                self._skipping, self._parts = True, []
            elif chunk:
                self._parts.append(chunk)
            return
        start = 0
        if self._skipping or self._pending + first > self.limit:
            stop = self.offset + self._pending + first + 1
            long = LongLine(self.offset, self.line_number, stop)
            self.offset, self.line_number = stop, self.line_number + 1
            yield long
            start, data = first + 1, chunk
        else:
            data = b"".join([*self._parts, chunk]) if self._parts else chunk
        last = data.rfind(b"\n")
        rest = data[last + 1 :]
        self._pending, self._skipping = len(rest), len(rest) > self.limit
        self._parts = [rest] if rest and not self._skipping else []
        if last < start:
            return
        body = data[start:] if start else data
        block = Block(body, self.offset, self.line_number, last + 1 - start)
        pieces = split_long(block, self.limit) if len(chunk) > self.limit + 1 else (block,)
        for piece in pieces:
            yield piece
            self.offset, self.line_number = piece.next_offset, piece.next_number

    def finish(self) -> Iterator[Block]:
        """The partial line as a complete last line (a sealed stream that ended whole needs
        no final `\\n`)."""
        if not self._pending:
            return
        if self._skipping:
            block: Block = LongLine(self.offset, self.line_number, self.offset + self._pending + 1)
        else:
            data = b"".join([*self._parts, b"\n"])
            block = Block(data, self.offset, self.line_number, len(data))
        self._parts, self._pending, self._skipping = [], 0, False
        yield block
        self.offset, self.line_number = block.next_offset, block.next_number


def is_blank(content: bytes) -> bool:
    """A blank line holds nothing but ASCII whitespace."""
    return not content.strip()
