"""Settling by genledger's own clock: a file unchanged for `settle_seconds` since genledger
first saw it as it is has settled, whatever its mtime says (an mtime in the future, from a
skewed file server or a tarball, set here with os.utime)."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path
from typing import Any

from genledger.config import Config, FilePatterns
from genledger.refresh.collect import refresh

from ..parse.sdk_records import openai_chat

SETTLE = 1.0
FUTURE = 86_400 * 30  # a month ahead


def records(n: int) -> bytes:
    """`n` chat completions (openai-python's own model), 7 completion tokens each."""
    return b"".join(
        openai_chat(f"chatcmpl-{i}", 11, 7, f"answer {i}").model_dump_json().encode() + b"\n"
        for i in range(n)
    )


def collect(tmp: Path) -> dict[str, Any]:
    config = Config(
        data_root=tmp / "data",
        stats_path=tmp / "s.json",
        state_dir=tmp / "state",
        patterns=FilePatterns(settle_seconds=SETTLE),
    )
    return dict(refresh(config).stats["datasets"]["ds"])


def in_the_future(path: Path) -> None:
    ahead = time.time() + FUTURE
    os.utime(path, (ahead, ahead))


def test_an_unterminated_line_with_a_future_mtime_settles_by_our_clock(tmp_path: Path) -> None:
    path = tmp_path / "data/ds/raw_responses.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(records(10) + b'{"id": "chatcmpl-10", "choi')
    in_the_future(path)
    first = collect(tmp_path)
    assert first["n_done"] == 10 and first["quality"]["unterminated_line"] == 0  # just seen
    time.sleep(SETTLE + 0.2)
    settled = collect(tmp_path)
    assert settled["quality"]["unterminated_line"] == 1
    assert settled["quality"]["status"] == "warn"


def test_a_gzip_cut_in_half_with_a_future_mtime_becomes_an_error(tmp_path: Path) -> None:
    whole = gzip.compress(records(2000))
    path = tmp_path / "data/ds/raw_responses.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(whole[: len(whole) // 2])
    in_the_future(path)
    first = collect(tmp_path)
    counted = first["n_done"]
    assert 0 < counted < 2000 and first["quality"]["malformed_lines"] == 0  # maybe still written
    time.sleep(SETTLE + 0.2)
    settled = collect(tmp_path)
    assert settled["n_done"] == counted
    assert settled["quality"]["malformed_lines"] == 1
    [failure] = [f for f in settled["quality"]["failures"] if f["check"] == "malformed_lines"]
    assert failure["examples"][0]["reason"].startswith("truncated gzip stream")
    assert settled["quality"]["status"] == "error"


def test_a_file_still_growing_with_a_future_mtime_does_not_settle(tmp_path: Path) -> None:
    path = tmp_path / "data/ds/raw_responses.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(records(3) + b'{"id": "x')
    in_the_future(path)
    collect(tmp_path)
    time.sleep(SETTLE + 0.2)
    with path.open("ab") as fh:  # the writer is still there: it changed since we saw it
        fh.write(b'", "obj')
    in_the_future(path)
    assert collect(tmp_path)["quality"]["unterminated_line"] == 0
