"""Split a byte stream into complete lines with the tailers' semantics (DESIGN §4).

`\\n` is the only line end (raw U+2028, U+0085 or form feeds inside JSON strings are not),
a trailing `\\r` is stripped, a UTF-8 BOM at file offset 0 is stripped, and bytes after the
last `\\n` are pending: never yielded until their `\\n` arrives.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line: 1-based number, byte offset of its start, content without `\\n`."""

    number: int
    offset: int
    content: bytes
    end: int  # offset just past its `\\n`


class LineSplitter:
    """Feed chunks in file order; get back complete lines. Keeps the partial tail."""

    def __init__(self, offset: int = 0, line_number: int = 0) -> None:
        self.offset = offset  # file offset just after the last complete line
        self.line_number = line_number  # complete lines seen so far (blank ones too)
        self._tail = b""

    @property
    def pending(self) -> int:
        """Bytes after the last complete line."""
        return len(self._tail)

    def feed(self, chunk: bytes) -> Iterator[Line]:
        """Yield the complete lines that `chunk` finishes, blank ones included."""
        data = self._tail + chunk if self._tail else chunk
        last = data.rfind(b"\n")
        if last < 0:
            self._tail = data
            return
        self._tail = data[last + 1 :]
        offset = self.offset
        number = self.line_number
        for raw in data[:last].split(b"\n"):
            number += 1
            content = raw[:-1] if raw.endswith(b"\r") else raw
            if offset == 0 and content.startswith(BOM):
                content = content[len(BOM) :]
            stop = offset + len(raw) + 1
            yield Line(number, offset, content, stop)
            offset = stop
        self.offset = offset
        self.line_number = number


def is_blank(content: bytes) -> bool:
    """A blank line holds nothing but ASCII whitespace."""
    return not content.strip()
