"""The prompts join: a prompt line that is no JSON is named by file and line, a repeated
prompt id is one prompt and a warning, and `genledger missing` writes the healthy datasets
and names the one it skips, its names escaped for the terminal."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.cli import main
from genledger.config import Config
from genledger.refresh.collect import refresh
from genledger.synth.records import line, openai_batch


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def prompts(*ids: str) -> bytes:
    return b"".join(line({"custom_id": rid, "body": {"q": rid}}) for rid in ids)


def answers(*ids: str) -> bytes:
    rng = random.Random(3)
    return b"".join(line(openai_batch(rid, 5, 9, rng)) for rid in ids)


def collect(root: Path, base: Path) -> dict[str, Any]:
    config = Config(data_root=root, stats_path=base / "s.json", state_dir=base / "state")
    return refresh(config).stats


def failure(block: dict[str, Any], check: str) -> dict[str, Any]:
    return next(f for f in block["quality"]["failures"] if f["check"] == check)


def test_repeated_prompt_ids_are_one_prompt_each_and_a_warning(tmp_path: Path) -> None:
    # The case: p0, p1, p1, p2 with responses to p0 and p1.
    write(tmp_path / "data/ds/prompts.jsonl", prompts("p0", "p1", "p1", "p2"))
    write(tmp_path / "data/ds/raw_responses.jsonl", answers("p0", "p1"))
    block = collect(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert block["prompts"] == {
        "n_prompts": 3, "answered": 2, "failed": 0, "missing": 1, "ids_missing": ["p2"],
        "key": "custom_id",
    }  # fmt: skip
    assert block["quality"]["duplicate_prompt_ids"] == 1
    found = failure(block, "duplicate_prompt_ids")
    assert (found["severity"], found["examples"][0]["file"]) == ("warn", "prompts.jsonl")
    assert found["examples"][0]["line"] == 3 and "'p1'" in found["examples"][0]["reason"]
    assert block["quality"]["status"] == "warn"


def test_repeated_prompts_across_two_prompts_files_are_found(tmp_path: Path) -> None:
    write(tmp_path / "data/ds/prompts_a.jsonl", prompts("p0", "p1"))
    write(tmp_path / "data/ds/prompts_b.jsonl", prompts("p1", "p2"))
    write(tmp_path / "data/ds/raw_responses.jsonl", answers("p0", "p1", "p2"))
    block = collect(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert (block["prompts"]["n_prompts"], block["prompts"]["answered"]) == (3, 3)
    example = failure(block, "duplicate_prompt_ids")["examples"][0]
    assert (example["file"], example["line"]) == ("prompts_b.jsonl", 1)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ids=st.lists(st.sampled_from([f"p{i}" for i in range(8)]), min_size=1, max_size=20),
    done=st.sets(st.sampled_from([f"p{i}" for i in range(8)])),
)
def test_the_join_counts_distinct_prompts(
    tmp_path_factory: pytest.TempPathFactory, ids: list[str], done: set[str]
) -> None:
    base = tmp_path_factory.mktemp("join")
    write(base / "data/ds/prompts.jsonl", prompts(*ids))
    write(base / "data/ds/raw_responses.jsonl", answers(*sorted(done)) or answers("other"))
    block = collect(base / "data", base)["datasets"]["ds"]
    distinct = set(ids)
    if not done & distinct:  # no prompt id among the response ids: no join, never a guess
        assert block["prompts"] is None
        return
    assert block["prompts"]["n_prompts"] == len(distinct)
    assert block["prompts"]["answered"] == len(distinct & done)
    assert block["prompts"]["missing"] == len(distinct - done)
    assert block["quality"]["duplicate_prompt_ids"] == len(ids) - len(distinct)


def test_a_prompt_line_that_is_no_json_is_named_and_counted(tmp_path: Path) -> None:
    good = prompts("p0", "p1")
    write(tmp_path / "data/ds/prompts.jsonl", good + b'{"custom_id": "p2", "bo\n' + prompts("p3"))
    write(tmp_path / "data/ds/raw_responses.jsonl", answers("p0"))
    block = collect(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert block["prompts"] is None
    assert "prompts.jsonl:3" in block["prompts_unjoinable"]
    assert block["quality"]["malformed_prompts"] == 1
    example = failure(block, "malformed_prompts")["examples"][0]
    assert (example["file"], example["line"]) == ("prompts.jsonl", 3)
    assert block["quality"]["status"] == "error"
    assert block["n_prompts"] == 4  # the line is still a prompt expected


def test_a_malformed_prompt_line_in_a_gzip_prompts_file_is_named(tmp_path: Path) -> None:
    import gzip

    data = prompts("p0") + b"not json\n" + prompts("p1")
    write(tmp_path / "data/ds/prompts.jsonl.gz", gzip.compress(data))
    write(tmp_path / "data/ds/raw_responses.jsonl", answers("p0"))
    block = collect(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert "prompts.jsonl.gz:2" in block["prompts_unjoinable"]
    assert block["quality"]["malformed_prompts"] == 1


def test_missing_writes_the_healthy_datasets_and_names_the_malformed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "data"
    write(root / "bad/prompts.jsonl", prompts("p0") + b"{oops\n" + prompts("p1"))
    write(root / "bad/raw_responses.jsonl", answers("p0"))
    write(root / "good/prompts.jsonl", prompts("q0", "q1", "q2"))
    write(root / "good/raw_responses.jsonl", answers("q1"))
    out = tmp_path / "again.jsonl"
    code = main(["missing", str(root), "-o", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 1  # written, but not everything
    assert sorted(orjson.loads(x)["custom_id"] for x in out.read_bytes().splitlines()) == [
        "q0",
        "q2",
    ]
    assert "bad: skipped" in err and "prompts.jsonl:2" in err and "good" not in err
    # asked for by name, the one dataset that cannot be joined is an error, nothing written
    assert main(["missing", str(root), "bad", "-o", str(tmp_path / "b.jsonl")]) == 2
    assert "prompts.jsonl:2" in capsys.readouterr().err
    assert not (tmp_path / "b.jsonl").exists()


def test_missing_escapes_control_characters_in_its_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "gen\x1b[2J\x1b]0;pwned\x07"
    write(tmp_path / "data" / name / "prompts.jsonl", prompts("p0", "p1"))
    write(tmp_path / "data" / name / "raw_responses.jsonl", answers("p0"))
    assert main(["missing", str(tmp_path / "data"), "-o", str(tmp_path / "o.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "gen\\x1b[2J\\x1b]0;pwned\\x07: 1 of 2 prompts to run again" in err
