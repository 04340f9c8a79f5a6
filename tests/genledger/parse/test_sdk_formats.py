"""Every real API's records counted exactly: built with the client libraries' own models and
dump modes (and SGLang/vLLM's shapes from their source), collected, compared with the truth."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.config import Config
from genledger.fast import lines as fastparse
from genledger.fast.lines import fast_facts
from genledger.parse.formats import keys_read, response_facts
from genledger.parse.line import facts_of_line
from genledger.refresh.collect import refresh

from ..fast.test_lines import assert_same, read_flags
from . import sdk_records as sdk
from .sdk_records import Dataset
from .test_realworld import HEALTH

DATASETS: dict[str, Callable[[], Dataset]] = {
    **{
        f"{name}-{mode}": (lambda b=builder, d=dump: b(d))
        for name, builder in (
            ("openai_chat", sdk.openai_chat_dataset),
            ("openai_stream", sdk.openai_stream_dataset),
            ("openai_responses", sdk.openai_responses_dataset),
            ("openai_batch", sdk.openai_batch_dataset),
            ("anthropic", sdk.anthropic_dataset),
            ("anthropic_batch", sdk.anthropic_batch_dataset),
            ("cohere", sdk.cohere_dataset),
            ("mistral", sdk.mistral_dataset),
            ("bedrock_batch", sdk.bedrock_batch_dataset),
            ("ollama", sdk.ollama_dataset),
            ("openai_responses_events", sdk.openai_responses_events_dataset),
            ("anthropic_events", sdk.anthropic_events_dataset),
            ("anthropic_vertex_stream", sdk.anthropic_vertex_stream_dataset),
            ("groq_stream", sdk.groq_stream_dataset),
            ("openai_compatible", sdk.openai_compatible_dataset),
        )
        for mode, dump in sdk.PYDANTIC_DUMPS.items()
    },
    **{
        f"{name}-{mode}": (lambda b=builder, d=dump: b(d))
        for name, builder in (
            ("gemini", sdk.gemini_dataset),
            ("gemini_batch", sdk.gemini_batch_dataset),
            ("gemini_stream", sdk.gemini_stream_dataset),
            ("gemini_textless_last_chunk", sdk.gemini_textless_last_chunk_dataset),
            ("vertex_batch", sdk.vertex_batch_dataset),
        )
        for mode, dump in sdk.GEMINI_DUMPS.items()
    },
    "huggingface": sdk.huggingface_dataset,
    "sglang": sdk.sglang_dataset,
    "vllm_n4": sdk.vllm_dataset,
    "bedrock_converse": sdk.bedrock_converse_dataset,
    "bedrock_stream": sdk.bedrock_stream_dataset,
    "llamacpp": sdk.llamacpp_dataset,
    "tgi_stream_without_details": sdk.tgi_stream_without_details_dataset,
    "distilabel": sdk.distilabel_dataset,
}


FIELDS = (
    "n_done", "total_comp", "total_prompt", "total_reasoning", "total_cached_prompt",
    "total_cache_write",
    "n_samples", "stream_chunks", "formats",
)  # fmt: skip


def collect(tmp_path: Path, lines: list[bytes]) -> dict[str, Any]:
    """The stats JSON of one dataset holding `lines`, by a real refresh."""
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    (root / "ds" / "raw_responses.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    config = Config(data_root=root, stats_path=tmp_path / "stats.json", state_dir=tmp_path / "st")
    return refresh(config).stats


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_each_format_and_dump_mode_is_counted_exactly(name: str, tmp_path: Path) -> None:
    dataset = DATASETS[name]()
    stats = collect(tmp_path, dataset.lines)
    block, truth = stats["datasets"]["ds"], dataset.truth
    got = {key: block[key] for key in FIELDS}
    assert got == {
        "n_done": truth.n_done,
        "total_comp": truth.total_comp,
        "total_prompt": truth.total_prompt,
        "total_reasoning": truth.total_reasoning,
        "total_cached_prompt": truth.total_cached_prompt,
        "total_cache_write": truth.total_cache_write,
        "n_samples": truth.n_done if truth.n_samples is None else truth.n_samples,
        "stream_chunks": truth.stream_chunks,
        "formats": truth.formats,
    }
    quality = block["quality"]
    counters = {k: v for k, v in quality.items() if isinstance(v, int) and v and k not in HEALTH}
    assert counters == truth.counters, quality["failures"]


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_the_fast_path_gives_the_general_facts_on_every_sdk_line(name: str) -> None:
    for line in DATASETS[name]().lines:
        assert_same(line, "responses")


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_every_format_takes_the_fast_path(name: str) -> None:
    # Guards the lever: a record of any format (failed requests and unknown shapes aside,
    # which the general path words) is decoded by the fast tiers, never left to the general.
    for line in DATASETS[name]().lines:
        facts = facts_of_line(line, "responses")
        if any(f.failed_request or f.missing_detail for f in facts):
            continue
        assert fast_facts(line, "responses") == facts, line[:120]


# The SDK dumps the typed shapes (genledger/fast/shapes.py, apishapes.py) take whole.
TYPED = tuple(
    n
    for n in DATASETS
    if n.startswith(("anthropic", "gemini", "cohere", "sglang", "vllm", "vertex"))
    and not n.startswith(
        ("anthropic_events", "anthropic_vertex", "gemini_stream", "gemini_textless")
    )
)


@pytest.mark.parametrize("name", sorted(TYPED))
def test_the_typed_shapes_take_these_sdk_dumps(name: str) -> None:
    # Guards the lever: these must not fall to the stand-in tier (~10x slower) unnoticed.
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    for line in DATASETS[name]().lines:
        facts = facts_of_line(line, "responses")
        if any(f.failed_request for f in facts):
            continue  # the general path words a failed request
        for flags in read_flags(line):
            assert typed.decode(line, flags) == facts, line[:120]


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_the_keys_read_give_every_fact_but_the_keys_seen(name: str) -> None:
    # A Parquet shard decodes only `keys_read()`'s columns and reads a row again whole when
    # its facts name the keys seen: every other fact must come out the same from those keys.
    wanted = keys_read()
    for line in DATASETS[name]().lines:
        record = orjson.loads(line)
        if not isinstance(record, dict):
            continue
        some = response_facts({k: v for k, v in record.items() if k in wanted})
        if some.missing_detail is None:
            assert some == response_facts(record), line[:120]
