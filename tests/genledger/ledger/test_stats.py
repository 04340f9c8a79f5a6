"""The stats JSON v1 fields (docs/stats-json.md): expected totals, progress, averages, files."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from genledger.ledger.stats import iso_utc, quality_block
from genledger.rules.catalogue import COUNTER_NAMES
from genledger.rules.result import RuleTally

from ..conftest import collect_tree, jl

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def collect(tmp_path: Path, datasets: dict[str, dict[str, bytes]], **n_prompts: int) -> dict:
    """A full collect of the datasets written under a fresh root."""
    return collect_tree(tmp_path, datasets, n_prompts)


def responses(*counts: int) -> bytes:
    """Flat records with these completion counts."""
    return jl(*({"completion_tokens": n, "prompt_tokens": 1} for n in counts))


def test_expected_total_is_the_complete_nonblank_prompt_lines(tmp_path: Path) -> None:
    prompts = jl({"p": 1}, {"p": 2}) + b"\n  \n" + jl({"p": 3}) + b'{"p": 4'
    data = collect(
        tmp_path, {"ds": {"prompts.jsonl": prompts, "raw_responses.jsonl": responses(5)}}
    )
    block = data["datasets"]["ds"]
    assert block["n_prompts"] == 3
    assert block["progress"] == pytest.approx(1 / 3)
    assert block["files"]["prompts.jsonl"]["pending_bytes"] == len(b'{"p": 4')


def test_configured_expected_total_wins_over_the_prompts_file(tmp_path: Path) -> None:
    files = {"prompts.jsonl": jl({"p": 1}), "raw_responses.jsonl": responses(5, 6)}
    block = collect(tmp_path, {"ds": files}, ds=8)["datasets"]["ds"]
    assert (block["n_prompts"], block["progress"]) == (8, 2 / 8)


def test_unknown_expected_total_leaves_progress_null(tmp_path: Path) -> None:
    block = collect(tmp_path, {"ds": {"raw_responses.jsonl": responses(5)}})["datasets"]["ds"]
    assert (block["n_prompts"], block["progress"]) == (None, None)
    assert block["rate"] is None or block["rate"]["eta_s"] is None


def test_expected_total_of_zero_leaves_progress_null(tmp_path: Path) -> None:
    block = collect(tmp_path, {"ds": {"raw_responses.jsonl": responses(5)}}, ds=0)["datasets"]["ds"]
    assert (block["n_prompts"], block["progress"]) == (0, None)


def test_averages_are_null_without_anything_to_average(tmp_path: Path) -> None:
    block = collect(tmp_path, {"ds": {"raw_responses.jsonl": jl({"text": "x"})}})["datasets"]["ds"]
    assert (block["n_done"], block["n_counted"], block["total_comp"]) == (1, 0, 0)
    assert (block["avg_comp"], block["avg_tokens"], block["n_tokenized"]) == (None, None, 0)


def test_files_report_bytes_lines_pending_and_utc_mtime(tmp_path: Path) -> None:
    data = responses(1, 2) + b"\n" + b'{"completion_tokens": 3'
    stats = collect(tmp_path, {"ds": {"raw_responses.jsonl": data}})
    entry = stats["datasets"]["ds"]["files"]["raw_responses.jsonl"]
    path = tmp_path / "data" / "ds" / "raw_responses.jsonl"
    complete = data[: data.rfind(b"\n") + 1]
    assert entry["bytes"] == len(data)
    assert entry["lines"] == complete.count(b"\n")
    assert entry["pending_bytes"] == len(data) - len(complete)
    assert ISO_UTC.match(entry["mtime"])
    mtime = datetime.fromisoformat(entry["mtime"].replace("Z", "+00:00"))
    assert mtime.timestamp() == pytest.approx(os.stat(path).st_mtime, abs=1e-3)
    assert stats["datasets"]["ds"]["n_done"] == 2


def test_document_header_and_every_design_field_is_present(tmp_path: Path) -> None:
    stats = collect(tmp_path, {"ds": {"raw_responses.jsonl": responses(4)}})
    assert stats["schema_version"] == 1
    assert ISO_UTC.match(stats["generated_at"])
    assert stats["data_root"] == str((tmp_path / "data").resolve())
    block = stats["datasets"]["ds"]
    fields = {
        "kind", "n_prompts", "n_done", "progress", "total_comp", "avg_comp", "total_prompt",
        "n_counted", "formats", "finish_reasons", "n_tokenized", "total_tokens", "avg_tokens",
        "total_loss_tokens", "quality", "files", "rate",
    }  # fmt: skip
    assert fields <= set(block)
    assert {"status", "failures", *COUNTER_NAMES} <= set(block["quality"])


def test_totals_sum_the_counters_over_datasets(tmp_path: Path) -> None:
    datasets = {
        "a": {"raw_responses.jsonl": responses(3, 0, 9), "prompts.jsonl": jl({}, {}, {}, {})},
        "b b": {"raw_responses.jsonl": responses(7) + jl({"text": "x"})},
        "c": {"tokenized_data.jsonl": jl({"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1]})},
    }
    stats = collect(tmp_path, datasets, **{"b b": 6})
    blocks, totals = stats["datasets"], stats["totals"]
    assert set(blocks) == {"a", "b b", "c"}
    summed = ("n_done", "n_counted", "total_comp", "total_prompt", "n_tokenized",
              "total_tokens", "total_loss_tokens")  # fmt: skip
    for key in summed:
        assert totals[key] == sum(b[key] for b in blocks.values()), key
    assert (totals["n_done"], totals["total_comp"], totals["total_tokens"]) == (5, 19, 3)
    assert totals["n_prompts"] == 4 + 6
    assert totals["progress"] == totals["n_done"] / totals["n_prompts"]
    assert totals["avg_comp"] == totals["total_comp"] / totals["n_counted"]
    for name in COUNTER_NAMES:
        assert totals["quality"][name] == sum(b["quality"][name] for b in blocks.values()), name
    assert totals["quality"]["status"] == "error"
    assert totals["formats"] == {"flat": 4}


def test_quality_block_lists_errors_before_warnings_with_zero_counters(tmp_path: Path) -> None:
    failures = {
        "think_tag_leaks": RuleTally(2, [{"file": "f", "line": 1, "reason": "r"}]),
        "zero_tokens": RuleTally(1, [{"file": "f", "line": 2, "reason": "r"}]),
    }
    block = quality_block(failures)
    assert block["status"] == "error"
    assert [f["check"] for f in block["failures"]] == ["zero_tokens", "think_tag_leaks"]
    assert block["failures"][1] == {
        "check": "think_tag_leaks",
        "severity": "warn",
        "count": 2,
        "examples": [{"file": "f", "line": 1, "reason": "r"}],
    }
    assert block["missing_tokens"] == 0
    assert quality_block({})["status"] == "ok"


def test_timestamps_are_iso_utc() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00Z"
    assert iso_utc(None) is None
    stamp = iso_utc(1_700_000_000.5)
    assert stamp is not None and datetime.fromisoformat(stamp.replace("Z", "+00:00")) == (
        datetime.fromtimestamp(1_700_000_000.5, tz=UTC)
    )


def test_the_usage_buckets_are_summed_and_null_where_no_record_reports_them(
    tmp_path: Path,
) -> None:
    # docs/formats.md: total_prompt = the three input buckets, total_comp = the two output
    # ones; a bucket no record of a dataset reports is null, never 0
    chat = {"choices": [{"message": {"content": "4"}}]}
    cached = {**chat, "usage": {"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140,
                                "prompt_tokens_details": {"cached_tokens": 64},
                                "completion_tokens_details": {"reasoning_tokens": 30}}}  # fmt: skip
    compat = {**chat, "usage": {"prompt_tokens": 35, "completion_tokens": 12, "total_tokens": 109}}
    datasets = {
        "plain": {"raw_responses.jsonl": responses(4, 5)},
        "api": {"raw_responses.jsonl": jl(cached, compat)},
    }
    blocks = collect(tmp_path, datasets)["datasets"]
    plain, api = blocks["plain"], blocks["api"]
    assert (plain["total_input_uncached"], plain["total_output_visible"]) == (2, 9)
    assert (plain["total_reasoning"], plain["total_cached_prompt"]) == (None, None)
    assert plain["total_cache_write"] is None
    # 109 - 35 - 12 = 62 output tokens the record did not itemise: counted as reasoning, flagged
    assert (api["total_comp"], api["total_reasoning"], api["total_output_visible"]) == (
        40 + 74, 30 + 62, 10 + 12,
    )  # fmt: skip
    assert (api["total_prompt"], api["total_cached_prompt"], api["total_input_uncached"]) == (
        135, 64, 36 + 35,
    )  # fmt: skip
    (failure,) = [f for f in api["quality"]["failures"] if f["check"] == "usage_inconsistent"]
    assert (failure["count"], failure["severity"]) == (1, "warn")
    assert failure["examples"][0]["reason"] == (
        "openai_chat: total_tokens 109 ≠ prompt 35 + completion 12: 62 more output counted as "
        "reasoning"
    )
