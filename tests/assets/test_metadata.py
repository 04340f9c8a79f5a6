"""The new numbers reach the Dagster UI as plotted metadata (numbers, never made-up zeros)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.metadata import file_asset_metadata
from genledger.config import Config
from genledger.tail.discovery import discover
from tests.genledger.parse import sdk_records as sdk
from tests.genledger.parse.test_sdk_formats import collect


def test_reasoning_cached_and_samples_are_plotted_numbers(tmp_path: Path) -> None:
    dataset = sdk.openai_chat_dataset(sdk.PYDANTIC_DUMPS["model_dump_json"])
    block = collect(tmp_path, dataset.lines)["datasets"]["ds"]
    (found,) = discover(tmp_path / "data", Config())
    metadata = file_asset_metadata(found, "responses", block, failure_count=2)
    truth = dataset.truth
    assert metadata["total_reasoning"] == dg.MetadataValue.int(truth.total_reasoning or 0)
    assert metadata["total_cached_prompt"] == dg.MetadataValue.int(64)
    assert metadata["n_samples"] == dg.MetadataValue.int(8)
    assert metadata["empty_outputs"] == dg.MetadataValue.int(1)
    assert isinstance(metadata["reasoning_share"], dg.FloatMetadataValue)
    assert metadata["empty_output_reasons"].value == {"length": 1}


def test_unknown_reasoning_is_not_plotted_as_zero(tmp_path: Path) -> None:
    block = collect(tmp_path, sdk.mistral_dataset(sdk.PYDANTIC_DUMPS["exclude_none"]).lines)
    (found,) = discover(tmp_path / "data", Config())
    metadata = file_asset_metadata(found, "responses", block["datasets"]["ds"], 0)
    assert "total_reasoning" not in metadata and "reasoning_share" not in metadata
    assert "total_cached_prompt" not in metadata and "total_cache_write" not in metadata
    assert "bucket/output_reasoning" not in metadata and "bucket/input_cache_read" not in metadata
    assert metadata["bucket/output_visible"] == dg.MetadataValue.int(26)


def test_the_cost_is_plotted_and_unpriced_records_are_said(tmp_path: Path) -> None:
    from tests.genledger.ledger.test_cost import chat
    from tests.genledger.ledger.test_cost import collect as collect_records

    records = [chat("a", "gpt-4o", 9_000, 700), chat("b", "no-such-model-xyz", 10, 10)]
    block = collect_records(tmp_path, {"ds": records})["datasets"]["ds"]
    (found,) = discover(tmp_path / "data", Config())
    metadata = file_asset_metadata(found, "responses", block, failure_count=0)
    assert metadata["cost_usd"] == dg.MetadataValue.float(block["cost_usd"])
    assert metadata["cost/gpt-4o"] == dg.MetadataValue.float(block["cost_usd"])
    assert metadata["cost_unpriced_records"] == dg.MetadataValue.int(1)
    assert "no-such-model-xyz" in metadata["cost_unpriced"].value
    assert "cost_projected_usd" not in metadata  # no expected total: nothing made up


def test_the_usage_buckets_cache_writes_and_the_audit_are_plotted_numbers(tmp_path: Path) -> None:
    dataset = sdk.anthropic_dataset(sdk.PYDANTIC_DUMPS["model_dump_json"])
    compat = (
        b'{"choices": [{"message": {"content": "4"}}], "usage": {"prompt_tokens": 35, '
        b'"completion_tokens": 12, "total_tokens": 109}}'
    )
    block = collect(tmp_path, [*dataset.lines, compat])["datasets"]["ds"]
    (found,) = discover(tmp_path / "data", Config())
    metadata = file_asset_metadata(found, "responses", block, failure_count=2)
    truth = dataset.truth
    assert metadata["total_cache_write"] == dg.MetadataValue.int(16)
    buckets = {k.split("/")[1]: v.value for k, v in metadata.items() if k.startswith("bucket/")}
    assert buckets == {
        "input_uncached": 300 + 20 + 35,
        "input_cache_read": 2048,
        "input_cache_write": 16,
        "output_visible": (497 - 328) + (1024 - 1024) + 12,
        "output_reasoning": (truth.total_reasoning or 0) + 62,
    }
    assert sum(v for k, v in buckets.items() if k.startswith("input")) == block["total_prompt"]
    assert sum(v for k, v in buckets.items() if k.startswith("output")) == block["total_comp"]
    assert metadata["usage_inconsistent"] == dg.MetadataValue.int(1)


def test_the_records_reporting_their_prompt_are_plotted_and_every_bucket_has_its_label(
    tmp_path: Path,
) -> None:
    from genledger.parse.buckets import BUCKETS

    dataset = sdk.openai_chat_dataset(sdk.PYDANTIC_DUMPS["model_dump_json"])
    # a record whose usage leaves out the prompt count: counted, its prompt unknown
    no_prompt = b'{"choices": [{"message": {"content": "4"}}], "usage": {"completion_tokens": 3}}'
    block = collect(tmp_path, [*dataset.lines, no_prompt])["datasets"]["ds"]
    (found,) = discover(tmp_path / "data", Config())
    metadata = file_asset_metadata(found, "responses", block, failure_count=0)
    assert metadata["n_prompt_counted"] == dg.MetadataValue.int(dataset.truth.n_done)
    assert metadata["n_counted"] == dg.MetadataValue.int(dataset.truth.n_done + 1)
    for bucket in BUCKETS:  # each bucket plotted under its label, as its stat sums it
        if block[bucket.stat] is None:  # no record reports it (cache writes): not plotted
            assert bucket.label not in metadata
        else:
            assert metadata[bucket.label] == dg.MetadataValue.int(block[bucket.stat])
    assert block["total_cache_write"] is None and block["total_input_uncached"] is not None
