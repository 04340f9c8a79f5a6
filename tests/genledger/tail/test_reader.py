"""FileReader, one test per fault a tailer must survive (after Vector's file source tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from genledger.tail.checkpoint import Checkpoint
from genledger.tail.lines import BOM
from genledger.tail.reader import FileReader, FileUnreadable, ReadResult


def read(
    path: Path, cp: Checkpoint | None = None, chunk: int = 0
) -> tuple[list[bytes], ReadResult]:
    """Contents of the complete lines read from `cp`, and the read's result."""
    with FileReader(path, cp, chunk_size=chunk) as reader:
        got = [line.content for line in reader.lines()]
        return got, reader.result()


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_append_reads_only_the_new_lines(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    first, r1 = read(path)
    append(path, b"c\nd\n")
    second, r2 = read(path, r1.checkpoint)
    assert (first, second) == ([b"a", b"b"], [b"c", b"d"])
    assert not r2.restarted
    assert (r2.checkpoint.offset, r2.checkpoint.lines) == (8, 4)


def test_partial_line_is_pending_and_counts_once_completed(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":')
    got, r1 = read(path)
    assert got == [b'{"a":1}']
    assert r1.pending_bytes == len(b'{"b":')
    assert r1.checkpoint.offset == 8
    again, r2 = read(path, r1.checkpoint)
    assert again == [] and r2.pending_bytes == r1.pending_bytes
    append(path, b"2}\n")
    done, r3 = read(path, r2.checkpoint)
    assert done == [b'{"b":2}'] and r3.pending_bytes == 0


def test_a_partial_first_line_leaves_the_checkpoint_at_zero(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a"')
    got, r1 = read(path)
    assert got == [] and r1.checkpoint.offset == 0 and r1.checkpoint.file.head_sum is None
    append(path, b":1}\n")
    assert read(path, r1.checkpoint)[0] == [b'{"a":1}']


def test_truncation_restarts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"aaaa\nbbbb\ncccc\n")
    _, r1 = read(path)
    os.truncate(path, 5)
    got, r2 = read(path, r1.checkpoint)
    assert got == [b"aaaa"]
    assert r2.restarted and r2.reason == "truncated"


def test_truncation_of_only_the_pending_tail_resumes(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"aaaa\nbbbb")
    _, r1 = read(path)
    os.truncate(path, 7)
    append(path, b"x\n")
    got, r2 = read(path, r1.checkpoint)
    assert got == [b"bbx"] and not r2.restarted


def test_truncate_and_rewrite_to_the_same_length_keeping_head_and_tail_is_noticed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"head\nold1\nold2\n")
    _, r1 = read(path)
    os.truncate(path, 5)
    append(path, b"NEW1\nold2\n")  # same size, same first and last line
    got, r2 = read(path, r1.checkpoint)
    assert r2.restarted
    assert got == [b"head", b"NEW1", b"old2"]


def test_atomic_replacement_with_os_replace_restarts(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    _, r1 = read(path)
    tmp = tmp_path / "f.tmp"
    tmp.write_bytes(b"a\nb\nc\n")  # same head, but a new file
    os.replace(tmp, path)
    got, r2 = read(path, r1.checkpoint)
    assert got == [b"a", b"b", b"c"]
    assert r2.restarted and r2.reason == "replaced (new inode)"


def test_in_place_rewrite_with_a_changed_first_line_restarts(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"first\nsecond\n")
    _, r1 = read(path)
    with path.open("r+b") as handle:
        handle.write(b"FIRST\nsecond\nthird\n")
    got, r2 = read(path, r1.checkpoint)
    assert got == [b"FIRST", b"second", b"third"]
    assert r2.restarted and r2.reason == "replaced (first line changed)"


def test_crlf_lines_are_read_without_their_carriage_return(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a":1}\r\n{"b":2}\r')
    got, r1 = read(path)
    assert got == [b'{"a":1}'] and r1.pending_bytes == len(b'{"b":2}\r')
    append(path, b"\n")
    assert read(path, r1.checkpoint)[0] == [b'{"b":2}']


def test_bom_at_offset_zero_is_stripped(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(BOM + b'{"a":1}\n')
    got, _ = read(path)
    assert got == [b'{"a":1}']


def test_unicode_separators_in_strings_do_not_split_records(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    body = '{"t":"x\u2028y\u2029z\u0085w\x0cv"}'.encode()
    path.write_bytes(body + b"\n" + body + b"\n")
    got, r = read(path)
    assert got == [body, body] and r.checkpoint.lines == 2


def test_a_huge_line_is_read_whole_across_small_chunks(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    huge = b'{"t":"' + b"x" * (10 << 20) + b'"}'
    path.write_bytes(b"{}\n" + huge + b"\n{}\n")
    got, r = read(path, chunk=1 << 20)
    assert [len(x) for x in got] == [2, len(huge), 2]
    assert r.checkpoint.offset == path.stat().st_size


def test_empty_file_reads_nothing_and_checkpoints_zero(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"")
    got, r = read(path)
    assert got == [] and r.pending_bytes == 0 and r.checkpoint.offset == 0
    assert read(path, r.checkpoint)[0] == []


def test_blank_lines_are_yielded_and_numbered(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\n\n{}\n\r\n")
    got, r = read(path)
    assert got == [b"", b"", b"{}", b""] and r.checkpoint.lines == 4


def test_vanished_file_is_reported_not_raised_as_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(FileUnreadable, match="vanished"):
        read(tmp_path / "gone.jsonl")


def test_a_directory_in_place_of_a_file_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").mkdir()
    with pytest.raises(FileUnreadable, match="directory"):
        read(tmp_path / "d.jsonl")


def test_restart_resumes_from_a_checkpoint_loaded_from_its_dict(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    _, r1 = read(path)
    restored = Checkpoint.from_dict(r1.checkpoint.to_dict() | {"unknown_future_key": 1})
    append(path, b"c\n")
    got, r2 = read(path, restored)
    assert got == [b"c"] and r2.reason == "appended"


def test_no_duplicates_when_the_same_checkpoint_is_reused_after_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\n")
    _, r1 = read(path)
    append(path, b"b\n")
    crashed, _ = read(path, r1.checkpoint)  # its checkpoint was never committed
    retried, r3 = read(path, r1.checkpoint)
    assert crashed == retried == [b"b"]
    assert read(path, r3.checkpoint)[0] == []


def test_lines_written_after_open_wait_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\n")
    with FileReader(path) as reader:
        append(path, b"b\n")
        got = [x.content for x in reader.lines()]
        cp = reader.result().checkpoint
    assert got == [b"a"]
    assert read(path, cp)[0] == [b"b"]


def test_result_before_reading_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\n")
    with FileReader(path) as reader, pytest.raises(RuntimeError):
        reader.result()
