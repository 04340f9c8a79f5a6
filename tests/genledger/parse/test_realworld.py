"""Real recorded responses (../shared/realworld, beside the project: the HTTP cassettes of an
open-source agent framework, vendor documentation, a distilabel table) counted exactly with no
genledger.toml, against a truth worked out from the records by each provider's documented
usage rules (not from what genledger prints). The project commits none of those files: without
them these tests skip."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from genledger.config import Config
from genledger.fast.lines import fast_facts
from genledger.parse.line import facts_of_line
from genledger.refresh.collect import refresh
from genledger.rules.catalogue import RULES

from ..fast.test_lines import assert_same
from .realworld_truth import READERS, truth_of

PROJECT = Path(__file__).resolve().parents[3]
DATA = PROJECT.parent / "shared" / "realworld" / "data"
DATA2 = PROJECT.parent / "shared" / "realworld2" / "data"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"no real recorded responses at {DATA}")


@dataclass(frozen=True)
class Truth:
    """A dataset's counts by its provider's rules (null: no record reports it)."""

    records: int
    completion: int
    prompt: int
    reasoning: int | None = None
    cached: int | None = None
    cache_write: int | None = None
    chunks: int = 0  # stream events that are no record
    flags: dict[str, int] = field(default_factory=dict)  # quality counters that are not 0


# OpenAI-compatible chat (OpenAI, Cerebras, Z.ai, Mistral, OpenRouter, vLLM, Groq, DeepSeek,
# the HF router, Ollama's and llama.cpp's /v1): completion_tokens holds the reasoning
# (completion_tokens_details.reasoning_tokens), prompt_tokens the cached part
# (prompt_tokens_details.cached_tokens; the HF router's usage.cached_tokens; DeepSeek's
# prompt_cache_hit_tokens); total_tokens = prompt + completion.
TRUTH: dict[str, Truth] = {
    # Anthropic Messages: input_tokens leaves out cache reads and writes (prompt = input +
    # cache_creation + cache_read); output_tokens holds the thinking
    "anthropic_batch": Truth(2, 31, 21, cached=0, cache_write=0),
    "anthropic_messages": Truth(30, 2424, 43463, reasoning=154, cached=3333, cache_write=418),
    # Bedrock batch output: modelOutput is the model's InvokeModel body (Claude: Anthropic's
    # usage); a line with `error` is a failed request
    "bedrock_batch_claude": Truth(3, 219, 333),
    # Titan Text: results[].tokenCount, inputTextTokenCount
    "bedrock_batch_titan": Truth(2, 3, 8, flags={"failed_requests": 1}),
    # Converse: totalTokens = inputTokens + outputTokens + cacheRead + cacheWrite (both beside
    # inputTokens); one reply holds only reasoningContent: no visible answer
    "bedrock_converse": Truth(
        84, 9618, 45425, cached=6612, cache_write=9947, flags={"empty_outputs": 1}
    ),
    "bedrock_invoke_anthropic": Truth(2, 1988, 20984, cached=19022, cache_write=1956),
    "cerebras_chat": Truth(6, 621, 285, reasoning=555, cached=0),
    # Cohere v2: usage.tokens (billed_units is what is charged); usage.cached_tokens is a part
    # of the input tokens
    "cohere_v2": Truth(4, 1335, 6163, cached=2928),
    "deepseek_chat": Truth(5, 1137, 2432, reasoning=607, cached=1408),
    # one stream of 211 chunks (every event counts as a chunk): the last carries the usage
    "deepseek_stream_chunks": Truth(1, 212, 6, reasoning=198, cached=0, chunks=211),
    # distilabel: distilabel_metadata.statistics_<step>.{input,output}_tokens, steps added
    "distilabel_jsonl": Truth(30, 13519, 2170),
    "distilabel_parquet": Truth(30, 13519, 2170),
    # Gemini: candidatesTokenCount leaves out thoughtsTokenCount (output) and promptTokenCount
    # leaves out toolUsePromptTokenCount (input); a blocked prompt (promptFeedback.blockReason)
    # failed; a reply withheld by Model Armor shows no answer
    "gemini_native": Truth(
        30, 6032, 12957, reasoning=4781, flags={"failed_requests": 1, "empty_outputs": 1}
    ),
    # Gemini's OpenAI-compatible endpoint: the thoughts only in total_tokens (output =
    # total - prompt; thoughts = total - prompt - completion)
    "gemini_openai_compat": Truth(2, 108, 101, reasoning=90),
    "groq_chat": Truth(13, 3820, 8615, reasoning=228, cached=256, flags={"think_tag_leaks": 1}),
    # four streams: the usage in the last chunk's x_groq.usage (and top-level usage in two);
    # the deepseek-r1-distill stream writes its <think> block into the content (lines 228 and
    # 682) with no reasoning field: a leak, judged on the request's whole answer
    "groq_stream_chunks": Truth(
        4, 1454, 5667, reasoning=61, chunks=1290, flags={"think_tag_leaks": 1}
    ),
    # a stream that ends in an error event: one failed request; nothing counted at all
    "groq_stream_error": Truth(
        1, 0, 0, chunks=95, flags={"failed_requests": 1, "all_tokens_zero_or_missing": 1}
    ),
    # six replies keep their <think> block in the content; one of them was cut inside it
    # (finish_reason "length", an unclosed <think>)
    "hf_router_chat": Truth(7, 3220, 89, cached=0, flags={"think_tag_leaks": 6}),
    # llama.cpp /completion: tokens_predicted, tokens_evaluated (tokens_cached is the context
    # kept, prompt + generated, not a cache hit: these builds report none)
    "llamacpp_completion_native": Truth(2, 135, 18),
    "llamacpp_openai_compat": Truth(1, 35, 10, flags={"think_tag_leaks": 1}),
    "misc_openai_compat": Truth(3, 802, 99),
    "mistral_chat": Truth(8, 974, 5140, cached=224),
    # Ollama /api/chat and /api/generate: eval_count, prompt_eval_count
    "ollama_chat_native": Truth(7, 1272, 298),
    "ollama_generate_native": Truth(8, 1146, 171),
    "ollama_openai_compat": Truth(4, 419, 648),
    "openai_batch_chat": Truth(2, 108, 890, reasoning=0, cached=0),
    # Responses: output_tokens holds output_tokens_details.reasoning_tokens, input_tokens the
    # cached ones
    "openai_batch_responses": Truth(2, 228, 28, reasoning=0, cached=0),
    "openai_chat": Truth(30, 7348, 4976, reasoning=5760, cached=0),
    "openai_responses": Truth(22, 1211, 19884, reasoning=147, cached=1024),
    # OpenRouter: prompt_tokens_details.cache_write_tokens is a part of prompt_tokens
    "openrouter_chat": Truth(28, 9590, 15380, reasoning=2781, cached=682, cache_write=0),
    # SGLang /generate: meta_info counts (cached_tokens a part of prompt_tokens)
    "sglang_generate": Truth(3, 192, 6, cached=0),
    "sglang_wrapped_raw": Truth(3, 192, 6, cached=0),  # the same records under `raw`
    # Vertex batch prediction: `response` is Gemini's; "status": "" is a success, any other
    # status the failure
    "vertex_batch": Truth(5, 165, 29462, flags={"failed_requests": 1}),
    "vllm_openai_server": Truth(3, 73, 2109),
    # xAI: completion_tokens leaves out the reasoning (total = prompt + completion + reasoning)
    "xai_rest": Truth(2, 80, 69, reasoning=0, cached=5),
    "xai_sdk_response": Truth(20, 2809, 28855, reasoning=2025, cached=16580),
    "zai_chat": Truth(9, 1744, 749, reasoning=1542, cached=4),
}


def got(block: dict[str, Any]) -> Truth:
    """What the stats JSON says about a dataset, as a Truth."""
    quality = block["quality"]
    return Truth(
        block["n_done"],
        block["total_comp"],
        block["total_prompt"],
        block["total_reasoning"],
        block["total_cached_prompt"],
        block["total_cache_write"],
        block["stream_chunks"],
        {k: v for k, v in quality.items() if isinstance(v, int) and v and k not in HEALTH},
    )


# The run's health (truncation, repeated answers, drift) is no property of a record's counts:
# recorded test cassettes repeat their answers on purpose.
HEALTH = {rule.name for rule in RULES if rule.family.startswith("outputs_not_")}


@pytest.fixture(scope="module")
def stats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One collect of the whole tree, with no genledger.toml (the tree is read only)."""
    out = tmp_path_factory.mktemp("realworld")
    config = Config(data_root=DATA, stats_path=out / "stats.json", state_dir=out / "state")
    return refresh(config).stats


