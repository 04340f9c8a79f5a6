"""50,000 one-record shards, read by `genledger collect` under `ulimit -n 256`: every record
counted once, a no-op refresh that changes nothing, one append still found among them, and a
state whose size per shard does not grow with the number of shards. Not timed: the seconds
are `benchmarks/many_shards.py`'s."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ..parse.sdk_records import openai_chat

SHARDS = 50_000
FILE_LIMIT = 256  # `ulimit -n 256`: a refresh must never hold many files open at once


def chat_line(i: int) -> bytes:
    """One chat completion (openai-python's own model): 11 prompt tokens, 30 + i % 50 out."""
    record = openai_chat(f"chatcmpl-{i}", 11, 30 + i % 50, f"answer {i}")
    return record.model_dump_json().encode() + b"\n"


def write_shards(root: Path, count: int) -> int:
    """`count` one-record shards, 1,000 to a folder; the completion tokens written."""
    total = 0
    for i in range(count):
        folder = root / "ds" / f"part-{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True)
        (folder / f"raw_responses_{i:05d}.jsonl").write_bytes(chat_line(i))
        total += 30 + i % 50
    return total


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


def collect(root: Path, work: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "genledger.cli", "collect", str(root)]
    cmd += ["-o", str(work / "stats.json"), "--state", str(work / "state"), "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limited, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return dict(orjson.loads((work / "stats.json").read_bytes()))


def state_bytes(work: Path) -> int:
    return sum(p.stat().st_size for p in (work / "state").rglob("*.json"))


@pytest.mark.timeout(1800)  # four collects of 50,000 files: minutes on a shared machine
def test_fifty_thousand_shards_under_ulimit_256(tmp_path: Path) -> None:
    root, work = tmp_path / "data", tmp_path / "work"
    total = write_shards(root, SHARDS)
    cold = collect(root, work)
    block = cold["datasets"]["ds"]
    assert (block["n_done"], block["total_comp"], block["total_prompt"]) == (
        SHARDS,
        total,
        11 * SHARDS,
    )
    assert len(block["files"]) == SHARDS and block["quality"]["status"] == "ok"
    per_shard = state_bytes(work) / SHARDS
    noop = collect(root, work)  # nothing changed: the same numbers, the same files
    assert noop["datasets"]["ds"]["n_done"] == SHARDS
    assert noop["datasets"]["ds"]["files"] == block["files"]
    assert noop["datasets"]["ds"]["quality"] == block["quality"]
    shard = root / "ds/part-017/raw_responses_17017.jsonl"
    with shard.open("ab") as fh:  # one append among 50,000 unchanged shards
        fh.write(chat_line(SHARDS))
    grown = collect(root, work)["datasets"]["ds"]
    assert (grown["n_done"], grown["total_comp"]) == (SHARDS + 1, total + 30 + SHARDS % 50)
    assert grown["files"]["part-017/raw_responses_17017.jsonl"]["lines"] == 2
    # the state grows with the shards, never faster: per shard as at 1/25 of them
    small_root, small_work = tmp_path / "small", tmp_path / "small_work"
    write_shards(small_root, SHARDS // 25)
    collect(small_root, small_work)
    assert per_shard <= 1.2 * state_bytes(small_work) / (SHARDS // 25)
