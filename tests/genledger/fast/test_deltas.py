"""The common delta events read in C (`genledger.fast.deltas`) say of a line only what the
definitions say of it (`parse.streams.event_family`, `read_event`), and a file read with the C
scan tallies as one read without it: every real stream line of ../shared/realworld*/data, in
cut reads; events built with the SDKs' own models, with escapes, surrogates, non-ASCII text,
huge counts, cut bytes, keys the family reads and interleaved requests; bugs planted in the C
source are caught."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from anthropic.types import (
    InputJSONDelta,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    TextBlock,
    TextDelta,
    ThinkingDelta,
    ToolUseBlock,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types import Completion, CompletionChoice
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import (
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.responses import ResponseTextDeltaEvent

import genledger.refresh.assemble as assemble
from genledger.fast import deltas
from genledger.fast.deltas import CONTEXT, KINDS, NAMES, read_names
from genledger.fast.events import decoded
from genledger.ledger.streambooks import StreamBooks
from genledger.ledger.tally import FileTally
from genledger.parse.streams import BY_NAME, event_family, read_event
from genledger.refresh.count import tally_blocks
from genledger.tail.lines import Block

from .planted import planted
from .realfiles import FILES

SOURCE = Path(deltas.__file__).with_name("_deltas.c")
EXTENSION = deltas._C
needs_c = pytest.mark.skipif(EXTENSION is None, reason="genledger.fast._deltas not built")
KEPT = frozenset({"n", "t", "r", "tl", "m", "i"})  # all a delta the C scan takes may fold into


def _check(module: ModuleType | None, line: bytes) -> bool:
    """Whether the scan of `line` (by `module`'s) says only what the definitions say; True
    when it took the line."""
    assert module is not None
    got = module.delta(*CONTEXT, line)
    if got is None:
        return False
    kind, key, model, text, reasoning, tools = got
    obj = decoded(line)
    assert obj is not None, line
    family = event_family(obj)
    assert family is KINDS[kind], line
    acc, start, end, trailing, _ = event = read_event(family, obj)
    if text is None and reasoning is None and tools is None:  # a neutral event: a row alone
        assert event.neutral, line
        return True
    assert not (start or end or trailing or event.neutral), line
    assert set(acc) <= KEPT, line
    got_ = (text, reasoning, tools, key, model)
    assert got_ == (acc.get("t"), acc.get("r"), acc.get("tl"), acc.get("i"), "m" in acc), line
    return True


@needs_c
def test_every_real_line_reads_as_the_definitions() -> None:
    taken = sum(
        _check(EXTENSION, line) for path in FILES for line in path.read_bytes().split(b"\n")
    )
    assert taken > 5_000 or not FILES  # most chat chunks and Anthropic deltas


def test_the_scan_passes_over_no_key_a_family_reads() -> None:
    chat = set(read_names(BY_NAME["openai_chat"]))
    assert {b"usage", b"x_groq", b"x_groq.usage", b"choices.delta.tool_calls"} <= chat
    assert {b"type", b"object", b"error", b"validationException"} <= chat
    assert b"created" not in chat and b"choices.logprobs" not in chat
    assert set(NAMES[1]) >= {b"message", b"usage", b"delta.partial_json", b"delta.stop_reason"}


# --- lines near the families, built with the SDKs' own models ---------------------------------

TEXTS = st.text(  # surrogates, control characters, quotes and non-ASCII as well
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=12
) | st.sampled_from(["", "Hi", 'a "b"\n', "\\", "é👋", "think>", "\u2028"])
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXTS,
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["usage", "text", "a"]), st.integers(0, 5), max_size=2),
)


def _chat(draw: st.DrawFn) -> dict[str, Any]:
    calls = None
    if draw(st.integers(0, 3)) == 0:  # a tool call's pieces, as the SDK's model holds them
        function = ChoiceDeltaToolCallFunction(name=draw(st.none() | TEXTS),
                                               arguments=draw(st.none() | TEXTS))  # fmt: skip
        calls = [ChoiceDeltaToolCall(index=0, id=draw(st.none() | TEXTS), function=function,
                                     type=draw(st.sampled_from([None, "function"])))]  # fmt: skip
    delta = ChoiceDelta(
        content=draw(st.none() | TEXTS), role=draw(st.sampled_from([None, "assistant"])),
        tool_calls=calls,
    )  # fmt: skip
    choice = Choice(index=draw(st.sampled_from([0, 0, 1])), delta=delta,
                    finish_reason=draw(st.sampled_from([None, None, "stop"])))  # fmt: skip
    chunk = ChatCompletionChunk(
        id=draw(st.sampled_from(["a", "b", ""])), choices=[choice],
        created=draw(st.integers(0, 2**40)), model=draw(st.sampled_from(["m", ""])),
        object="chat.completion.chunk",
    )  # fmt: skip
    obj: dict[str, Any] = chunk.model_dump(exclude_none=draw(st.booleans()))
    if draw(st.booleans()):
        obj["choices"][0]["delta"]["reasoning_content"] = draw(st.none() | TEXTS)
    return obj


def _anthropic(draw: st.DrawFn) -> dict[str, Any]:
    delta: Any = draw(st.sampled_from([
        TextDelta(type="text_delta", text=draw(TEXTS)),
        ThinkingDelta(type="thinking_delta", thinking=draw(TEXTS)),
        InputJSONDelta(type="input_json_delta", partial_json=draw(TEXTS)),
    ]))  # fmt: skip
    if draw(st.integers(0, 4)) == 0:
        block = draw(st.sampled_from([TextBlock(type="text", text=""), ToolUseBlock(
            type="tool_use", id="toolu_1", name=draw(TEXTS), input={})]))  # fmt: skip
        start = RawContentBlockStartEvent(type="content_block_start", index=0, content_block=block)
        return start.model_dump()
    event = RawContentBlockDeltaEvent(
        type="content_block_delta", index=draw(st.integers(0, 3)), delta=delta
    )
    return event.model_dump()


def _cohere(draw: st.DrawFn) -> dict[str, Any]:  # no SDK installed: the documented shape
    content = {"type": "text", draw(st.sampled_from(["text", "thinking"])): draw(TEXTS)}
    return {"type": "content-delta", "index": 0, "delta": {"message": {"content": content}}}


def _converse(draw: st.DrawFn) -> dict[str, Any]:  # boto3 yields dicts: the documented shape
    delta = draw(
        st.sampled_from(
            [
                {"text": draw(TEXTS)},
                {"reasoningContent": {"text": draw(TEXTS), "signature": "x"}},
                {"reasoningContent": {"signature": "x"}},
            ]
        )
    )
    if draw(st.integers(0, 3)) == 0:
        return {"contentBlockStop": {"contentBlockIndex": draw(st.integers(0, 3))}}
    return {"contentBlockDelta": {"delta": delta, "contentBlockIndex": 0}}  # fmt: skip


def _responses(draw: st.DrawFn) -> dict[str, Any]:
    event = ResponseTextDeltaEvent(
        type="response.output_text.delta", item_id=draw(st.sampled_from(["msg_1", "é"])),
        output_index=0, content_index=0, delta=draw(TEXTS), logprobs=[],
        sequence_number=draw(st.integers(0, 2**63)),
    )  # fmt: skip
    obj: dict[str, Any] = event.model_dump()
    return obj


def _completion(draw: st.DrawFn) -> dict[str, Any]:
    choice = CompletionChoice(text=draw(TEXTS), index=draw(st.sampled_from([0, 0, 2])),
                              finish_reason=draw(st.sampled_from(["stop", "length"])))  # fmt: skip
    chunk = Completion(id=draw(st.sampled_from(["a", "b", ""])), choices=[choice],
                       created=1, model=draw(st.sampled_from(["m", ""])),
                       object="text_completion")  # fmt: skip
    obj: dict[str, Any] = chunk.model_dump()
    if draw(st.booleans()):  # a stream's chunk: its finish null, its usage absent or null
        obj["choices"][0]["finish_reason"] = None
        obj["usage"] = draw(st.sampled_from([None, {"prompt_tokens": 2}]))
    return obj


MAKERS = [_chat, _anthropic, _cohere, _converse, _responses, _completion]


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every object's place in `obj` (a mutation adds or changes a key there)."""
    found = [at] if isinstance(obj, dict) else []
    children = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for key, value in children:
        found += _paths(value, (*at, key))
    return found


NAMED = sorted({n.decode().rsplit(".", 1)[-1] for names in NAMES for n in names})


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """An event of one of the scan's kinds, some with a key (one the family reads, or none)
    added or changed somewhere."""
    obj = draw(st.sampled_from(MAKERS))(draw)
    if draw(st.integers(0, 4)) == 0:  # a start, an end, another told text
        obj["type"] = draw(st.sampled_from(["response.created", "response.completed", "ping",
                                            "response.", "response", "message_stop"]))  # fmt: skip
    for _ in range(draw(st.integers(0, 2))):
        where: Any = obj
        for key in draw(st.sampled_from(_paths(obj))):
            where = where[key]
        where[draw(st.sampled_from([*NAMED, "created", "x"]))] = draw(VALUES)
    return obj


def _spelled(draw: st.DrawFn, obj: dict[str, Any]) -> bytes:
    """`obj` as some writer spells it: orjson, Python's json (ASCII escapes, spaces), or
    either cut short or with a byte changed."""
    writers = [
        lambda: json.dumps(obj).encode("utf-8", "surrogatepass"),
        lambda: json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    ]
    if _dumpable(obj):  # orjson writes no lone surrogate, no int past 64 bits
        writers.append(lambda: orjson.dumps(obj))
    line = draw(st.sampled_from(writers))()
    how = draw(st.sampled_from(["whole", "whole", "cut", "byte"]))
    if how == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    elif how == "byte" and line:
        at = draw(st.integers(0, len(line) - 1))
        line = line[:at] + bytes([draw(st.integers(0, 255))]) + line[at + 1 :]
    return line


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    return _spelled(draw, draw(events()))


def _dumpable(obj: Any) -> bool:
    try:
        orjson.dumps(obj)
    except orjson.JSONEncodeError:  # a lone surrogate: Python's json writes it, orjson not
        return False
    return True


@needs_c
@settings(max_examples=3_000, deadline=None)
@given(lines())
def test_any_line_near_the_families_reads_as_the_definitions(line: bytes) -> None:
    _check(EXTENSION, line)


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_usual_deltas_are_taken(data: st.DataObject) -> None:
    """Not vacuous: a delta (or an event of nothing), of index 0 and no finish, as orjson
    writes it, is read by the C scan."""
    maker = data.draw(st.sampled_from(MAKERS))
    obj = maker(data.draw)
    if not _dumpable(obj):
        return
    family = event_family(obj)
    assert EXTENSION is not None
    if family is None:  # no event (a completion's last object, with its usage)
        assert EXTENSION.delta(*CONTEXT, orjson.dumps(obj)) is None
        return
    acc, start, end, trailing, _ = read_event(family, obj)
    usual = not (start or end or trailing) and set(acc) <= KEPT
    if maker in (_chat, _completion):
        choice = obj["choices"][0]
        usual = usual and choice["index"] == 0 and choice.get("finish_reason") is None
    usual = usual and "name" not in obj.get("content_block", {})  # a tool's start: the readers'
    assert (EXTENSION.delta(*CONTEXT, orjson.dumps(obj)) is not None) == usual, obj


CHUNK = b'{"object":"chat.completion.chunk","choices":[{"index":0,"delta":%s}]}'
TWICE = [  # a key given twice: orjson keeps the last value
    CHUNK % b'{"content":"a","content":"b"}',
    CHUNK % b'{"content":"a","tool_calls":[{"function":{"arguments":"x","arguments":"y"}}]}',
    b'{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},'
    b'"delta":{}}]}',
    b'{"type":"content-delta","delta":{"message":{"content":{"text":"a"}},"message":{}}}',
    b'{"contentBlockDelta":{"delta":{"reasoningContent":{"text":"a"},"reasoningContent":{}}}}',
    b'{"type":"content_block_delta","delta":{"text":"a"},"delta":{"type":"x"}}',
]


@needs_c
@pytest.mark.parametrize("line", TWICE)
def test_a_key_given_twice_is_left_to_the_readers(line: bytes) -> None:
    assert EXTENSION is not None and EXTENSION.delta(*CONTEXT, line) is None
    assert EXTENSION.delta(*CONTEXT, line.replace(b'"a"', b'"a",\n"k":1')) is None


# --- whole files: with the scan and without, whole and cut --------------------------------------


def _tally(data: bytes, start: int, cuts: list[int]) -> FileTally:
    """The tally of `data` (lines from file offset `start`) read in pieces cut at `cuts`
    (line indexes), added up."""
    lines_ = data.splitlines(keepends=True)
    at = sorted({c % (len(lines_) + 1) for c in cuts} | {0, len(lines_)})
    total, offset, before = FileTally(), start, 0
    for first, stop in itertools.pairwise(at):
        piece = b"".join(lines_[first:stop])
        block = Block(piece, offset, 0, len(piece))
        total = total + tally_blocks([block], "f.jsonl", "responses").shifted(before)
        offset, before = offset + len(piece), before + stop - first
    return total


def _settled(tally: FileTally) -> tuple[FileTally, Any]:
    return tally.settle_streams(StreamBooks("f.jsonl")), tally.streams.to_dict()


def _both(data: bytes, cuts: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The tally of `data` with the C scan equals the one without, whole and cut at `cuts`
    (a cut read's examples may differ from a whole read's: each is held to its own)."""
    fast = [_settled(_tally(data, 0, c)) for c in ([], cuts)]
    with monkeypatch.context() as patch:
        patch.setattr(assemble, "delta_of", None)
        slow = [_settled(_tally(data, 0, c)) for c in ([], cuts)]
    assert fast == slow


STREAM_FILES = (
    [p for p in FILES if any(_check(EXTENSION, x) for x in p.read_bytes().split(b"\n")[:400])]
    if EXTENSION
    else []
)


@needs_c
@pytest.mark.parametrize(
    "path", STREAM_FILES, ids=[f"{p.parents[2].name}/{p.parent.name}" for p in STREAM_FILES]
)
def test_every_real_stream_file_tallies_alike_whole_and_cut(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = path.read_bytes()
    count = data.count(b"\n")
    _both(data, [count // 3, count // 2 + 1, count - 2], monkeypatch)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Interleaved requests of one family: a first chunk of each id, deltas (some with usage,
    finishes, other ids or none), as the SDKs' models write them."""
    kind = draw(st.sampled_from(["chat", "anthropic"]))
    out = []
    for _ in range(draw(st.integers(1, 25))):
        if kind == "chat":
            obj = _chat(draw)
            if draw(st.integers(0, 9)) == 0:
                obj["usage"] = {
                    "prompt_tokens": draw(st.integers(0, 2**63)),
                    "completion_tokens": 3,
                }
                obj["choices"] = draw(st.sampled_from([[], obj["choices"]]))
        else:
            obj = draw(st.sampled_from([_anthropic, lambda d: {"type": "message_start", "message": {
                "id": d(st.sampled_from(["a", "b"])), "model": "m", "usage": {"input_tokens": 5}}},
                lambda d: {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": d(st.integers(0, 2**40))}},
                lambda d: {"type": "message_stop"}]))(draw)  # fmt: skip
        if _dumpable(obj):
            out.append(_spelled(draw, obj) if draw(st.integers(0, 7)) == 0 else orjson.dumps(obj))
    return b"\n".join(out) + b"\n"


@needs_c
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=streams(), cuts=st.lists(st.integers(0, 10**6), max_size=3))
def test_interleaved_streams_cut_anywhere_tally_alike(
    data: bytes, cuts: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _both(data, cuts, monkeypatch)


# --- bugs planted in the C source are caught -----------------------------------------------------

FINISH = 'if (key_is(k, "finish_reason"))\n        return '
READ = "(size_t)k->size) == 0)\n            "
BAD = "        if (!size)\n                "
PLANTED = {
    "an escape misread": ("e == 'n' ? '\\n'", "e == 'n' ? 'n'"),
    "a finish passed over": (FINISH + "is_null(c) ? SURE : UNSURE;", FINISH + "skip_value(c, 3);"),
    "a read key passed over": (READ + "return 1;", READ + "return 0;"),
    "an empty id kept": ("value_of(&d->id, 0)", "value_of(&d->id, 1)"),
    "a tool call's noise kept": ("passed ? skip_value(c, depth", "0 ? skip_value(c, depth"),
    "a bad byte let through": (BAD + "return UNSURE;\n            p += size;",
                               BAD + "size = 1;\n            p += size;"),
    "another choice's index taken": ("*c->at != '0')", "*c->at == '-')"),
    "an escape in a long text missed": ("_mm_cmpeq_epi8(here, backslash)", "_mm_setzero_si128()"),
}  # fmt: skip

CRAFTED = [
    b'{"type":"content_block_delta","delta":{"text":"a text longer than sixteen bytes\\n, then"}}',
    b'{"id":"a","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"x\\ny"},"finish_reason":null}]}',
    b'{"id":"a","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}',
    b'{"id":"a","object":"chat.completion.chunk","model":"m","usage":{"prompt_tokens":1},"choices":[{"index":0,"delta":{"content":"x"}}]}',
    b'{"id":"","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"x"}}]}',
    b'{"id":"a","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"\xff"}}]}',
    b'{"object":"chat.completion.chunk","choices":[{"delta":{"tool_calls":[{"index":0,"type":"f",'
    b'"function":{"arguments":"{}"}}]}}]}',
    b'{"id":"a","object":"chat.completion.chunk","x_groq":{"usage":{"prompt_tokens":3}},"choices":[{"index":0,"delta":{"content":"x"}}]}',
    b'{"id":"a","object":"chat.completion.chunk","created":"\xc0\xaf","choices":[{"index":0,"delta":{"content":"x"}}]}',
    b'{"id":"a","object":"chat.completion.chunk","model":"m","choices":[{"index":1,"delta":{"content":"x"}}]}',
]


@needs_c
@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_a_planted_bug_is_caught(bug: str, tmp_path: Path) -> None:
    module = planted(SOURCE, tmp_path, PLANTED[bug])
    for line in CRAFTED:  # the right scan holds on these
        _check(EXTENSION, line)
    with pytest.raises(AssertionError):
        for line in CRAFTED:
            _check(module, line)