def test_every_realworld_dataset_has_a_truth() -> None:
    assert {p.name for p in DATA.iterdir() if p.is_dir()} == set(TRUTH)


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_each_realworld_dataset_counts_exactly(name: str, stats: dict[str, Any]) -> None:
    assert got(stats["datasets"][name]) == TRUTH[name]


def test_the_buckets_add_up_to_the_totals(stats: dict[str, Any]) -> None:
    # every dataset here reports prompt and completion on each counted record
    for name, block in stats["datasets"].items():
        output = (block["total_output_visible"] or 0) + (block["total_reasoning"] or 0)
        inputs = (block["total_input_uncached"] or 0) + (block["total_cached_prompt"] or 0)
        assert output == block["total_comp"], name
        assert inputs + (block["total_cache_write"] or 0) == block["total_prompt"], name


def lines() -> list[tuple[str, bytes]]:
    """Every JSONL line of both trees, named by its dataset and line number."""
    found = []
    paths = [*sorted(DATA.glob("*/*.jsonl")), *sorted(DATA2.glob("*/*.jsonl"))]
    for path in paths:
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            if line.strip():
                found.append((f"{path.parent.name}:{number}", line))
    return found


LINES = lines()


@pytest.mark.parametrize(("where", "line"), LINES, ids=[w for w, _ in LINES])
def test_the_fast_path_gives_the_general_facts_on_every_real_line(where: str, line: bytes) -> None:
    assert_same(line, "responses")


