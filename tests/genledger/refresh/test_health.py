"""Run health end to end on real files: truncation, duplicate answers (incremental == full),
drift, unmasked and over-long samples (JSONL and Parquet), the prompts join and `genledger
missing` on a run where some requests failed and some never ran."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.cli import main
from genledger.config import Config, DatasetKeys, HealthSettings
from genledger.refresh.collect import refresh
from genledger.synth.records import failed_batch, line, openai_batch, openai_chat, tokenized


def write(path: Path, records: list[Any], mode: str = "wb") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as fh:
        fh.write(b"".join(line(r) for r in records))


def stats(root: Path, base: Path, full: bool = False, **settings: Any) -> dict[str, Any]:
    config = Config(data_root=root, stats_path=base / "s.json", state_dir=base / "st", **settings)
    return refresh(config, full=full).stats


def chat(i: int, *, content: str | None = None, finish: str = "stop", tokens: int = 50) -> Any:
    return openai_chat(f"r{i}", 5, tokens, random.Random(i), content=content, finish_reason=finish)


def test_truncation_counts_every_formats_limit_and_warns_only_above_the_share(
    tmp_path: Path,
) -> None:
    records = [chat(i, finish="length" if i < 6 else "stop") for i in range(100)]
    write(tmp_path / "data/ds/raw_responses.jsonl", records)
    block = stats(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert block["health"]["truncated"] == 6 and block["health"]["truncated_share"] == 0.06
    assert block["quality"]["truncated_outputs"] == 6 and block["quality"]["status"] == "warn"
    relaxed = stats(tmp_path / "data", tmp_path / "b", health=HealthSettings(truncated_share=0.1))
    assert relaxed["datasets"]["ds"]["quality"]["truncated_outputs"] == 0
    assert relaxed["totals"]["health"]["truncated"] == 6


POOL = st.sampled_from(["4", "four", " 4\n", "5", "It is 4.", "4 "])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(POOL, st.booleans()), min_size=1, max_size=30), st.integers(1, 4))
def test_duplicate_answers_counted_incrementally_equal_a_full_scan(
    tmp_path_factory: Any, answers: list[tuple[str, bool]], refreshes: int
) -> None:
    base = tmp_path_factory.mktemp("dup")
    root = base / "data"
    seen: set[str] = set()
    expected = 0
    for k, (text, shard) in enumerate(answers):
        expected += text.strip() in seen
        seen.add(text.strip())
        name = "raw_responses_b.jsonl" if shard else "raw_responses_a.jsonl"
        write(root / "ds" / name, [chat(k, content=text)], "ab")
        if k % refreshes == 0:
            stats(root, base)
    incremental = stats(root, base)["datasets"]["ds"]
    full = stats(root, base / "full", full=True)["datasets"]["ds"]
    assert incremental["health"]["duplicate_outputs"] == full["health"]["duplicate_outputs"]
    # file order: shard a, then shard b (not the order written), so count on that order
    ordered = [t.strip() for t, b in answers if not b] + [t.strip() for t, b in answers if b]
    assert full["health"]["duplicate_outputs"] == len(ordered) - len(set(ordered))
    assert expected >= 0


def test_repeated_answers_warn_above_the_share_and_name_where_first_seen(tmp_path: Path) -> None:
    records = [chat(i, content="same" if i % 10 == 0 else f"answer {i}") for i in range(100)]
    write(tmp_path / "data/ds/raw_responses.jsonl", records)
    block = stats(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert block["health"]["duplicate_outputs"] == 9 and block["health"]["answers"] == 100
    failure = next(f for f in block["quality"]["failures"] if f["check"] == "duplicate_outputs")
    assert failure["examples"][0]["line"] == 11
    assert failure["examples"][0]["reason"] == "the same answer as line 1"


def test_drift_names_what_moved_once_both_windows_are_full(tmp_path: Path) -> None:
    early = [chat(i, tokens=100) for i in range(20)]
    late = [chat(i, finish="length", tokens=400) for i in range(20, 40)]
    write(tmp_path / "data/ds/raw_responses.jsonl", early)
    settings = {"health": HealthSettings(window=20, truncated_share=1.0)}
    first = stats(tmp_path / "data", tmp_path, **settings)["datasets"]["ds"]
    assert first["health"]["drift"] == [] and first["quality"]["output_drift"] == 0
    write(tmp_path / "data/ds/raw_responses.jsonl", late, "ab")
    block = stats(tmp_path / "data", tmp_path, **settings)["datasets"]["ds"]
    health = block["health"]
    assert health["first_window"]["truncated_share"] == 0.0
    assert health["latest_window"]["truncated_share"] == 1.0
    assert "truncated share 0.0% → 100.0%" in health["drift"]
    assert "median output 100 → 400 tokens" in health["drift"]
    assert block["quality"]["output_drift"] == len(health["drift"])


def samples() -> list[dict[str, Any]]:
    rng = random.Random(3)
    out = [tokenized(5, 10, rng) for _ in range(6)]
    out[1]["loss_mask"] = [1] * 15  # the prompt is trained on
    out[4]["input_ids"] = list(range(40))
    out[4]["loss_mask"] = [0] * 10 + [1] * 30
    return out


def test_unmasked_and_over_long_samples_are_the_same_in_jsonl_and_parquet(tmp_path: Path) -> None:
    rows = samples()
    write(tmp_path / "data/jl/tokenized_data.jsonl", rows)
    (tmp_path / "data/pq").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "data/pq/tokenized_data.parquet")
    found = stats(tmp_path / "data", tmp_path, max_seq_len=32)["datasets"]
    for name in ("jl", "pq"):
        quality = found[name]["quality"]
        assert (quality["prompt_not_masked"], quality["over_length"]) == (1, 1), name
        tokens, loss = found[name]["total_tokens"], found[name]["total_loss_tokens"]
        assert found[name]["supervised_share"] == loss / tokens
    unset = stats(tmp_path / "data", tmp_path / "u")["datasets"]["jl"]["quality"]
    assert unset["over_length"] == 0


def batch_run(root: Path) -> set[str]:
    """Prompts p-0..p-29; answered but p-3 (failed), p-7 (failed then retried: answered)
    and p-20.. (never ran); the ids of the prompts to run again."""
    rng = random.Random(1)
    prompts = [{"custom_id": f"p-{i}", "body": {"n": i}} for i in range(30)]
    write(root / "ds/prompts.jsonl", prompts)
    done = [openai_batch(f"p-{i}", 5, 9, rng) for i in range(20) if i not in (3, 7)]
    done += [failed_batch("p-3", 0, 0, rng), failed_batch("p-7", 0, 0, rng)]
    done.append(openai_batch("p-7", 5, 9, rng))
    write(root / "ds/raw_responses.jsonl", done)
    return {"p-3", *(f"p-{i}" for i in range(20, 30))}


def test_the_prompts_join_counts_answered_failed_and_missing(tmp_path: Path) -> None:
    again = batch_run(tmp_path / "data")
    block = stats(tmp_path / "data", tmp_path)["datasets"]["ds"]
    assert block["prompts"] == {
        "n_prompts": 30, "answered": 19, "failed": 1, "missing": 10,
        "ids_missing": ["p-3", *(f"p-{i}" for i in range(20, 30))], "key": "custom_id",
    }  # fmt: skip
    assert block["prompts_unjoinable"] is None and len(again) == 11


def test_missing_writes_exactly_the_prompt_lines_to_run_again(tmp_path: Path) -> None:
    again = batch_run(tmp_path / "data")
    out = tmp_path / "again.jsonl"
    assert main(["missing", str(tmp_path / "data"), "ds", "-o", str(out), "-q"]) == 0
    lines = out.read_bytes().splitlines()
    source = (tmp_path / "data/ds/prompts.jsonl").read_bytes().splitlines()
    assert {orjson.loads(x)["custom_id"] for x in lines} == again
    assert all(x in source for x in lines)  # byte for byte as the prompts file holds them
    assert main(["missing", str(tmp_path / "data"), "nope", "-o", str(out)]) == 2
    assert main(["missing", str(tmp_path / "data"), "-o", str(tmp_path / "data/x")]) == 2


def test_prompts_without_a_shared_key_are_null_with_a_reason(tmp_path: Path) -> None:
    write(tmp_path / "data/a/prompts.jsonl", [{"q": i} for i in range(3)])
    write(tmp_path / "data/a/raw_responses.jsonl", [chat(0)])
    write(tmp_path / "data/b/prompts.jsonl", [{"id": f"p{i}"} for i in range(3)])
    write(tmp_path / "data/b/raw_responses.jsonl", [chat(0)])
    found = stats(tmp_path / "data", tmp_path)["datasets"]
    assert found["a"]["prompts"] is None
    assert found["a"]["prompts_unjoinable"] == "3 of 3 prompt lines carry no custom_id, key or id"
    assert found["b"]["prompts"] is None
    assert found["b"]["prompts_unjoinable"].startswith("no prompt custom_id, key or id matches")
    keyed = stats(
        tmp_path / "data", tmp_path / "k", keys={"b": DatasetKeys(response_key="choices")}
    )["datasets"]["b"]
    assert keyed["prompts"] is None  # a key that names no id: still no guess
    assert main(["missing", str(tmp_path / "data"), "a", "-o", str(tmp_path / "o.jsonl")]) == 2
