"""Sealed streams: decompressed whole, in bounded pieces, their early ends and corruption told."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from genledger.tail.roots import LocalHandle
from genledger.tail.sealed import (
    Inflater,
    NotThisFormat,
    StreamTail,
    lines_of,
    mark_of,
    prefetched,
    same_file,
    settled,
)

from ..shards import gz, gzip_being_written, zst, zstd_being_written

DATA = b"".join(b'{"i": %d}\n' % i for i in range(5000))
COMPRESS = {"gzip": gz, "zstd": zst}
BEING_WRITTEN = {"gzip": gzip_being_written, "zstd": zstd_being_written}


AHEAD = [True]  # zstd decompressed in a thread ahead of the lines, or inline (busy workers)


@pytest.fixture(autouse=True, params=[True, False], ids=["zstd-ahead", "zstd-inline"])
def ahead(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every case with zstd decompressed ahead of the lines and inline."""
    AHEAD[0] = request.param
    yield
    AHEAD[0] = True


def decode(data: bytes, form: str) -> tuple[list[bytes], Inflater, StreamTail]:
    inflater, tail = Inflater(io.BytesIO(data), form), StreamTail()
    lines = [row[2] for block in lines_of(inflater, tail, AHEAD[0]) for row in block.rows()]
    return lines, inflater, tail


@pytest.mark.parametrize("form", ["gzip", "zstd"])
@pytest.mark.parametrize("members", [1, 3])
def test_every_member_or_frame_is_decoded_in_order(form: str, members: int) -> None:
    lines, inflater, tail = decode(COMPRESS[form](DATA, members), form)
    assert lines == DATA.splitlines()
    assert (inflater.complete, inflater.error, tail.lines, tail.pending) == (True, None, 5000, 0)


@pytest.mark.parametrize("form", ["gzip", "zstd"])
def test_a_stream_still_being_written_gives_its_complete_lines_and_keeps_the_rest_pending(
    form: str,
) -> None:
    lines, inflater, tail = decode(BEING_WRITTEN[form](DATA + b'{"i": par'), form)
    assert lines == DATA.splitlines()
    assert not inflater.complete and inflater.error is None
    assert tail.pending == len(b'{"i": par')
    assert inflater.reason == f"truncated {form} stream"


@pytest.mark.parametrize("form", ["gzip", "zstd"])
def test_a_cut_stream_counts_what_decodes_and_is_incomplete(form: str) -> None:
    data = COMPRESS[form](DATA)
    lines, inflater, _ = decode(data[: len(data) // 2], form)
    assert lines == DATA.splitlines()[: len(lines)]
    assert not inflater.complete


def test_a_finished_stream_without_a_final_newline_counts_its_last_line() -> None:
    lines, _, tail = decode(gz(b'{"a": 1}\n{"b": 2}'), "gzip")
    assert lines == [b'{"a": 1}', b'{"b": 2}']
    assert (tail.lines, tail.pending) == (2, 0)


@pytest.mark.parametrize("form", ["gzip", "zstd"])
def test_bytes_that_are_not_the_format_are_refused_by_name(form: str) -> None:
    with pytest.raises(NotThisFormat, match=f"not a {form} file"):
        decode(b"plain text, not compressed\n", form)


def test_corrupt_bytes_inside_a_gzip_stream_stop_the_read_with_the_reason() -> None:
    data = bytearray(gz(DATA))
    data[len(data) // 2] ^= 0xFF
    data[len(data) // 2 + 1] ^= 0xFF
    lines, inflater, _ = decode(bytes(data), "gzip")
    assert inflater.error is not None and inflater.error.startswith("corrupt gzip stream")
    assert lines == DATA.splitlines()[: len(lines)]


def test_an_empty_file_is_no_stream_yet() -> None:
    lines, inflater, tail = decode(b"", "gzip")
    assert (lines, inflater.complete, tail.lines) == ([], True, 0)


def test_trailing_zero_padding_after_the_last_member_is_accepted() -> None:
    lines, inflater, _ = decode(gz(DATA) + b"\0" * 512, "gzip")
    assert len(lines) == 5000 and inflater.complete and inflater.error is None


def test_the_fingerprint_changes_with_any_rewrite_of_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gz(DATA))
    handle = LocalHandle(path)
    before = mark_of(handle)
    handle.close()
    with path.open("r+b") as f:  # same size, same inode, a byte changed near the end
        f.seek(-3, 2)
        f.write(b"\x00\x00\x00")
    handle = LocalHandle(path)
    after = mark_of(handle)
    handle.close()
    assert not same_file(before, after)


def test_settled_means_unchanged_for_the_settle_time() -> None:
    assert settled(10 * 10**9, now=80.0, settle_seconds=60)
    assert not settled(30 * 10**9, now=80.0, settle_seconds=60)


def test_a_consumer_that_stops_early_leaves_no_thread_waiting() -> None:
    items = prefetched(iter(range(1000)), depth=2)
    assert next(items) == 0
    items.close()  # the producer notices and ends


def test_an_error_in_the_producer_is_raised_to_the_consumer() -> None:
    def broken():
        yield 1
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        list(prefetched(broken()))
