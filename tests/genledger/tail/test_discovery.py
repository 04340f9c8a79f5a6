"""Dataset discovery: subfolders holding a recognised file, roles by name pattern, kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from genledger.config import Config, FilePatterns
from genledger.tail.discovery import DataRootError, discover, discover_one, survey


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


def test_files_are_found_at_any_depth_in_every_form_and_named_by_their_path(
    tmp_path: Path,
) -> None:
    touch(tmp_path / "ds" / "part-00000" / "raw_responses-00001.jsonl.gz")
    touch(tmp_path / "ds" / "part-00001" / "deeper" / "raw_responses.jsonl.zst")
    touch(tmp_path / "ds" / "raw_responses.parquet")
    touch(tmp_path / "ds" / "tokenized_data.parquet")
    touch(tmp_path / "ds" / "prompts-a.jsonl.gz")
    [dataset] = discover(tmp_path, Config())
    assert [(f.name, f.role, f.form) for f in dataset.files] == [
        ("part-00000/raw_responses-00001.jsonl.gz", "responses", "gzip"),
        ("part-00001/deeper/raw_responses.jsonl.zst", "responses", "zstd"),
        ("prompts-a.jsonl.gz", "prompts", "gzip"),
        ("raw_responses.parquet", "responses", "parquet"),
        ("tokenized_data.parquet", "tokenized", "parquet"),
    ]
    assert all(f.sealed for f in dataset.files)
    assert dataset.files[0].path == tmp_path / "ds" / "part-00000" / "raw_responses-00001.jsonl.gz"


def test_a_dataset_whose_only_file_is_nested_is_still_a_dataset(tmp_path: Path) -> None:
    touch(tmp_path / "ds" / "part-00003" / "raw_responses.jsonl")
    [dataset] = discover(tmp_path, Config())
    assert [f.key for f in dataset.files] == ["ds/part-00003/raw_responses.jsonl"]


def test_every_unrecognised_file_is_listed_with_its_dataset_or_at_the_root(
    tmp_path: Path,
) -> None:
    touch(tmp_path / "ds" / "raw_responses.jsonl")
    touch(tmp_path / "ds" / "outputs.jsonl")
    touch(tmp_path / "ds" / "part-1" / "notes.md")
    touch(tmp_path / "no_data" / "outputs.jsonl")
    touch(tmp_path / "stray.csv")
    found = survey(tmp_path, Config())
    [dataset] = found.datasets
    assert dataset.unrecognised == ("outputs.jsonl", "part-1/notes.md")
    assert found.unrecognised == ("no_data/outputs.jsonl", "stray.csv")


@pytest.mark.parametrize(
    "name",
    [
        ".raw_responses.jsonl.swp",
        "raw_responses.jsonl~",
        "x.tmp",
        "a.swp",
        "writer.lock",
        ".DS_Store",
    ],
)
def test_ignored_names_are_neither_data_nor_unrecognised(tmp_path: Path, name: str) -> None:
    touch(tmp_path / "ds" / "raw_responses.jsonl")
    touch(tmp_path / "ds" / name)
    touch(tmp_path / name)
    found = survey(tmp_path, Config())
    assert [f.name for f in found.datasets[0].files] == ["raw_responses.jsonl"]
    assert found.datasets[0].unrecognised == ()
    assert found.unrecognised == ()


def test_hidden_folders_are_not_walked(tmp_path: Path) -> None:
    touch(tmp_path / "ds" / "raw_responses.jsonl")
    touch(tmp_path / "ds" / ".git" / "config")
    touch(tmp_path / ".cache" / "raw_responses.jsonl")
    found = survey(tmp_path, Config())
    assert [d.name for d in found.datasets] == ["ds"]
    assert found.unrecognised == ()
    assert found.datasets[0].unrecognised == ()


def test_configured_ignore_globs_match_names_and_paths(tmp_path: Path) -> None:
    touch(tmp_path / "ds" / "raw_responses.jsonl")
    touch(tmp_path / "ds" / "run.log")
    touch(tmp_path / "ds" / "logs" / "x.txt")
    touch(tmp_path / "README.md")
    patterns = FilePatterns(ignore=("*.log", "ds/logs/*", "README.md"))
    found = survey(tmp_path, Config(patterns=patterns))
    assert found.datasets[0].unrecognised == ()
    assert found.unrecognised == ()


def test_a_symlink_loop_ends_the_walk(tmp_path: Path) -> None:
    touch(tmp_path / "ds" / "raw_responses.jsonl")
    (tmp_path / "ds" / "loop").symlink_to(tmp_path / "ds")
    [dataset] = discover(tmp_path, Config())
    assert [f.name for f in dataset.files] == ["raw_responses.jsonl"]


def test_one_dataset_is_found_as_discover_finds_it_or_not_at_all(tmp_path: Path) -> None:
    touch(tmp_path / "B2 run" / "raw_responses.jsonl")
    touch(tmp_path / "B2 run" / "prompts.jsonl")
    touch(tmp_path / "B2 run" / "part-1" / "raw_responses.jsonl.gz")
    touch(tmp_path / "B2 run" / "notes.md")
    touch(tmp_path / "notes" / "README.md")
    (everything,) = discover(tmp_path, Config())
    assert discover_one(tmp_path, "B2 run", Config()) == everything
    assert discover_one(tmp_path, "notes", Config()) is None
    assert discover_one(tmp_path, "gone", Config()) is None
