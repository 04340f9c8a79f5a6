"""Sealed files (gzip, zstd, Parquet): read whole when new or changed, never tailed
(docs/architecture.md).

A sealed file is known by its fingerprint (size, mtime, identity, a checksum of its head) and a
checksum of its end.
An unchanged fingerprint keeps the file's earlier counts; any change reads it again from the
start and its new counts replace the old ones. A compressed stream that ends early (a writer
still at work) yields the complete lines decoded so far; it becomes an error only once the
file has not changed for `settle_seconds`.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

from genledger.settings import MAX_LINE_BYTES
from genledger.tail.checkpoint import Checkpoint
from genledger.tail.fingerprint import checksum, fingerprint
from genledger.tail.lines import Block, LineSplitter, LongLine, is_blank
from genledger.tail.roots import Handle, iter_chunks

HEAD_BYTES = 4096  # bytes checksummed at the start of a sealed file
READ_BYTES = 1 << 20  # compressed bytes read at a time
OUT_BYTES = 4 << 20  # most decompressed bytes produced from one read (memory stays flat)
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class NotThisFormat(Exception):
    """The file does not start like its name says (not a gzip file, not a Parquet file)."""


def mark_of(handle: Handle) -> Checkpoint:
    """What identifies a sealed file's content without reading it all: its fingerprint (a
    checksum of its first `HEAD_BYTES`) and a checksum of its last `HEAD_BYTES` (a compressed
    stream's end changes with any change of its content)."""
    head = handle.read_at(0, HEAD_BYTES)
    tail_start = max(0, handle.size - HEAD_BYTES)
    tail = handle.read_at(tail_start, handle.size - tail_start) if tail_start else head
    seen = fingerprint(handle, HEAD_BYTES, head)
    return Checkpoint(file=seen, tail_start=tail_start, tail_sum=checksum(tail))


def same_file(old: Checkpoint, new: Checkpoint) -> bool:
    """The mark taken now matches the one the counts were made on."""
    return (old.file, old.tail_sum) == (new.file, new.tail_sum)


def settled(mtime_ns: int, now: float, settle_seconds: float, since: float = 0.0) -> bool:
    """The file has not changed for `settle_seconds`: by its mtime, or by genledger's own
    clock since it first saw the file as it is (`since`; an mtime in the future, from a
    skewed file server or a tarball, settles so too). A stream ending early is then final."""
    if now - mtime_ns / 1e9 >= settle_seconds:
        return True
    return bool(since) and now - since >= settle_seconds


class Inflater:
    """The decompressed bytes of a gzip or zstd stream (multi-member/frame), in bounded
    pieces. After iterating: `complete` (the stream ended at a member or frame end), `error`
    (corrupt data met, with the reason), `consumed` (decompressed bytes produced),
    `member_start` (where the last member or frame began, in decompressed bytes).
    `read_bytes`, `out_bytes`: compressed bytes fed, and most bytes produced, at a time (small
    ones lose little output to an error: the call that meets it returns nothing)."""

    def __init__(
        self, stream: IO[bytes], form: str, read_bytes: int = READ_BYTES, out_bytes: int = OUT_BYTES
    ) -> None:
        self.stream, self.form = stream, form
        self.read_bytes, self.out_bytes = read_bytes, out_bytes
        self.complete = True
        self.error: str | None = None
        self.consumed = 0
        self.member_start = 0

    def _member(self) -> None:
        self.member_start = self.consumed

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter_chunks(self.stream, self.read_bytes)
        first = next(chunks, b"")
        if not first:
            return  # an empty file: no stream yet, nothing to count
        magic = GZIP_MAGIC if self.form == "gzip" else ZSTD_MAGIC
        if not first.startswith(magic[: len(first)]):
            raise NotThisFormat(f"not a {self.form} file")
        decode = _gzip if self.form == "gzip" else _zstd
        pieces = decode(first, chunks, self._member, self.out_bytes)
        try:
            for piece in pieces:
                self.consumed += len(piece)
                yield piece
        except _Ended as end:
            self.complete = end.complete
        except (zlib.error, _Corrupt) as exc:
            self.error = f"corrupt {self.form} stream: {exc}"
        except Exception as exc:  # zstandard.ZstdError, without importing it eagerly
            if type(exc).__name__ != "ZstdError":
                raise
            self.error = f"corrupt {self.form} stream: {exc}"

    @property
    def reason(self) -> str:
        """Why the stream is malformed when it ended early."""
        return f"truncated {self.form} stream"


class _Ended(Exception):
    """The input ran out; `complete` says whether at a member or frame end."""

    def __init__(self, complete: bool) -> None:
        super().__init__()
        self.complete = complete


class _Corrupt(Exception):
    """Bytes after a complete member that start no new one."""


def _gzip(
    first: bytes, chunks: Iterator[bytes], member: Callable[[], None], most: int
) -> Iterator[bytes]:
    inflater = zlib.decompressobj(wbits=31)
    data: bytes | None = first
    started = True
    while data is not None:
        while data:
            if not started:
                if not data.strip(b"\0"):
                    break  # zero padding after the last member (as gzip(1) accepts)
                if not data.startswith(GZIP_MAGIC[: len(data)]):
                    raise _Corrupt("trailing bytes after the last member")
                inflater, started = zlib.decompressobj(wbits=31), True
                member()
            out = inflater.decompress(data, most)
            if out:
                yield out
            # Past a member's end zlib keeps its `unconsumed_tail` (the next member's bytes,
            # also in `unused_data`): looping on it would never end.
            while inflater.unconsumed_tail and not inflater.eof:
                out = inflater.decompress(inflater.unconsumed_tail, most)
                if out:
                    yield out
            if inflater.eof:
                data, started = inflater.unused_data, False
            else:
                data = b""
        data = next(chunks, None)
    raise _Ended(not started)


def _zstd(
    first: bytes, chunks: Iterator[bytes], member: Callable[[], None], most: int
) -> Iterator[bytes]:
    import zstandard

    decompressor = zstandard.ZstdDecompressor()
    inflater: Any = decompressor.decompressobj()
    data: bytes | None = first
    started = True
    while data is not None:
        while data:
            if not started:
                inflater, started = decompressor.decompressobj(), True
                member()
            out = inflater.decompress(data)
            if out:
                yield out
            if inflater.eof:
                data, started = inflater.unused_data, False
            else:
                data = b""
        data = next(chunks, None)
    raise _Ended(not started)


@dataclass
class StreamTail:
    """What a decompressed read left: its complete lines and the partial bytes after them."""

    lines: int = 0
    pending: int = 0


def lines_of(
    inflater: Inflater, tail: StreamTail, zstd_ahead: bool = True, limit: int = MAX_LINE_BYTES
) -> Iterator[Block]:
    """The blocks of complete lines of a decompressing stream. gzip's decompression runs ahead
    in a thread: zlib releases the GIL, so it overlaps the parsing on another core (a 311 MB
    stream: 1.49 -> 0.99 s). zstd's does only while a core would idle: python-zstandard holds
    the GIL while it decompresses, so a thread saves little wall time (1.09 -> 1.01 s) for
    0.27 s more CPU in GIL hand-offs, which busy workers pay in full (docs/performance.md).
    A line longer than `limit` is a `LongLine`, never held."""
    ahead = inflater.form == "gzip" or zstd_ahead
    pieces = prefetched(iter(inflater)) if ahead else iter(inflater)
    splitter = LineSplitter(limit=limit)
    for piece in pieces:
        yield from splitter.blocks(piece)
    if inflater.complete and inflater.error is None:
        # A sealed stream that ended whole: its last line needs no `\n` to be complete.
        yield from splitter.finish()
    tail.lines, tail.pending = splitter.line_number, splitter.pending


DAMAGED_READ_BYTES = 4 << 10  # a damaged stream is read again in small feeds...
DAMAGED_OUT_BYTES = 64 << 10  # ...and small outputs
DAMAGED_LINES_KEPT = 1 << 20  # lines of a damaged member remembered to notice a repeated one


@dataclass
class Damage:
    """Where a read of a damaged stream stopped: the first line that is not JSON in the
    damaged member (its 1-based number and offset), or None when the error came first."""

    line: int | None = None
    offset: int = 0


def before_damage(blocks: Iterator[Block], start: int, damage: Damage) -> Iterator[Block]:
    """The blocks of a damaged stream up to the first line at or after decompressed offset
    `start` (where the damaged member began) that is not JSON or repeats a line of that member
    exactly: a corrupt deflate stream is noticed only at its member's end (the CRC), and what it
    decoded until then may be garbage, even copies of earlier records (a back-reference gone
    wrong). Records after that line are never counted."""
    seen: set[int] = set()  # hashes of the damaged member's lines so far
    for block in blocks:
        if block.next_offset <= start:
            yield block
            continue
        if type(block) is LongLine:
            damage.line, damage.offset = block.number + 1, block.offset
            return
        for number, offset, content in block.rows():
            if offset < start or is_blank(content):
                continue
            key = hash(content)
            if key in seen or not _json(content):
                if offset > block.offset:
                    kept = offset - block.offset
                    yield Block(block.data[:kept], block.offset, block.number, kept)
                damage.line, damage.offset = number, offset
                return
            if len(seen) < DAMAGED_LINES_KEPT:
                seen.add(key)
        yield block


def _json(content: bytes) -> bool:
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict | list)


_DONE = object()


def prefetched(items: Iterator[Any], depth: int = 3) -> Iterator[Any]:
    """Run `items` in a background thread, up to `depth` ahead; exceptions re-raised here."""
    box: queue.Queue[Any] = queue.Queue(depth)
    stop = threading.Event()

    def put(entry: tuple[Any, BaseException | None]) -> bool:
        while not stop.is_set():  # a consumer that stopped early must not block us forever
            try:
                box.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((_DONE, None))
        except BaseException as exc:  # handed to the consumer, raised there
            put((_DONE, exc))

    worker = threading.Thread(target=produce, name="genledger-inflate", daemon=True)
    worker.start()
    try:
        while True:
            item, error = box.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        worker.join(timeout=5)
