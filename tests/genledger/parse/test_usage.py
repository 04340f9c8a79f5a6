"""Usage buckets that never overlap, and the audit of a record's own numbers
(docs/formats.md, genledger/parse/usage.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.parse.formats import response_facts
from genledger.parse.usage import settle

COUNT = st.one_of(st.none(), st.integers(0, 10_000))
ANY_INT = st.one_of(st.none(), st.integers(-5, 10_000))


@settings(max_examples=500, deadline=None)
@given(COUNT, COUNT, COUNT, COUNT, COUNT, COUNT)
def test_the_buckets_never_overlap_and_add_up_to_the_totals(
    prompt: Any, completion: Any, reasoning: Any, cached: Any, write: Any, total: Any
) -> None:
    p, c, r, uncached, visible, finding = settle(
        prompt, completion, total, reasoning, cached, write
    )
    if c is not None:
        assert visible is not None and visible >= 0
        assert visible + (r or 0) == c  # total_comp = output_visible + output_reasoning
    if p is not None:
        assert uncached is not None and uncached >= 0
        assert uncached + (cached or 0) + (write or 0) == p  # total_prompt = the three inputs
    if finding is None:  # numbers that agree are kept as they are
        assert (p, c, r) == (prompt, completion, reasoning)
    if total is not None and p is not None and c is not None:
        assert total <= p + c  # a total above the parts was counted as output


@settings(max_examples=500, deadline=None)
@given(COUNT, COUNT, COUNT, COUNT, COUNT)
def test_numbers_that_agree_are_never_flagged(
    prompt: Any, visible: Any, reasoning: Any, cached: Any, write: Any
) -> None:
    completion = None if visible is None else visible + (reasoning or 0)
    whole = None if prompt is None else prompt + (cached or 0) + (write or 0)
    total = None if whole is None or completion is None else whole + completion
    assert settle(whole, completion, total, reasoning, cached, write)[-1] is None


@settings(max_examples=300, deadline=None)
@given(st.tuples(ANY_INT, ANY_INT, ANY_INT, ANY_INT, ANY_INT, ANY_INT))
def test_a_count_that_is_no_count_is_never_made_into_one(counts: tuple[Any, ...]) -> None:
    prompt, completion, reasoning, cached, write, total = counts
    p, c, r, uncached, visible, _ = settle(prompt, completion, total, reasoning, cached, write)
    # a negative (invalid) figure stays what it was, and buckets are never below 0
    for given_, kept in ((prompt, p), (completion, c), (reasoning, r)):
        if given_ is not None and given_ < 0:
            assert kept == given_
    assert uncached is None or uncached >= 0
    assert visible is None or visible >= 0


INT64_MAX = (1 << 63) - 1
NEAR_MAX = st.one_of(
    st.none(), st.integers(0, INT64_MAX), st.integers(INT64_MAX - 10, INT64_MAX), st.just(0)
)


@settings(max_examples=500, deadline=None)
@given(NEAR_MAX, NEAR_MAX, NEAR_MAX, NEAR_MAX, NEAR_MAX, NEAR_MAX)
def test_settled_counts_stay_within_int64(
    prompt: Any, completion: Any, reasoning: Any, cached: Any, write: Any, total: Any
) -> None:
    # every count column holds int64s: a part counted beside its whole, or a total's
    # unitemised output, must not take a count beyond them
    *counts, finding = settle(prompt, completion, total, reasoning, cached, write)
    assert all(-INT64_MAX - 1 <= n <= INT64_MAX for n in counts if n is not None), counts
    if finding is not None and "beyond int64" in finding:
        assert counts[:2] == [prompt, completion]  # left as given
        assert counts[3:] == [None, None]  # the rests unknown


@pytest.mark.parametrize(
    ("usage", "finding", "expected"),
    [
        # Gemini through its OpenAI-compatible endpoint: thoughts only in the total
        ({"prompt_tokens": 35, "completion_tokens": 12, "total_tokens": 109},
         "total_tokens 109 ≠ prompt 35 + completion 12: 62 more output counted as reasoning",
         (35, 74, 62)),
        # xAI read as OpenAI: reasoning beside the completion
        ({"prompt_tokens": 1889, "completion_tokens": 52, "total_tokens": 2102,
          "completion_tokens_details": {"reasoning_tokens": 161}},
         "reasoning_tokens 161 > completion 52: counted beside it", (1889, 213, 161)),
        # a total below the parts: reported, the itemised counts kept
        ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 11},
         "total_tokens 11 ≠ prompt 10 + completion 5", (10, 5, None)),
        ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, None, (10, 5, None)),
    ],
)  # fmt: skip
def test_the_audit_flags_with_the_fields_and_numbers(
    usage: dict[str, Any], finding: str | None, expected: tuple[Any, ...]
) -> None:
    facts = response_facts({"choices": [{"message": {"content": "4"}}], "usage": usage})
    assert facts.format == "openai_chat"
    assert facts.usage_detail == finding
    assert (facts.prompt_tokens, facts.completion_tokens, facts.reasoning_tokens) == expected


def test_a_declaration_that_states_the_quirk_has_nothing_to_flag() -> None:
    record = {
        "choices": [{"message": {"content": "4", "extra_content": {"google": {"thought": True}}}}],
        "usage": {"prompt_tokens": 35, "completion_tokens": 12, "total_tokens": 109},
    }
    facts = response_facts(record)
    assert (facts.format, facts.usage_detail) == ("gemini_openai", None)
    assert (facts.completion_tokens, facts.reasoning_tokens, facts.output_visible) == (74, 62, 12)