def test_every_real_record_takes_the_fast_path() -> None:
    # Guards the lever: every format, built-in or declared, takes a fast tier (docs/performance.md)
    # failed requests and records without counts are worded by the general path.
    for where, line in LINES:
        facts = facts_of_line(line, "responses")
        if any(f.failed_request or f.missing_detail for f in facts):
            continue
        assert fast_facts(line, "responses") == facts, where


# --- ../shared/realworld2: other projects' recorded fixtures and cassettes, streams saved event
# by event among them; the truth is the test-side reading of realworld_truth.py

needs_data2 = pytest.mark.skipif(not DATA2.is_dir(), reason=f"no recorded responses at {DATA2}")


@pytest.fixture(scope="module")
def stats2(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One collect of the second tree, with no genledger.toml."""
    out = tmp_path_factory.mktemp("realworld2")
    config = Config(data_root=DATA2, stats_path=out / "stats.json", state_dir=out / "state")
    return refresh(config).stats


@needs_data2
def test_every_realworld2_dataset_has_a_reader() -> None:
    assert {p.name for p in DATA2.iterdir() if p.is_dir()} == set(READERS)


@needs_data2
@pytest.mark.parametrize("name", sorted(READERS))
def test_each_realworld2_dataset_counts_its_requests_exactly(
    name: str, stats2: dict[str, Any]
) -> None:
    # records = requests (a stream is one), every event a chunk, usage merged over a
    # stream's events by the provider's rules, failed requests, and empty answers judged on
    # the request, never on an event (a Gemini stream's last chunk has no text)
    truth, block = truth_of(DATA2 / name), stats2["datasets"][name]
    quality = block["quality"]
    assert (
        block["n_done"],
        block["total_comp"],
        block["total_prompt"],
        block["total_reasoning"],
        block["total_cached_prompt"],
        block["total_cache_write"],
        block["stream_chunks"],
        quality["failed_requests"],
        quality["empty_outputs"],
    ) == (
        truth.records,
        truth.completion,
        truth.prompt,
        truth.reasoning,
        truth.cached,
        truth.cache_write,
        truth.chunks,
        truth.failed,
        truth.empty,
    )
    assert quality["missing_tokens"] == 0
