"""docs/formats.md counting rules end to end: real files, real collect, counters and examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ..conftest import collect_tree, jl

Files = dict[str, dict[str, bytes]]


collect = collect_tree


def block(tmp_path: Path, data: bytes, name: str = "raw_responses.jsonl") -> dict:
    """The stats block of one dataset holding one file."""
    return collect(tmp_path, {"ds": {name: data}})["datasets"]["ds"]


def flat(n: Any, rid: str | None = None, **extra: Any) -> dict[str, Any]:
    """A flat record with completion count `n`."""
    record: dict[str, Any] = {"completion_tokens": n, "prompt_tokens": 2, **extra}
    if rid is not None:
        record["id"] = rid
    return record


def failure(quality: dict[str, Any], check: str) -> dict[str, Any]:
    """The failure entry of one check."""
    (entry,) = [f for f in quality["failures"] if f["check"] == check]
    return entry


def test_valid_counts_are_summed_and_averaged(tmp_path: Path) -> None:
    counts = [3, 17, 250, 1]
    data = block(tmp_path, jl(*(flat(n) for n in counts)))
    assert (data["n_done"], data["n_counted"], data["total_comp"]) == (4, 4, sum(counts))
    assert data["avg_comp"] == sum(counts) / len(counts)
    assert data["total_prompt"] == 2 * len(counts)
    assert data["quality"]["status"] == "ok"


@pytest.mark.parametrize("raw", [True, False, "1577", 1577.0, -5, [3], {"n": 3}])
def test_invalid_counts_are_flagged_and_not_summed(tmp_path: Path, raw: Any) -> None:
    data = block(tmp_path, jl(flat(10), flat(raw)))
    assert (data["n_done"], data["n_counted"], data["total_comp"]) == (2, 1, 10)
    assert data["quality"]["invalid_tokens"] == 1
    assert data["quality"]["missing_tokens"] == 0
    assert data["formats"] == {"flat": 2}
    assert data["quality"]["status"] == "error"


def test_zero_counts_are_counted_and_flagged(tmp_path: Path) -> None:
    data = block(tmp_path, jl(flat(0), flat(8)))
    assert (data["n_done"], data["n_counted"], data["total_comp"]) == (2, 2, 8)
    assert data["avg_comp"] == 4.0
    assert data["quality"]["zero_tokens"] == 1
    assert failure(data["quality"], "zero_tokens")["severity"] == "error"


def test_records_with_no_path_are_missing_not_zero(tmp_path: Path) -> None:
    data = block(tmp_path, jl({"id": "a", "text": "x"}, flat(6)))
    assert (data["n_done"], data["n_counted"], data["total_comp"]) == (2, 1, 6)
    assert data["quality"]["missing_tokens"] == 1
    assert data["quality"]["zero_tokens"] == 0
    assert data["formats"] == {"flat": 1}


def test_count_mismatch_beyond_one_token_only(tmp_path: Path) -> None:
    records = [
        flat(5, output_ids=[1] * 4),
        flat(5, output_ids=[1] * 6),
        flat(5, output_ids=[1] * 5),
        flat(5, output_ids=[1] * 3),
        flat(5, output_ids=[1] * 8),
        {"output_ids": [1, 2, 3]},
    ]
    data = block(tmp_path, jl(*records))
    assert data["quality"]["count_mismatch"] == 2
    assert [e["line"] for e in failure(data["quality"], "count_mismatch")["examples"]] == [4, 5]
    assert data["quality"]["status"] == "warn"
    assert data["total_comp"] == 5 * 5 + 3


def test_array_lines_count_every_element(tmp_path: Path) -> None:
    batch = [{"meta_info": {"id": f"b{i}", "completion_tokens": i + 1}} for i in range(3)]
    data = block(tmp_path, jl(batch, flat(10)))
    assert (data["n_done"], data["n_counted"], data["total_comp"]) == (4, 4, 1 + 2 + 3 + 10)
    assert data["formats"] == {"flat": 1, "sglang_generate": 3}
    assert data["files"]["raw_responses.jsonl"]["lines"] == 2


def batch_line(rid: str, n: int, status: int = 200) -> dict[str, Any]:
    """An OpenAI Batch output line."""
    body = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
    body["usage"] = {"prompt_tokens": 3, "completion_tokens": n}
    return {
        "id": f"batch_{rid}",
        "custom_id": rid,
        "response": {"status_code": status, "body": body},
    }


def test_failed_batch_requests_are_done_but_not_missing_and_have_no_format(
    tmp_path: Path,
) -> None:
    records = [
        batch_line("r1", 7),
        {"id": "batch_r2", "custom_id": "r2", "response": None, "error": {"code": "x"}},
        {"custom_id": "r3", "response": {"status_code": 500, "body": {"error": {"message": "m"}}}},
    ]
    data = block(tmp_path, jl(*records))
    assert (data["n_done"], data["n_counted"], data["total_comp"]) == (3, 1, 7)
    quality = data["quality"]
    assert (quality["failed_requests"], quality["missing_tokens"]) == (2, 0)
    assert data["formats"] == {"openai_batch": 3}  # failed lines are batch lines too
    assert quality["status"] == "warn"


def test_think_tag_leaks_are_warned(tmp_path: Path) -> None:
    def chat(content: str, reasoning: Any) -> dict[str, Any]:
        message = {"content": content, "reasoning_content": reasoning}
        return {"choices": [{"message": message}], "usage": {"completion_tokens": 4}}

    records = [chat("a</think>b", None), chat("a</think>b", "why"), chat("plain", None)]
    data = block(tmp_path, jl(*records))
    assert data["quality"]["think_tag_leaks"] == 1
    assert failure(data["quality"], "think_tag_leaks")["examples"][0]["line"] == 1
    assert data["quality"]["status"] == "warn"


def test_a_reply_cut_inside_an_unclosed_think_is_a_think_tag_leak(tmp_path: Path) -> None:
    # The content is all reasoning and no answer: the trace leaked, and the cut hid its end.
    def chat(content: str, reasoning: Any) -> dict[str, Any]:
        message = {"content": content, "reasoning_content": reasoning}
        choice = {"message": message, "finish_reason": "length"}
        return {"choices": [choice], "usage": {"completion_tokens": 4}}

    records = [chat("ok", None), chat("<think>\nHmm, the user", None), chat("<think>r", "r")]
    data = block(tmp_path, jl(*records))
    assert data["quality"]["think_tag_leaks"] == 1
    example = failure(data["quality"], "think_tag_leaks")["examples"][0]
    assert example["line"] == 2
    assert "<think>" in example["reason"]


def test_duplicate_ids_are_counted_across_shards_and_ignore_records_without_id(
    tmp_path: Path,
) -> None:
    shard0 = jl(flat(1, "a"), flat(1, "b"), flat(1), flat(1))
    shard1 = jl(
        flat(1, "a"),
        {"meta_info": {"id": "b", "completion_tokens": 2}},
        batch_line("c", 1),
        batch_line("c", 1),
        flat(1),
    )
    files = {"raw_responses_00.jsonl": shard0, "raw_responses_01.jsonl": shard1}
    data = collect(tmp_path, {"ds": files})["datasets"]["ds"]
    assert data["quality"]["duplicate_ids"] == 3
    examples = failure(data["quality"], "duplicate_ids")["examples"]
    assert [(e["file"], e["line"]) for e in examples] == [
        ("raw_responses_01.jsonl", 1),
        ("raw_responses_01.jsonl", 2),
        ("raw_responses_01.jsonl", 4),
    ]


def test_custom_id_is_the_id_even_when_id_repeats(tmp_path: Path) -> None:
    records = [flat(1, "same", custom_id="x"), flat(1, "same", custom_id="y")]
    assert block(tmp_path, jl(*records))["quality"]["duplicate_ids"] == 0


def test_malformed_lines_name_their_line_and_byte_offset(tmp_path: Path) -> None:
    lines = [
        orjson.dumps(flat(3)),
        b"",
        b'{"completion_tokens": 4',
        b"42",
        b'[{"completion_tokens": 1}, 7]',
        orjson.dumps(flat(5)),
    ]
    data = b"".join(line + b"\n" for line in lines)
    offsets = [sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
    stats = block(tmp_path, data)
    assert (stats["n_done"], stats["total_comp"]) == (2, 8)
    entry = failure(stats["quality"], "malformed_lines")
    assert (entry["count"], entry["severity"]) == (3, "error")
    assert [(e["line"], e["offset"]) for e in entry["examples"]] == [
        (3, offsets[2]),
        (4, offsets[3]),
        (5, offsets[4]),
    ]
    assert all(e["file"] == "raw_responses.jsonl" and e["reason"] for e in entry["examples"])


def test_examples_keep_the_first_five_in_file_order(tmp_path: Path) -> None:
    data = block(tmp_path, jl(*(flat(0) for _ in range(8))))
    entry = failure(data["quality"], "zero_tokens")
    assert entry["count"] == 8
    assert [e["line"] for e in entry["examples"]] == [1, 2, 3, 4, 5]


def test_finish_reasons_and_formats_count_records(tmp_path: Path) -> None:
    records = [
        flat(1, finish_reason="stop"),
        flat(1, finish_reason={"type": "length", "length": 1}),
        {"meta_info": {"completion_tokens": 2, "finish_reason": {"type": "stop", "matched": 2}}},
        {"meta_info": {"completion_tokens": 2, "finish_reason": None}},
        {"details": {"generated_tokens": 3, "finish_reason": "eos_token"}},
        {"request_id": "v", "outputs": [{"token_ids": [1, 2], "finish_reason": "length"}]},
        {"output_ids": [1, 2], "finish_reason": "stop"},
    ]
    data = block(tmp_path, jl(*records))
    assert data["finish_reasons"] == {"eos_token": 1, "length": 2, "stop": 3}
    assert data["formats"] == {
        "derived": 1, "flat": 2, "sglang_generate": 2, "tgi": 1, "vllm_offline": 1
    }  # fmt: skip


TOKENIZED = [
    {"input_ids": [1, 2, 3, 4], "loss_mask": [0, 0, 1, 1]},
    {"input_ids": [[1, 2, 3]], "loss_mask": [[0, 1, 1]]},
    {"loss_mask": [1, 1]},
    {"input_ids": [], "loss_mask": []},
    {"input_ids": [1, 2, 3], "loss_mask": [1, 1]},
    {"input_ids": [1, 2], "loss_mask": [0, 0]},
    {"input_ids": [7, 8, 9]},
]


def test_tokenized_rows_count_tokens_and_flag_all_four_defects(tmp_path: Path) -> None:
    data = block(tmp_path, jl(*TOKENIZED) + b"not json\n", "tokenized_data.jsonl")
    assert data["kind"] == "pretokenized"
    with_ids = [r for r in TOKENIZED if "input_ids" in r]
    lengths = [
        len(r["input_ids"][0] if r["input_ids"][:1] == [[1, 2, 3]] else r["input_ids"])
        for r in with_ids
    ]
    assert data["n_tokenized"] == len(TOKENIZED)
    assert data["total_tokens"] == sum(lengths)
    assert data["avg_tokens"] == sum(lengths) / len(with_ids)
    assert data["total_loss_tokens"] == 2 + 2 + 2 + 0 + 2 + 0
    quality = data["quality"]
    got = {name: quality[name] for name in TOKENIZED_RULES}
    assert got == {
        "tokenized_missing_tokens": 1,
        "tokenized_zero_tokens": 1,
        "loss_mask_mismatch": 1,
        "no_trainable_tokens": 1,
        "malformed_lines": 1,
    }
    assert (quality["missing_tokens"], quality["zero_tokens"]) == (0, 0)
    assert data["n_done"] == 0 and quality["all_tokens_zero_or_missing"] == 0
    assert quality["status"] == "error"


TOKENIZED_RULES = (
    "tokenized_missing_tokens",
    "tokenized_zero_tokens",
    "loss_mask_mismatch",
    "no_trainable_tokens",
    "malformed_lines",
)


def test_malformed_lines_sum_over_responses_and_tokenized_files(tmp_path: Path) -> None:
    files = {"raw_responses.jsonl": jl(flat(3)) + b"{\n", "tokenized_data.jsonl": b"[1]\n"}
    data = collect(tmp_path, {"ds": files})["datasets"]["ds"]
    assert data["quality"]["malformed_lines"] == 2


@pytest.mark.parametrize(
    "records",
    [
        [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
        [flat(0), flat(0)],
        [flat("12"), flat(0), {"text": "x"}],
        [{"custom_id": "r", "response": None, "error": {"code": "x"}}],
    ],
)
def test_responses_without_one_valid_nonzero_count_fail_the_dataset(
    tmp_path: Path, records: list[Any]
) -> None:
    data = block(tmp_path, jl(*records))
    entry = failure(data["quality"], "all_tokens_zero_or_missing")
    assert (entry["count"], entry["severity"]) == (1, "error")
    assert data["quality"]["status"] == "error"
    (example,) = entry["examples"]
    assert (example["file"], example["line"]) == ("raw_responses*.jsonl", 0)
    assert str(data["n_done"]) in example["reason"]


def test_one_valid_nonzero_count_clears_the_dataset_rule(tmp_path: Path) -> None:
    data = block(tmp_path, jl(flat(0), {"text": "x"}, flat(1)))
    assert data["quality"]["all_tokens_zero_or_missing"] == 0


def test_an_empty_responses_file_says_it_has_no_records(tmp_path: Path) -> None:
    data = block(tmp_path, b"")
    assert data["n_done"] == 0 and data["avg_comp"] is None
    assert data["quality"]["empty_files"] == 1
    assert data["quality"]["all_tokens_zero_or_missing"] == 0
    assert data["quality"]["status"] == "warn"


def test_a_dataset_with_only_prompts_says_it_has_no_records(tmp_path: Path) -> None:
    data = block(tmp_path, jl({"p": 1}, {"p": 2}), "prompts.jsonl")
    assert (data["kind"], data["n_prompts"], data["n_done"], data["progress"]) == (
        "inference",
        2,
        0,
        0.0,
    )
    assert data["quality"]["status"] == "warn"
    assert data["quality"]["empty_files"] == 1
