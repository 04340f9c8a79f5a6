"""The fast line decoder gives exactly the general path's facts (or its Malformed reason)."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
from typing import Any

import msgspec
import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast import lift, rawtext, vector
from genledger.fast import lines as fastparse
from genledger.fast.rawtext import NOTHING_PLAIN as NOTHING
from genledger.parse.declarations import BUILT_IN_ONLY, FormatSet
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line as general_facts
from genledger.refresh.count import line_facts
from genledger.refresh.reading import Reading
from genledger.synth import corpus

from ..hard_lines import (
    API_RESPONSES,
    RESPONSE_LINES,
    RESPONSE_RECORDS,
    SHAPE_LINES,
    SHAPED_RESPONSES,
    SHAPED_TOKENIZED,
    TOKENIZED_LINES,
    TOKENIZED_RECORDS,
    TOKENIZED_SHAPE_LINES,
    V3_RESPONSES,
    encodings,
)


def outcome(decode: Any, line: bytes, role: str) -> Any:
    """Facts, or the Malformed reason, of one line."""
    try:
        return decode(line, role)
    except Malformed as exc:
        return ("malformed", str(exc))


@contextlib.contextmanager
def lifting_every_array() -> Any:
    """Lift arrays of any length (`genledger.fast.lift`), not only long ones."""
    saved, lift.MIN_SPAN = lift.MIN_SPAN, 0
    try:
        yield
    finally:
        lift.MIN_SPAN = saved


def assert_same(line: bytes, role: str, formats: FormatSet = BUILT_IN_ONLY) -> None:
    """Every path, and the typed shapes alone when they take the line, give the general facts
    (under `formats`: the typed shapes answer only under the built-in ones), with long arrays
    lifted and with every array lifted."""
    expected = outcome(lambda c, r: general_facts(c, r, formats), line, role)
    _assert_fast_tiers(line, role, formats, expected, False)
    with lifting_every_array():
        _assert_fast_tiers(line, role, formats, expected, True)


@functools.cache
def _typed(role: str, lifted: bool) -> fastparse._Typed:
    """The typed tier of `role` (made once: its guards take a while), lifting or not."""
    if role == "tokenized":
        return fastparse._Typed(fastparse.TOKENIZED_SHAPES)
    return fastparse._Typed(
        fastparse.RESPONSE_SHAPES, fastparse.LIFTED_RESPONSE_KEYS if lifted else None
    )


@functools.cache
def _stand_ins(role: str, formats: FormatSet, lifted: bool) -> fastparse._Decoder:
    return fastparse._Decoder(role, formats, lifted)


def _assert_fast_tiers(
    line: bytes, role: str, formats: FormatSet, expected: Any, every_array: bool
) -> None:
    if role == "tokenized":  # the lifted tier alone
        lifted = fastparse._lifted_tokenized_line(line)
        assert lifted is None or lifted == expected, line[:200]
    all_flags = read_flags(line)  # the text lever's checks, both ways, and none
    for flags in all_flags:
        assert outcome(_with(flags, formats), line, role) == expected, (line[:200], flags)
    if formats.built_in_only or role == "tokenized":
        # with every array lifted, only the lifting typed tier, with and without plain texts
        lifting = (True,) if every_array else (False, True)
        for lifted in lifting if role == "responses" else (False,):
            typed = _typed(role, lifted)
            for flags in all_flags[::2] if every_array else all_flags:
                for last in range(len(typed.shapes)):  # whichever shape is tried first
                    typed.last = last
                    facts = typed.decode(line, flags)
                    if facts is not None:
                        assert facts == expected, (line[:200], flags, lifted)
    # the stand-in tier alone, which the typed shapes now keep from most common lines
    for lifted in (True,) if every_array else (False, True):
        decoder = _stand_ins(role, formats, lifted)
        with contextlib.suppress(msgspec.DecodeError, fastparse._Unusual):
            assert decoder.decode(line) == expected, (line[:200], lifted)


def read_flags(line: bytes) -> list[rawtext.ReadFlags]:
    """The flags a read holding just this line gets: by bytes methods, vectorised, and none."""
    data = line + b"\n"
    assert vector.load()
    return [
        rawtext.NOTHING_PLAIN,
        rawtext.bytes_flags(data, len(data)),
        rawtext.vectorised_flags(data, len(data)),
    ]


def _with(flags: rawtext.ReadFlags, formats: FormatSet = BUILT_IN_ONLY) -> Any:
    reading = Reading(formats)
    return lambda line, role: line_facts(line, role, flags, reading)


@pytest.mark.parametrize("line", RESPONSE_LINES)
def test_response_hard_lines_give_the_general_facts(line: bytes) -> None:
    assert_same(line, "responses")


@pytest.mark.parametrize("line", TOKENIZED_LINES)
def test_tokenized_hard_lines_give_the_general_facts(line: bytes) -> None:
    assert_same(line, "tokenized")


@pytest.mark.parametrize("line", RESPONSE_LINES + TOKENIZED_LINES)
def test_a_response_line_read_as_tokenized_and_back_still_agrees(line: bytes) -> None:
    assert_same(line, "tokenized")
    assert_same(line, "responses")


def test_the_fast_path_really_decodes_the_common_shapes() -> None:
    # Guards the lever itself: these must not fall back, or the speed-up silently vanishes.
    decoder = fastparse._Decoder("responses", BUILT_IN_ONLY)
    for line in RESPONSE_LINES[:7]:
        if general_facts(line, "responses")[0].format is not None:  # a missing count is rare
            assert decoder.decode(line)
    assert fastparse._Decoder("tokenized", BUILT_IN_ONLY).decode(TOKENIZED_LINES[0])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_generated_response_records_give_the_general_facts(data: st.DataObject) -> None:
    record = data.draw(st.one_of(RESPONSE_RECORDS, st.lists(RESPONSE_RECORDS, max_size=3)))
    assert_same(data.draw(encodings(record)), "responses")


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_generated_tokenized_records_give_the_general_facts(data: st.DataObject) -> None:
    record = data.draw(st.one_of(TOKENIZED_RECORDS, st.lists(TOKENIZED_RECORDS, max_size=3)))
    assert_same(data.draw(encodings(record)), "tokenized")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_give_the_general_outcome(line: bytes) -> None:
    assert_same(line, "responses")
    assert_same(line, "tokenized")


@pytest.mark.parametrize("line", SHAPE_LINES)
def test_near_misses_of_the_typed_shapes_give_the_general_facts(line: bytes) -> None:
    assert_same(line, "responses")


@pytest.mark.parametrize("line", TOKENIZED_SHAPE_LINES)
def test_near_misses_of_the_tokenized_shape_give_the_general_facts(line: bytes) -> None:
    assert_same(line, "tokenized")


def test_the_typed_shapes_take_every_format_of_the_benchmark_corpus() -> None:
    # Guards the lever: every corpus shape's own records (and batches of them) must not fall
    # back, each written as its shape writes it (orjson, or Python's json with spaces).
    rng = np.random.default_rng(3)
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    seen: set[tuple[corpus.Maker, bool]] = set()
    for shape in corpus.SHAPES.values():
        for maker in shape.makers("responses"):
            if (maker, shape.python_writer) in seen:
                continue
            seen.add((maker, shape.python_writer))
            records = [maker(f"r{i}", rng) for i in range(30)]
            taken = 0
            for record in [*records, records[:4]]:
                line = shape.dumps(record)
                facts = typed.decode(line, read_flags(line)[-1])
                taken += facts is not None
                assert_same(line, "responses")
            # a few failed requests and think leaks fall back
            assert taken >= 25, (shape.name, maker.__name__)
        for maker in shape.makers("tokenized"):
            line = shape.dumps(maker("t", rng))
            # the typed tokenized shape is the lifted tier's fallback (which takes them all:
            # test_every_benchmark_corpus_tokenized_sample_takes_the_lifted_tier)
            tokenized = fastparse._Typed(fastparse.TOKENIZED_SHAPES).decode(
                line, rawtext.NOTHING_PLAIN
            )
            if tokenized is not None:
                assert tokenized == general_facts(line, "tokenized"), (shape.name, maker)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_generated_near_shape_responses_give_the_general_facts(data: st.DataObject) -> None:
    record = data.draw(st.one_of(SHAPED_RESPONSES, st.lists(SHAPED_RESPONSES, max_size=3)))
    assert_same(data.draw(encodings(record)), "responses")


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_generated_near_shape_api_records_give_the_general_facts(data: st.DataObject) -> None:
    # the hosted APIs' shapes (fast/apishapes.py) are many: they get their own examples
    record = data.draw(st.one_of(API_RESPONSES, st.lists(API_RESPONSES, max_size=2)))
    assert_same(data.draw(encodings(record)), "responses")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_generated_near_shape_tokenized_rows_give_the_general_facts(data: st.DataObject) -> None:
    record = data.draw(st.one_of(SHAPED_TOKENIZED, st.lists(SHAPED_TOKENIZED, max_size=3)))
    assert_same(data.draw(encodings(record)), "tokenized")


def test_every_typed_shape_is_tried_by_the_fast_path() -> None:
    # Guards the lever: the hosted APIs' shapes are in the typed tier, each taking its format.
    rng = np.random.default_rng(4)
    formats = {
        corpus.responses_api: "openai_responses",
        corpus.anthropic: "anthropic_message",
        corpus.gemini: "gemini",
        corpus.cohere: "cohere_chat",
        corpus.vllm_n4: "vllm_offline",
    }
    for maker, name in formats.items():
        line = corpus.REFERENCE.dumps(maker("r", rng))
        for flags in read_flags(line):
            facts = fastparse._Typed(fastparse.RESPONSE_SHAPES).decode(line, flags)
            assert facts is not None and facts[0].format == name, maker.__name__
            assert facts == general_facts(line, "responses")


def test_a_shapes_decoders_are_made_only_once_it_is_tried() -> None:
    # Guards the lever: a line of the Nth shape makes its decoders and at most those of the
    # shapes before it (only those its first key allows), none after it; a decode with all of
    # them made gives the same facts.
    rng = np.random.default_rng(5)
    shapes = fastparse.RESPONSE_SHAPES
    for maker in (corpus.sglang, corpus.batch, corpus.anthropic):
        line = corpus.REFERENCE.dumps(maker("r", rng))
        typed = fastparse._Typed(shapes)
        facts = typed.decode(line, NOTHING)
        assert facts is not None, maker.__name__
        made = [d is not None for d in typed.decoders]
        assert made[typed.last] and not any(made[typed.last + 1 :]), maker.__name__
        whole = fastparse._Typed(shapes)
        for index in range(len(shapes)):
            whole.decoder(index)
        assert whole.decode(line, NOTHING) == facts == general_facts(line, "responses")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([b"a", b"<", b"/", b"\\", b"\r", b" ", b"\xef\xbb\xbf",
                                  b"think", b">", b"think>"]),
                 max_size=12).map(b"".join),
        min_size=1, max_size=6,
    )
)  # fmt: skip
def test_a_reads_tagged_line_lengths_cover_every_line_with_a_think_tag(parts: list[bytes]) -> None:
    # The lengths a tagged line may have, as `rows()` cuts it: no line holding `think>` may
    # pass for one without, or its texts would skip the think-tag check.
    data = b"\n".join(parts) + b"\n"
    assert vector.load()
    for flags in (rawtext.bytes_flags(data, len(data)), rawtext.vectorised_flags(data, len(data))):
        if not flags.utf8 or flags.tag_lines is None:
            continue
        for line in parts:
            for content in (line, line.removesuffix(b"\r"), line.removeprefix(b"\xef\xbb\xbf")):
                if b"think>" in content:
                    assert flags.think_tags and len(content) in flags.tag_lines, (data, content)


def test_a_read_with_many_angle_brackets_makes_every_line_search() -> None:
    data = b'{"text": "' + b"a</think> " * (rawtext.MAX_TAG_WALK + 1) + b'"}\n'
    assert vector.load()
    assert rawtext.vectorised_flags(data, len(data)).tag_lines is None
    plain = rawtext.ReadFlags(True, False, True, frozenset({5}))
    assert not rawtext.plain_line(b'{"text": "a</think>"}', rawtext.ReadFlags(True, False, True))
    assert rawtext.plain_line(b'{"text": "a</think>"}', plain)  # not a tagged length: skipped
    assert not rawtext.plain_line(b"think>", rawtext.ReadFlags(True, False, True, frozenset({6})))


def test_lines_read_together_share_their_reads_flags() -> None:
    # A read's flags are those of all its lines: a risky spelling in one line must not make
    # another line's texts skip a check they need, nor let its own through.
    lines = [*RESPONSE_LINES, *SHAPE_LINES]
    data = b"\n".join(lines) + b"\n"
    assert vector.load()
    for flags in (rawtext.bytes_flags(data, len(data)), rawtext.vectorised_flags(data, len(data))):
        for line in lines:
            assert outcome(_with(flags), line, "responses") == outcome(
                general_facts, line, "responses"
            ), line[:200]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 64))
def test_vectorised_flags_are_never_bolder_than_bytes_flags(data: bytes, cut: int) -> None:
    # Both readings of a read may differ only where the vectorised one knows more (UTF-8);
    # it may also not tell (these bytes are seldom JSON lines): never call invalid bytes valid.
    data = data.replace(b"\n", b" ") + b"\n"
    assert vector.load()
    fast, slow = rawtext.vectorised_flags(data, len(data)), rawtext.bytes_flags(data, len(data))
    if slow.utf8:  # where the bytes reading sees a risk, so does the vectorised one
        assert fast.risky_escapes >= slow.risky_escapes
        assert fast.think_tags >= slow.think_tags
    try:
        data.decode()
    except UnicodeDecodeError:
        assert not fast.utf8


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from([b"\\", b"u", b"\\u00", b"\\u00e9", b"0", b"7", b"8", b"a"]),
             max_size=80),
    st.integers(0, 8),
)  # fmt: skip
def test_the_escape_search_finds_exactly_the_ascii_escapes(parts: list[bytes], cut: int) -> None:
    # SIMD search for `\u00`, one by one, then a regex past a few: the same answer as the
    # regex alone over the read's complete lines, however many harmless escapes come first
    data = b"".join(parts)
    end = max(0, len(data) - cut)
    expected = rawtext.ASCII_ESCAPE.search(data, 0, end) is not None
    found = rawtext._risky_escapes(data, end)
    assert found == expected or (found and data.find(b"\\u00", max(0, end - 4), end) >= 0), data


@pytest.mark.parametrize("angles", [0, 1, 255, 256, 257, 600])
@pytest.mark.parametrize("tag", [b"", b"</think>", b"<\\/think>", b"<think>"])
def test_think_tags_are_found_past_many_angle_brackets(angles: int, tag: bytes) -> None:
    data = b'{"text": "' + b"a</b><think " * angles + tag + b'"}\n'
    assert vector.load()
    for flags in (rawtext.bytes_flags, rawtext.vectorised_flags):
        assert flags(data, len(data)).think_tags == bool(tag), (flags, angles, tag)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 40))
def test_vectorised_comma_count_equals_bytes_count(data: bytes, times: int) -> None:
    assert vector.load(numpy=True)
    data = data * times  # past the size from which numpy counts
    assert vector.count_commas(data) == data.count(b",")


ESCAPES = st.sampled_from(
    ["\\ud83d", "\\ude00", "\\uD83D", "\\uDE00", "\\udbff", "\\udfff", "\\ud800", "\\udc00",
     "\\u0041", "\\u00e9", "\\u6570", "\\n", "x", "é"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(ESCAPES, max_size=6))
def test_msgspecs_skip_accepts_exactly_the_escapes_orjson_accepts(units: list[str]) -> None:
    # Plain lines' texts are only skipped (rawtext): surrogate pairing must be checked there
    # as strictly as orjson checks it, or a lone surrogate would count as a record.
    line = ('{"text": "' + "".join(units) + '"}').encode()
    try:
        msgspec.json.decode(line, type=dict[str, msgspec.Raw])
        skipped = True
    except msgspec.DecodeError:
        skipped = False
    try:
        orjson.loads(line)
        parsed = True
    except orjson.JSONDecodeError:
        parsed = False
    assert skipped == parsed, line


def test_decoded_shapes_are_not_tracked_by_the_garbage_collector() -> None:
    # A record is a tree of JSON values (no cycle can form), so its structs skip the collector.
    line = (
        b'{"response": {"body": {"usage": {"completion_tokens": 2}, "choices": [{"message": '
        b'{"content": "a"}}]}}, "custom_id": "c"}'
    )
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    decoded = None
    for index in range(len(typed.shapes)):
        with contextlib.suppress(msgspec.ValidationError):
            decoded = typed.decoder(index)[0].decode(line)
            break
    assert decoded is not None
    assert not gc.is_tracked(decoded)
    assert not gc.is_tracked(decoded.response.body.choices[0].message)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_generated_v3_source_records_give_the_general_facts(data: st.DataObject) -> None:
    # the sources of docs/formats.md (stand-ins only: no typed shape of theirs), their
    # stream pieces and failures, envelopes, and chat records whose numbers disagree
    record = data.draw(st.one_of(V3_RESPONSES, st.lists(V3_RESPONSES, max_size=2)))
    assert_same(data.draw(encodings(record)), "responses")


def _spelled(record: Any) -> list[bytes]:
    """A record as orjson, Python's json and Python's json without ASCII escapes write it."""
    return [
        orjson.dumps(record),
        json.dumps(record).encode(),
        json.dumps(record, ensure_ascii=False).encode(),
    ]


TOKENIZED_VARIANTS = [
    {"input_ids": list(range(1000, 3000)), "loss_mask": [0] * 500 + [1] * 1500},
    {"loss_mask": [0] * 500 + [1] * 1500, "input_ids": list(range(150_000, 152_000)), "id": 7},
    {"id": "s-1", "input_ids": [list(range(2000))], "loss_mask": [[0, 1] * 1000]},
    {"input_ids": list(range(2000)), "attention_mask": [1] * 2000, "labels": [-100] * 500
     + list(range(1500)), "position_ids": list(range(2000)), "loss_mask": [1] * 2000},
    {"conversation_id": "c", "text": "数据 — “q”\n" * 50, "input_ids": list(range(2000)),
     "loss_mask": [0, 1] * 1000, "num_tokens": 2000, "source": {"name": "x", "ids": [1, 2]}},
]  # fmt: skip


@pytest.mark.parametrize("record", TOKENIZED_VARIANTS)
def test_tokenized_records_as_other_pipelines_write_them_take_the_lifted_tier(
    record: dict[str, Any],
) -> None:
    # Guards the lever: other key orders, extra keys, masks first, [1, L] tensors, spaced or
    # compact writers, ensure_ascii=False texts: none may fall back to decoding every id.
    for line in _spelled(record):
        facts = fastparse._lifted_tokenized_line(line)
        assert facts is not None and facts == general_facts(line, "tokenized"), line[:80]


def test_response_records_with_unknown_keys_lift_their_ids_in_the_stand_in_tier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A flat /generate record with keys no typed shape knows: its ids still are not decoded.
    record = {"id": "r", "text": "x", "prompt": "p", "sample": 3, "completion_tokens": 1000,
              "output_ids": list(range(1000)), "input_ids": list(range(300))}  # fmt: skip
    lifted: list[bytes | None] = []

    def spy(content: bytes, keys: Any = None) -> bytes | None:
        lifted.append(small := lift.lift(content, keys))
        return small

    monkeypatch.setattr(fastparse, "lift", spy)
    for line in _spelled(record):
        assert fastparse._Typed(fastparse.RESPONSE_SHAPES).decode(line, NOTHING) is None
        decoder = fastparse._Decoder("responses", BUILT_IN_ONLY, lifted=True)
        assert decoder.decode(line) == general_facts(line, "responses")
        assert lifted[-1] is not None and lifted[-1].count(lift.ESCAPE) == 2


def test_every_benchmark_corpus_tokenized_sample_takes_the_lifted_tier() -> None:
    # Guards the lever on each corpus shape's samples, as each file's writer writes them.
    rng = np.random.default_rng(6)
    for shape in corpus.SHAPES.values():
        for plan in shape.files:
            if plan.role != "tokenized":
                continue
            for maker, _ in plan.mix:
                line = shape.dumps(maker("t", rng), plan.writer)
                facts = fastparse._lifted_tokenized_line(line)
                assert facts is not None, (shape.name, plan.dataset)
                assert facts == general_facts(line, "tokenized")


@pytest.mark.parametrize("line", TOKENIZED_LINES)
def test_a_tokenized_line_read_in_place_gives_the_facts_of_its_copy(line: bytes) -> None:
    # The refresh reads tokenized lines between two offsets of their read, not copied out.
    data = b'{"input_ids": [1, 2]}\n' + line + b"\n[5, 6]"
    start, stop = 22, 22 + len(line)
    decoder = fastparse.fast_decoder("tokenized", BUILT_IN_ONLY)
    for everything in (False, True):
        with lifting_every_array() if everything else contextlib.nullcontext():
            assert decoder.lifted_line(data, start, stop) == fastparse._lifted_tokenized_line(
                line
            ), line[:200]
