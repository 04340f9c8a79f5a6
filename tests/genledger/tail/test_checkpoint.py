"""Checkpoints and fingerprints: when a refresh may resume, and when it must start over."""

from __future__ import annotations

import os
from pathlib import Path

from genledger.tail.checkpoint import START, Checkpoint, resume_decision
from genledger.tail.fingerprint import TAIL_WINDOW, Fingerprint, checksum, read_at
from genledger.tail.reader import FileReader
from genledger.tail.roots import LocalHandle


def checkpoint_of(path: Path, cp: Checkpoint | None = None) -> Checkpoint:
    with FileReader(path, cp) as reader:
        for _ in reader.lines():
            pass
        return reader.result().checkpoint


def decide(path: Path, cp: Checkpoint) -> tuple[int, str]:
    handle = LocalHandle(path)
    try:
        return resume_decision(cp, handle)
    finally:
        handle.close()


def test_checkpoint_round_trips_through_its_dict() -> None:
    seen = Fingerprint(inode=7, head_len=4, head_sum="ab")
    cp = Checkpoint(offset=9, lines=2, file=seen, tail_sum="cd")
    assert Checkpoint.from_dict(cp.to_dict()) == cp
    assert Checkpoint.from_dict({}) == START


def test_the_fingerprint_is_a_checksum_of_the_first_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"head line\nrest\n")
    cp = checkpoint_of(path)
    assert cp.file.head_len == len(b"head line\n")
    assert cp.file.head_sum == checksum(b"head line\n")


def test_an_unchanged_file_resumes_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a\nb\n")
    cp = checkpoint_of(path)
    assert decide(path, cp) == (4, "unchanged")


def test_a_grown_file_resumes_as_appended(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a\nb\n")
    cp = checkpoint_of(path)
    with path.open("ab") as handle:
        handle.write(b"c\n")
    assert decide(path, cp) == (4, "appended")


def test_a_changed_byte_just_before_the_checkpoint_forces_a_reread(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"head\n" + b"x" * 100 + b"\n" + b"y\n")
    cp = checkpoint_of(path)
    with path.open("r+b") as handle:
        handle.seek(50)  # inside the 100-byte line, not the last one: still in the window
        handle.write(b"Z")
    assert decide(path, cp) == (0, "rewritten (bytes before the checkpoint changed)")


def test_the_tail_window_is_bounded_by_tail_window_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"h\n" + b"x" * (3 * TAIL_WINDOW) + b"\n")
    cp = checkpoint_of(path)
    assert cp.offset - cp.tail_start == TAIL_WINDOW
    assert cp.tail_sum == checksum(read_at(os.open(path, os.O_RDONLY), cp.tail_start, TAIL_WINDOW))


def test_a_checkpoint_at_zero_always_starts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"partial")
    assert decide(path, checkpoint_of(path))[0] == 0


def test_read_at_returns_fewer_bytes_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_at(fd, 1, 10) == b"bc"
        assert read_at(fd, 5, 10) == b""
    finally:
        os.close(fd)
