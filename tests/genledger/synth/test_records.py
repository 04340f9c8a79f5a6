"""Each record writer writes the format it is named for, with exactly the counts it is given."""

from __future__ import annotations

import random

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.parse.formats import response_facts
from genledger.parse.tokenized import tokenized_facts
from genledger.synth.records import (
    WRITERS,
    Record,
    failed_batch,
    line,
    no_tokens,
    tokenized,
    vllm,
)

FORMAT_OF = {
    "sglang_generate": "sglang_generate",
    "flat": "flat",
    "openai_chat": "openai_chat",
    "openai_batch": "openai_batch",
    "tgi": "tgi",
    "think_leak": "openai_chat",
    "openai_completion": "openai_completion",
    "wrapped_openai": "wrapped_openai",
    "vllm": "vllm_offline",
    "derived": "derived",
    "openai_responses": "openai_responses",
    "anthropic_message": "anthropic_message",
    "gemini": "gemini",
    "cohere_chat": "cohere_chat",
}
DEFECTS = {"failed_batch", "no_tokens"}
SEEDS = st.integers(0, 2**32 - 1)
RNGS = st.builds(random.Random, SEEDS) | st.builds(np.random.default_rng, SEEDS)


def read_back(record: Record) -> Record:
    """The record as a reader sees it: written as a JSONL line, parsed again."""
    return orjson.loads(line(record))


def test_every_writer_is_named_for_a_format_or_a_defect() -> None:
    assert set(WRITERS) == set(FORMAT_OF) | DEFECTS


@settings(max_examples=60, deadline=None)
@given(rng=RNGS, prompt=st.integers(0, 400), completion=st.integers(0, 400))
def test_each_writer_writes_its_format_with_exactly_the_counts_given(
    rng: random.Random | np.random.Generator, prompt: int, completion: int
) -> None:
    for writer, fmt in FORMAT_OF.items():
        facts = response_facts(read_back(WRITERS[writer]("r", prompt, completion, rng)))
        assert (facts.format, facts.completion_tokens) == (fmt, completion), writer
        assert facts.think_leak is (writer == "think_leak"), writer


@settings(max_examples=30, deadline=None)
@given(rng=RNGS, completion=st.integers(0, 400), samples=st.integers(1, 6))
def test_a_vllm_dump_shares_the_completion_among_its_samples(
    rng: random.Random | np.random.Generator, completion: int, samples: int
) -> None:
    record = read_back(vllm("r", 7, completion, rng, samples=samples))
    lengths = [len(output["token_ids"]) for output in record["outputs"]]
    assert len(lengths) == samples and sum(lengths) == completion
    assert max(lengths) - min(lengths) <= 1
    assert response_facts(record).completion_tokens == completion


def test_the_defect_writers_have_no_count_a_reader_could_take() -> None:
    rng = random.Random(3)
    failed = response_facts(read_back(failed_batch("r", 10, 17, rng)))
    assert (failed.format, failed.failed_request, failed.record_id) == ("openai_batch", True, "r")
    missing = response_facts(read_back(no_tokens("r", 10, 17, rng)))
    assert (missing.format, missing.failed_request, missing.count_type) == (None, False, None)


@settings(max_examples=40, deadline=None)
@given(rng=RNGS, prompt=st.integers(0, 300), completion=st.integers(0, 300))
def test_a_tokenized_sample_masks_the_prompt_and_trains_on_the_completion(
    rng: random.Random | np.random.Generator, prompt: int, completion: int
) -> None:
    sample = read_back(tokenized(prompt, completion, rng, vocab=1000))
    facts = tokenized_facts(sample)
    assert (facts.n_tokens, facts.loss_len, facts.loss_sum) == (
        prompt + completion,
        prompt + completion,
        completion,
    )
    assert all(0 <= i < 1000 for i in sample["input_ids"])
    assert "id" not in sample
    assert read_back(tokenized(1, 1, rng, rid="s1"))["id"] == "s1"


def test_the_same_seed_writes_the_same_bytes() -> None:
    # The demo's `--seed` and the tests' seeded trees rely on it.
    for make in (random.Random, np.random.default_rng):
        first, again = make(9), make(9)
        for writer in WRITERS.values():
            assert line(writer("r", 20, 30, first)) == line(writer("r", 20, 30, again))
