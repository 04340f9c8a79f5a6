"""Files and dataset folders by identity (device, inode): one shard under three names (itself,
a symbolic link, a hard link) counts once under one name with its aliases listed, and a
symbolic link to a dataset folder is an alias of it, never a second dataset."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from genledger.config import Config
from genledger.refresh.collect import refresh
from genledger.tail.discovery import survey

from ..parse.sdk_records import openai_chat


def records(n: int, start: int = 0) -> bytes:
    """`n` chat completions (openai-python's own model), 7 completion tokens each."""
    return b"".join(
        openai_chat(f"chatcmpl-{i}", 11, 7, f"answer {i}").model_dump_json().encode() + b"\n"
        for i in range(start, start + n)
    )


def collect(root: Path, base: Path) -> dict[str, Any]:
    config = Config(data_root=root, stats_path=base / "s.json", state_dir=base / "state")
    stats = refresh(config).stats
    assert orjson.loads((base / "s.json").read_bytes()) == stats
    return stats


def test_a_shard_under_three_names_counts_once_with_its_aliases(tmp_path: Path) -> None:
    ds = tmp_path / "data/ds"
    ds.mkdir(parents=True)
    (ds / "raw_responses.jsonl").write_bytes(records(40))
    (ds / "raw_responses_link.jsonl").symlink_to("raw_responses.jsonl")
    os.link(ds / "raw_responses.jsonl", ds / "raw_responses_hard.jsonl")
    for _ in range(2):  # and the same on the next refresh
        block = collect(tmp_path / "data", tmp_path)["datasets"]["ds"]
        assert (block["n_done"], block["total_comp"]) == (40, 280)
        assert block["quality"]["duplicate_ids"] == 0 and block["quality"]["status"] == "ok"
        assert list(block["files"]) == ["raw_responses.jsonl"]
        assert block["files"]["raw_responses.jsonl"]["aliases"] == [
            "ds/raw_responses_hard.jsonl",
            "ds/raw_responses_link.jsonl",
        ]


def test_the_real_name_is_kept_however_the_names_sort(tmp_path: Path) -> None:
    ds = tmp_path / "data/ds"
    ds.mkdir(parents=True)
    (ds / "raw_responses_z.jsonl").write_bytes(records(3))
    (ds / "raw_responses_a.jsonl").symlink_to("raw_responses_z.jsonl")  # sorts first
    [found] = survey(tmp_path / "data", Config()).datasets
    assert [(f.name, f.aliases) for f in found.files] == [
        ("raw_responses_z.jsonl", ("ds/raw_responses_a.jsonl",))
    ]


def test_a_symlinked_alias_of_a_dataset_folder_steals_nothing(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "real").mkdir(parents=True)
    (root / "real/raw_responses.jsonl").write_bytes(records(40))
    (root / "a_alias").symlink_to("real", target_is_directory=True)  # walked first by name
    for _ in range(2):
        stats = collect(root, tmp_path)
        assert list(stats["datasets"]) == ["real"]
        block = stats["datasets"]["real"]
        assert (block["n_done"], block["quality"]["status"]) == (40, "ok")
        assert block["aliases"] == ["a_alias"]
        assert stats["totals"]["n_done"] == 40 and stats["totals"]["quality"]["status"] == "ok"


def test_a_dataset_folder_that_is_a_link_to_elsewhere_is_still_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/raw_responses.jsonl").write_bytes(records(5))
    (tmp_path / "data").mkdir()
    (tmp_path / "data/mounted").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    block = collect(tmp_path / "data", tmp_path)["datasets"]["mounted"]
    assert block["n_done"] == 5 and block["aliases"] == []
