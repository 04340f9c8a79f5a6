"""Dataset discovery: subfolders holding a recognised file, roles by name pattern, kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from genledger.config import Config, FilePatterns
from genledger.tail.discovery import DataRootError, discover, discover_one


def touch(path: Path, data: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_each_subfolder_with_a_recognised_file_is_a_dataset(tmp_path: Path) -> None:
    touch(tmp_path / "B2 run (retry)" / "raw_responses.jsonl")
    touch(tmp_path / "B2 run (retry)" / "raw_responses_shard01.jsonl")
    touch(tmp_path / "B2 run (retry)" / "prompts.jsonl")
    touch(tmp_path / "A1" / "tokenized_data_0.jsonl")
    touch(tmp_path / "notes" / "README.md")
    touch(tmp_path / "loose.jsonl")
    datasets = {d.name: d for d in discover(tmp_path, Config())}
    assert sorted(datasets) == ["A1", "B2 run (retry)"]
    b2 = datasets["B2 run (retry)"]
    assert [(f.name, f.role) for f in b2.files] == [
        ("prompts.jsonl", "prompts"),
        ("raw_responses.jsonl", "responses"),
        ("raw_responses_shard01.jsonl", "responses"),
    ]
    assert (b2.kind, datasets["A1"].kind) == ("inference", "pretokenized")


def test_configured_patterns_and_expected_totals_apply(tmp_path: Path) -> None:
    touch(tmp_path / "ds" / "out-001.jsonl")
    config = Config(patterns=FilePatterns(responses=("out-*.jsonl",)), n_prompts={"ds": 12})
    [dataset] = discover(tmp_path, config)
    assert [f.role for f in dataset.files] == ["responses"]
    assert dataset.n_prompts_config == 12


def test_a_missing_data_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataRootError, match=str(tmp_path / "nope")):
        discover(tmp_path / "nope", Config())


def test_a_file_as_data_root_is_a_clear_error(tmp_path: Path) -> None:
    touch(tmp_path / "f")
    with pytest.raises(DataRootError, match="not a directory"):
        discover(tmp_path / "f", Config())


def test_one_dataset_is_found_as_discover_finds_it_or_not_at_all(tmp_path: Path) -> None:
    touch(tmp_path / "B2 run" / "raw_responses.jsonl")
    touch(tmp_path / "B2 run" / "prompts.jsonl")
    touch(tmp_path / "notes" / "README.md")
    (everything,) = discover(tmp_path, Config())
    assert discover_one(tmp_path, "B2 run", Config()) == everything
    assert discover_one(tmp_path, "notes", Config()) is None
    assert discover_one(tmp_path, "gone", Config()) is None
