"""The fast tiers equal the general path on every real recorded line (../shared/realworld*/data,
beside the project; without them these tests skip), read in file order as a refresh reads them
(so the shape memory and the typed tier's rests are exercised), and the typed shapes take the
real chat completions and Responses records."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genledger.config import Switches
from genledger.fast import lines as fastparse
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line

from .realfiles import FILES, SHARED
from .test_lines import assert_same

pytestmark = pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")


def _name(path: Path) -> str:
    return f"{path.parents[2].name}/{path.parent.name}"


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _streamed(path: Path) -> bool:
    """A dataset saved event by event (left to the general path: issue 31 assembles them)."""
    return any(word in path.parent.name for word in ("stream", "chunk"))


def _general(line: bytes) -> object:
    try:
        return facts_of_line(line, "responses")
    except Malformed as exc:
        return ("malformed", str(exc))


@pytest.mark.parametrize("path", FILES, ids=[_name(p) for p in FILES])
def test_every_real_line_in_file_order_gives_the_general_facts(path: Path) -> None:
    decoder = fastparse.FastDecoder("responses", BUILT_IN_ONLY, Switches())
    for number, line in enumerate(_lines(path), start=1):
        fast = decoder.facts(line, NOTHING_PLAIN)
        if fast is not None:
            assert fast == _general(line), (_name(path), number)


# realworld's lines take every tier and flag alone in tests/genledger/parse/test_realworld.py
WHOLE = [p for p in FILES if p.parents[2].name != "realworld" and not _streamed(p)]
LINES = [(f"{_name(p)}:{n}", line) for p in WHOLE for n, line in enumerate(_lines(p), start=1)]


@pytest.mark.parametrize(("where", "line"), LINES, ids=[w for w, _ in LINES])
def test_every_tier_gives_the_general_facts_on_real_records(where: str, line: bytes) -> None:
    assert_same(line, "responses")


def _completions(path: Path) -> list[bytes]:
    """The lines that are one successful chat completion or Responses record with usage,
    a non-empty text answer and no think tag, by the records themselves."""
    found = []
    for line in _lines(path):
        record = orjson.loads(line)
        kind = record.get("object") if isinstance(record, dict) else None
        if kind == "chat.completion" and "usage" in record and "x_groq" not in record:
            messages = [c.get("message") or {} for c in record.get("choices") or []]
            contents = [m.get("content") for m in messages]
            if all(isinstance(c, str) and c and "think>" not in c for c in contents):
                found.append(line)
    return found


CHAT = [p for p in FILES if not _streamed(p) and _completions(p)]


@pytest.mark.parametrize("path", CHAT, ids=[_name(p) for p in CHAT])
def test_real_chat_completions_take_the_typed_shapes(path: Path) -> None:
    # Real providers write service_tier, system_fingerprint, logprobs: null, refusal: null,
    # annotations: [], *_tokens_details objects, costs and timings: the typed shapes accept
    # them (a provider's declared extras, e.g. xAI's or Gemini's, go on to their formats).
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    for line in _completions(path):
        facts = facts_of_line(line, "responses")
        if facts[0].format not in ("openai_chat", "openai_completion"):
            continue  # another declaration reads it (xai_chat, gemini_openai)
        assert typed.decode(line, NOTHING_PLAIN) == facts, line[:200]


def test_the_typed_tier_rests_after_lines_no_shape_holds_and_comes_back() -> None:
    events = next(p for p in FILES if p.parent.name == "anthropic_stream_events")
    chat = next(p for p in FILES if p.parent.name == "openai_chat")
    decoder = fastparse.FastDecoder("responses", BUILT_IN_ONLY, Switches())
    for line in _lines(events)[: fastparse.TYPED_PATIENCE]:
        decoder.facts(line, NOTHING_PLAIN)
    assert decoder.skip > 0  # resting: the next lines go to the other tiers
    rest = decoder.skip
    lines = _lines(chat)[: rest + 1]
    for line in lines:  # answered all the same, by the stand-ins while resting
        assert decoder.facts(line, NOTHING_PLAIN) == facts_of_line(line, "responses")
    assert decoder.skip == 0 and decoder.misses == 0  # the typed tier read the last one


def test_real_converse_replies_take_the_typed_shapes() -> None:
    # Bedrock Converse replies (text, reasoning, tool use; both usage spellings) are typed.
    path = next(p for p in FILES if p.parent.name == "bedrock_converse")
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    replies = [line for line in _lines(path) if b'"output"' in line and b'"usage"' in line]
    assert replies
    for line in replies:
        facts = facts_of_line(line, "responses")
        assert facts[0].format == "bedrock_converse"
        assert typed.decode(line, NOTHING_PLAIN) == facts, line[:200]


COUNT = st.one_of(st.none(), st.integers(-3, 10**6), st.just("7"), st.just(2**63))
USAGE_KEYS = (
    "outputTokens", "inputTokens", "totalTokens", "cacheReadInputTokens",
    "cacheWriteInputTokens", "cacheReadInputTokenCount", "cacheWriteInputTokenCount",
)  # fmt: skip
PART = st.one_of(
    st.fixed_dictionaries(
        {"text": st.one_of(st.none(), st.sampled_from(["", " ", "hi", "<think>"]))}
    ),
    st.fixed_dictionaries(
        {
            "toolUse": st.one_of(
                st.none(), st.just({}), st.just({"name": "f", "input": {"b": 1, "a": [2]}})
            )
        }
    ),
    st.just({"reasoningContent": {"reasoningText": {"text": "why"}}}),
    st.just({"thought": True, "text": "x"}),
)


@settings(max_examples=500, deadline=None)
@given(
    st.fixed_dictionaries(
        {"outputTokens": st.one_of(st.integers(0, 10**6), COUNT)},
        optional={key: COUNT for key in USAGE_KEYS[1:]},
    ),
    st.one_of(st.none(), st.lists(PART, max_size=4)),
    st.sampled_from(["output", "no output", "null output", "null message"]),
    st.one_of(st.none(), st.sampled_from(["end_turn", "tool_use", "max_tokens"])),
)
@example({"outputTokens": 5}, [{"toolUse": {}}], "output", None)  # a call shows an answer
@example({"outputTokens": 5}, [{"text": ""}], "output", "end_turn")  # an empty reply
@example(  # Nova's names alone: the second declaration
    {"outputTokens": 5, "inputTokens": 9, "cacheReadInputTokenCount": 4}, [], "output", None
)
def test_converse_records_near_the_typed_shape_give_the_general_facts(
    usage: dict[str, object], content: list[object] | None, output: str, stop: str | None
) -> None:
    # Both usage spellings (the detect picks the declaration), nulls, negative and
    # out-of-range counts, text and tool-use answers, empty replies, unknown part keys.
    record: dict[str, object] = {"usage": usage, "stopReason": stop, "metrics": {"latencyMs": 1}}
    if output == "output":
        record["output"] = {"message": {"role": "assistant", "content": content}}
    elif output == "null output":
        record["output"] = None
    elif output == "null message":
        record["output"] = {"message": None}
    assert_same(orjson.dumps(record), "responses")


def test_real_gemini_function_calls_take_the_typed_shapes() -> None:
    # A Gemini reply calling a function (content parts with `functionCall`) is typed; its
    # answer is read by the general answer rules.
    path = next(p for p in FILES if p.parent.name == "gemini_native")
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    calls = [
        line
        for line in _lines(path)
        if b'"functionCall"' in line and b'"finishReason"' in line and b"blockReason" not in line
    ]
    assert calls
    for line in calls:
        assert typed.decode(line, NOTHING_PLAIN) == facts_of_line(line, "responses"), line[:200]


def test_the_first_key_rules_out_only_shapes_that_cannot_hold_a_line() -> None:
    # The typed tier skips the shapes a line's first key rules out: on every real line, and on
    # each real record re-keyed in every order of its top-level keys, it takes exactly the
    # lines it takes when every shape is tried.
    every = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    every._holding = lambda content: None  # type: ignore[method-assign]
    keyed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    held = 0
    for path in FILES:
        for line in _lines(path):
            record = orjson.loads(line)
            variants = [line]
            if isinstance(record, dict) and len(record) > 1:
                keys = list(record)
                variants += [orjson.dumps({k: record[k] for k in keys[i:] + keys[:i]})
                             for i in range(1, len(keys))]  # fmt: skip
            for variant in variants:
                expected = every.decode(variant, NOTHING_PLAIN)
                assert keyed.decode(variant, NOTHING_PLAIN) == expected, variant[:200]
                held += expected is not None
    assert held > 1000
    assert keyed.holding  # the first keys were looked up
