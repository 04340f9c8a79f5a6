"""The native tier (`genledger.fast.chatline`, `_chatline.c`) gives the general path's facts
on every line it reads, and reads the usual real chat completion: on every real recorded
line (../shared/realworld*/data), on the benchmark's real-openai corpus built from them, and
on records the OpenAI SDK's own models build near the shape (nulls, extra keys, escapes,
non-ASCII, huge and fractional numbers, repeated keys, no usage); planted bugs are caught."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, example, find, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from genledger.config import Switches
from genledger.fast import chatline
from genledger.fast import lines as fastparse
from genledger.fast.rawtext import SPELLED, inspect, plain_line, read_clear
from genledger.fast.shapes import Chat
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.jsonline import Malformed
from genledger.parse.line import facts_of_line
from genledger.parse.table import TableBuilder

from ..refresh.test_count import FAST, GENERAL
from ..refresh.test_count import tally as count_tally
from .builds import current_build
from .planted import planted
from .realfiles import FILES, SHARED

SOURCE = Path(chatline.__file__).with_name("_chatline.c")
REPO = Path(__file__).resolve().parents[3]


def _native() -> chatline.LineFacts:
    if chatline.NATIVE is None:  # the tests hold the built extension to its definition
        pytest.fail("genledger.fast._chatline was not built (a C compiler is needed)")
    return chatline.NATIVE


def _general(line: bytes) -> Any:
    try:
        return facts_of_line(line, "responses")
    except Malformed as exc:
        return ("malformed", str(exc))


def _spelled(line: bytes) -> bool:
    """Whether a read of this line alone makes it spelled (the only lines the native tier
    reads)."""
    return plain_line(line, inspect(line, len(line))) == SPELLED


def _clear(line: bytes) -> bool:
    """Whether a read of this line alone lets the native tier try it (`rawtext.read_clear`)."""
    return read_clear(inspect(line, len(line)))


def _agrees(read: chatline.LineFacts, line: bytes) -> bool:
    """`read` of a spelled line says None, or the general path's one record."""
    got = read(line)
    return got is None or [got] == _general(line)


# --- the real records ------------------------------------------------------------------------


def _real_lines() -> list[bytes]:
    return [line for path in FILES for line in path.read_bytes().splitlines() if line.strip()]


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_the_extension_is_built_from_the_current_source() -> None:
    current_build("_chatline")


def test_every_real_line_it_reads_gives_the_general_facts() -> None:
    native = _native()
    spelled = [line for line in _real_lines() if _spelled(line)]
    taken = [line for line in spelled if native(line) is not None]
    assert [line[:120] for line in spelled if not _agrees(native, line)] == []
    # it reads the usual chat completions of several providers
    assert len(taken) >= 100
    assert {_general(line)[0].format for line in taken} == {"openai_chat"}


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_the_real_openai_corpus_reads_natively_as_the_general_path(tmp_path: Path) -> None:
    # the benchmark's corpus (its copies' ids and texts made unique), read as a refresh reads it
    lines = _real_openai_corpus(tmp_path, 2.0)
    assert len(lines) > 1000
    native = _native()
    taken = [line for line in lines if native(line) is not None]
    assert len(taken) > len(lines) // 2  # the usual record is most of them
    assert [line[:120] for line in lines if not _agrees(native, line)] == []
    reader = _run_reader(lines[0])  # as a refresh reads a run of them: the native tier first
    assert [line[:120] for line in lines if not _agrees(reader, line)] == []


def _real_openai_corpus(folder: Path, mb: float) -> list[bytes]:
    """The lines of the benchmark's real-openai corpus of `mb` MB, written into `folder`."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import realcorpus
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    realcorpus.write_real(folder, mb, "real-openai")
    return [
        line
        for path in sorted(folder.rglob("*.jsonl"))
        for line in path.read_bytes().splitlines()
        if line.strip()
    ]


def _rewritten(line: bytes, style: int) -> bytes:
    """A real line as Python's `json.dumps` writes it: ASCII (`\\u` escapes, style 0), UTF-8
    (1), or as recorded (2)."""
    try:
        if style < 2:
            return json.dumps(json.loads(line), ensure_ascii=style == 0).encode()
    except (ValueError, UnicodeEncodeError):  # not JSON, or a lone surrogate in a UTF-8 copy
        pass
    return line


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
@pytest.mark.parametrize("styles", [(0,), (0, 1, 2)], ids=["ascii", "mixed"])
def test_real_lines_rewritten_with_escapes_count_as_the_general_path(
    styles: tuple[int, ...],
) -> None:
    # each line said spelled or not for itself, in reads where some lines have escapes
    for path in FILES:
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        lines = [_rewritten(line, styles[i % len(styles)]) for i, line in enumerate(lines)]
        cuts = list(range(0, len(lines), 7))
        assert count_tally(lines, cuts, FAST) == count_tally(lines, cuts, GENERAL), path


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_the_real_corpus_written_with_ascii_escapes_is_walked_natively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [_rewritten(line, 0) for line in _real_openai_corpus(tmp_path, 1.0)]
    escaped = sum(b"\\u" in line for line in lines)
    assert 0 < escaped < len(lines) // 2  # a few lines have non-ASCII texts, most do not
    walked = _walked_count(monkeypatch)
    fastparse.fast_decoder.cache_clear()
    try:
        cuts = list(range(0, len(lines), 300))  # reads of 300 lines: nearly each has an escape
        assert count_tally(lines, cuts, FAST) == count_tally(lines, cuts, GENERAL)
    finally:
        fastparse.fast_decoder.cache_clear()
    assert sum(walked) > (len(lines) - escaped) // 2  # most lines without escapes: natively


def _walked_count(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows each call of the native walk makes, from now on (the walk wrapped)."""
    walked: list[int] = []
    real = chatline.WALK
    assert real is not None

    def counting(*args: Any) -> tuple[int, int]:
        before = len(args[-1])
        found = real(*args)
        walked.append(len(args[-1]) - before)
        return found

    monkeypatch.setattr(chatline, "WALK", counting)
    return walked


def _run_reader(first: bytes) -> Any:
    """A run reader over spelled reads, after `first` was read (so the chat shape is last)."""
    decoder = fastparse.FastDecoder("responses", BUILT_IN_ONLY, Switches())
    flags = inspect(first, len(first))
    decoder.facts(first, flags)
    return decoder.run_reader(flags)


def test_the_run_reader_of_a_spelled_chat_read_is_the_native_tier() -> None:
    line = _dumps(_record())
    decoder = fastparse.FastDecoder("responses", BUILT_IN_ONLY, Switches())
    flags = inspect(line, len(line))
    assert decoder.facts(line, flags) == _general(line)
    assert decoder.typed is not None and decoder.typed.shapes[decoder.typed.last] is Chat
    assert chatline.native_reader(Chat, True) is chatline.NATIVE
    assert chatline.native_reader(Chat, False) is None  # not UTF-8: the typed shapes
    reader = decoder.run_reader(flags)
    assert reader is not None and reader.__name__ == "first_native"
    assert [reader(line)] == _general(line)


# --- records near the shape, built by the OpenAI SDK ------------------------------------------


def _record(**changes: Any) -> dict[str, Any]:
    """A chat completion as the SDK's model holds it, then dumped as the API writes it."""
    record = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1742905314,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": None,
                "message": {
                    "role": "assistant",
                    "content": "Hello there.",
                    "refusal": None,
                    "annotations": [],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 9,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_1",
    }
    record.update(changes)
    dumped: dict[str, Any] = ChatCompletion.model_validate(record).model_dump(
        mode="json", exclude_unset=True
    )
    return dumped


def _dumps(record: Any, style: str = "orjson") -> bytes:
    if style == "orjson":
        return orjson.dumps(record)
    if style == "spaced":  # the Python SDK's and many pipelines' `json.dumps`
        return json.dumps(record, ensure_ascii=False).encode()
    return json.dumps(record).encode()  # ASCII with `\u` escapes: never spelled


COUNT = st.one_of(
    st.none(),
    st.integers(-5, 10**6),
    st.sampled_from([0, 2**63 - 1, 2**63, -(2**63), 10**18 - 1, 10**18, 1.5, 3.0, "7", True]),
)
TEXTS_OF_NOTE = [
    "", " a ", "a\\b", 'say "hi"', "é中😀", "<think>x</think>", "a\u2028b", "a/b", "\ud83dx",
]  # fmt: skip
TEXT = st.one_of(st.text(max_size=40), st.sampled_from(TEXTS_OF_NOTE))
VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)
USAGE_KEYS = (
    "prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens", "cached_tokens",
    "prompt_cache_hit_tokens", "prompt_cache_miss_tokens",
)  # fmt: skip
DETAIL_KEYS = ("cached_tokens", "cache_write_tokens", "reasoning_tokens", "audio_tokens")
MESSAGE_KEYS = ("content", "role", "refusal", "tool_calls", "reasoning_content", "annotations")
TOP_KEYS = ("id", "object", "created", "model", "system_fingerprint", "moderation", "usage")


def _change(record: dict[str, Any], where: str, key: str, value: Any) -> None:
    """Sets (or with `...` removes) a key at one place of the record."""

    def inside(value: Any, key: str) -> Any:
        return value.get(key) if isinstance(value, dict) else None

    choices = record.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    usage = record.get("usage")
    place: Any = {
        "top": record,
        "usage": usage,
        "prompt details": inside(usage, "prompt_tokens_details"),
        "completion details": inside(usage, "completion_tokens_details"),
        "choice": choice,
        "message": inside(choice, "message"),
    }[where]
    if not isinstance(place, dict):
        return
    if value is ...:
        place.pop(key, None)
    else:
        place[key] = value


COUNTED = {*USAGE_KEYS, *DETAIL_KEYS, "created", "index"}
TEXTS = {"content", "role", "refusal", "id", "object", "model", "system_fingerprint"}
PLACES = st.sampled_from(
    ["top", "usage", "prompt details", "completion details", "choice", "message"]
)
KEYS = st.sampled_from(
    [*USAGE_KEYS, *DETAIL_KEYS, *MESSAGE_KEYS, *TOP_KEYS, "finish_reason", "extra", "index"]
)


def _valued(key: str) -> st.SearchStrategy[tuple[str, Any]]:
    """A key with a value mostly of its kind: a count, a text (or null), any JSON, removed."""
    kind = COUNT if key in COUNTED else st.one_of(st.none(), TEXT) if key in TEXTS else VALUE
    return st.tuples(st.just(key), st.one_of(kind, kind, kind, st.just(...), VALUE))


KEYS_AT = {
    "top": TOP_KEYS,
    "usage": USAGE_KEYS,
    "prompt details": DETAIL_KEYS,
    "completion details": DETAIL_KEYS,
    "choice": ("finish_reason", "index", "logprobs"),
    "message": MESSAGE_KEYS,
}


def _placed(place: str) -> st.SearchStrategy[tuple[str, str, Any]]:
    """A change at `place`: mostly of a key the shape states there, now and then any key."""
    keys = st.one_of(st.sampled_from(KEYS_AT[place]), st.sampled_from(KEYS_AT[place]), KEYS)
    return keys.flatmap(_valued).map(lambda pair: (place, *pair))


CHANGE = PLACES.flatmap(_placed)


def _repeat_key(line: bytes, repeat: tuple[bytes, bytes]) -> bytes:
    """The line with the first member `"key": ...` given before as `"key": value` too (a
    JSON object may repeat a key: the general path keeps the last)."""
    key, value = repeat
    at = line.find(b'"' + key + b'":')
    if at < 0:
        return line
    return line[:at] + b'"' + key + b'":' + value + b"," + line[at:]


REPEATS = st.sampled_from([
    (b"id", b'"x"'),
    (b"id", b"null"),
    (b"content", b'"other"'),
    (b"completion_tokens", b"1"),
    (b"usage", b'{"completion_tokens":1,"prompt_cache_hit_tokens":4}'),
    (b"prompt_tokens_details", b'{"cache_write_tokens":5}'),
])  # fmt: skip


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(CHANGE, max_size=4),
    st.sampled_from(["orjson", "spaced", "ascii", "slashed"]),
    st.one_of(st.none(), REPEATS),
    st.sampled_from([b"", b" ", b"\r", b" \t"]),
)
@example([("message", "content", "a\\nb  c ")], "orjson", None, b"")  # escapes, runs of space
@example([("top", "usage", ...)], "orjson", None, b"")  # no usage
@example([("usage", "completion_tokens", 2**63)], "orjson", None, b"")  # beyond int64
@example([("usage", "prompt_tokens", 1.5)], "orjson", None, b"")  # a fraction
@example([], "orjson", (b"completion_tokens", b"1"), b"")  # a repeated key
@example([("message", "content", "é中😀")], "orjson", None, b"")  # non-ASCII
@example([("top", "extra", 1)], "orjson", None, b"")  # a key the shape does not state
@example([("top", "created", 10**12)], "orjson", None, b"")  # milliseconds
@example([("top", "created", -(10**12) - 1)], "orjson", None, b"")
@example([("usage", "total_tokens", 100)], "orjson", None, b"")  # the audit's finding
@example([("top", "object", "text_completion")], "orjson", None, b"")
@example([("top", "model", "m" * 101)], "orjson", None, b"")  # cut to 100 characters
@example([("choice", "finish_reason", "")], "orjson", None, b"")
@example(  # the usual call: content null, the calls' answer read by the answer rules
    [("message", "content", None), ("message", "tool_calls", [{"id": "c", "type": "function",
     "function": {"name": "f", "arguments": "{\"a\": 1}"}}])], "orjson", None, b"",
)  # fmt: skip
@example([("message", "content", None), ("message", "tool_calls", [])], "orjson", None, b"")
@example([("message", "tool_calls", [{"text": "x"}])], "orjson", None, b"")  # and a content
@example([("message", "content", "\x80")], "slashed", None, b"")  # slashed, without a `/`
def test_records_near_the_shape_give_the_general_facts(
    changes: list[tuple[str, str, Any]],
    style: str,
    repeated: tuple[bytes, bytes] | None,
    tail: bytes,
) -> None:
    record = _record()
    for where, key, value in changes:
        _change(record, where, key, value)
    try:
        line = _dumps(record, style)
    except (TypeError, orjson.JSONEncodeError, UnicodeEncodeError):  # beyond 64 bits, surrogates
        line = json.dumps(record).encode()
    if repeated is not None:
        line = _repeat_key(line, repeated)
    line += tail
    if style == "slashed":  # as some writers spell `/`
        line = line.replace(b"/", b"\\/")
    if _clear(line):  # `\/` and `\u` escapes but a text's of non-ASCII characters: refused
        read = _native()(line)
        event("read natively" if read is not None else "left to the typed shapes")
        # a slashed line without a `/` is an ASCII one: its `\u` escapes alone are read
        ascii_escaped = style == "ascii" or (style == "slashed" and b"\\/" not in line)
        assert read is None or _spelled(line) or ascii_escaped, line
        assert _agrees(_native(), line), line
    assert _agrees_broken(line)


def _agrees_broken(line: bytes) -> bool:
    """Cut short, or with a byte changed, the line is never read otherwise than generally."""
    native = _native()
    for broken in (line[: len(line) // 2], line.replace(b":", b";", 1), line + b"}"):
        if _clear(broken) and not _agrees(native, broken):
            return False
    return True


def test_lines_it_is_not_sure_of_go_to_the_typed_shapes() -> None:
    native = _native()
    usual = _dumps(_record())
    assert native(usual) is not None
    unsure = [
        b" " + usual,  # space first: the typed tier leaves it to the general path
        _repeat_key(usual, (b"id", b'"x"')),
        _dumps(_record(extra=1)),
        usual.replace(b'"completion_tokens":9', b'"completion_tokens":9.0'),
        usual.replace(b'"completion_tokens":9', b'"completion_tokens":1234567890123456789'),
        usual.replace(b'"Hello there."', b'"Hello \\u0074here."'),
        usual.replace(b'"Hello there."', b'"Hello\\/there."'),  # orjson writes `/`
        usual.replace(b'"Hello there."', b'"Hello \\ud83d"'),  # a lone surrogate
        usual.replace(b'"Hello there."', b'"Hello \\ude00\\ud83d"'),  # a pair the wrong way
        usual.replace(b'"Hello there."', b'"Hello \\u00zz"'),
        usual.replace(b'"chatcmpl-1"', b'"chatcmpl-\\u00e9"'),  # only a text is respelled
        usual.replace(b'"chatcmpl-1"', b'"chatcmpl-\\"1"'),
        usual.replace(b'"refusal":null', b'"refusal":"no"'),
        usual.replace(b'"Hello there."', b'""'),
        usual.replace(b'"Hello there."', b"null"),  # no answer at all
        usual.replace(b'"refusal":null', b'"refusal":null,"tool_calls":[]'),  # text and calls
        usual.replace(b'"Hello there."', b'null,"function_call":{"name":"f"}'),
        usual.replace(b'"finish_reason":"stop"', b'"finish_reason":{"type":"stop"}'),
    ]
    assert [line for line in unsure if native(line) is not None] == []


# --- planted bugs ----------------------------------------------------------------------------


def _caught(tmp_path: Path, right: str, wrong: str, change: Any = CHANGE) -> bytes:
    """A variant of the C source with one bug planted: the property's strategy (`change`:
    narrowed to the places the bug is about) finds a line where it differs from the general
    path."""
    module = planted(SOURCE, tmp_path, (right, wrong))
    context = chatline.NATIVE.args[0]  # type: ignore[union-attr]

    def read(line: bytes) -> Any:
        return module.chat_facts(context, line)

    usual = _dumps(_record())
    assert read(usual) is not None and _agrees(read, usual)  # it works but for its bug

    def differs(case: tuple[list[tuple[str, str, Any]], tuple[bytes, bytes] | None]) -> bool:
        record = _record()
        for where, key, value in case[0]:
            _change(record, where, key, value)
        try:
            line = orjson.dumps(record)
        except (TypeError, orjson.JSONEncodeError):
            return False
        if case[1] is not None:
            line = _repeat_key(line, case[1])
        return _spelled(line) and not _agrees(read, line)

    strategy = st.tuples(
        st.lists(change, max_size=3),
        st.one_of(st.none(), REPEATS),
    )
    found = find(strategy, differs, settings=settings(max_examples=3000, database=None))
    return orjson.dumps(found[0]) + repr(found[1]).encode()


def test_a_native_tier_taking_the_usage_cache_before_the_details_is_caught(
    tmp_path: Path,
) -> None:
    right = "Count cached = u->prompt_details && d->cached.given ? d->cached"
    wrong = "Count cached = u->cached.given ? u->cached : " + right.removeprefix("Count cached = ")
    places = st.sampled_from(["usage", "prompt details"])
    change = st.tuples(places, st.sampled_from(["cached_tokens", "audio_tokens"]), COUNT)
    found = _caught(tmp_path, right, wrong, change)
    assert b"cached_tokens" in found


def test_a_native_tier_keeping_repeated_keys_is_caught(tmp_path: Path) -> None:
    found = _caught(tmp_path, "if (index < 0 || (seen >> index) & 1)", "if (index < 0)")
    assert b"prompt_tokens_details" in found or b"usage" in found  # a repeated key


def test_a_native_tier_reading_a_refusal_as_no_refusal_is_caught(tmp_path: Path) -> None:
    tail = "\n    default:\n        return skip_value(c, 2);"
    right = "        return null_next(c) ? SURE : UNSURE;" + tail
    wrong = "        return skip_value(c, 2);" + tail
    keys = st.sampled_from(["refusal", "tool_calls", "role"])
    change = st.tuples(st.just("message"), keys, st.one_of(TEXT, VALUE))
    found = _caught(tmp_path, right, wrong, change)
    assert b"refusal" in found or b"tool_calls" in found


# texts as `json.dumps` writes them (ASCII): CJK, emoji (surrogate pairs), lone surrogates,
# controls, think tags (`\u003c`-spelled: a read without `think>` written out stays clear)
ESCAPED_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from("aé中😀\ud83d\x01\n /<think>"), min_size=1, max_size=12),
    st.text(min_size=1, max_size=12),
)


def _ascii_escape(char: str) -> bool:
    """Whether `json.dumps` writes an ASCII character as a `\\u` escape (a control, DEL)."""
    return (ord(char) < 0x20 and char not in "\n\r\t\b\f") or char == "\x7f"


def _ascii_line(text: str) -> bytes:
    return _dumps(_record(), "ascii").replace(b'"Hello there."', json.dumps(text).encode())


@settings(max_examples=1000, deadline=None)
@given(ESCAPED_TEXT)
@example("\u00e9t\u00e9")
@example("\U0001f600 \ud83d")
@example("\ud83d\ude00")  # a pair written apart in Python's string: one emoji in JSON
def test_texts_with_unicode_escapes_are_read_as_the_general_path(text: str) -> None:
    line = _ascii_line(text)
    if not _clear(line):
        return
    read = _native()(line)
    assert _agrees(_native(), line), line
    unsure = any(_ascii_escape(c) or 0xD800 <= ord(c) <= 0xDFFF for c in text)
    unsure = unsure or "think>" in text  # a think tag: the scan refuses the line
    event("read natively" if read is not None else "left to the typed shapes")
    assert read is not None or unsure or not text.strip(), line  # non-ASCII escapes are read


def test_a_native_tier_spelling_a_surrogate_pair_apart_is_caught(tmp_path: Path) -> None:
    right = "*code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);"
    module = planted(SOURCE, tmp_path, (right, "*code = high;"))
    context = chatline.NATIVE.args[0]  # type: ignore[union-attr]

    def differs(text: str) -> bool:
        line = _ascii_line(text)
        return _clear(line) and not _agrees(partial(module.chat_facts, context), line)

    found = find(ESCAPED_TEXT, differs, settings=settings(database=None, max_examples=2000))
    assert any(ord(c) > 0xFFFF for c in found)


# answers whose keys collapse: runs of spaces and line breaks, either end blank, escaped
# backslashes before a letter of a whitespace escape (`\\n` is no line break), long texts
# (the collapse's 16-byte blocks)
SPACED_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from('ab \n\t\r\f\x0b\\é"'), min_size=1, max_size=40),
    st.builds(
        lambda words, gap: gap.join(words),
        st.lists(st.text(alphabet="abc", min_size=1, max_size=20), min_size=1, max_size=30),
        st.sampled_from([" ", "  ", "\n", " \n\n ", "\\n"]),
    ),
)


def _spaced_line(text: str) -> bytes:
    return _dumps(_record()).replace(b'"Hello there."', orjson.dumps(text))


@settings(max_examples=1000, deadline=None)
@given(SPACED_TEXT)
def test_answers_with_runs_of_whitespace_are_keyed_as_the_general_path(text: str) -> None:
    line = _spaced_line(text)
    assert _agrees(_native(), line), line
    # read natively but for a vertical tab (orjson's `\u000b`, an ASCII character's escape)
    assert _native()(line) is not None or not text.strip() or "\x0b" in text, line


def test_a_native_tier_keying_the_text_without_its_last_byte_is_caught(tmp_path: Path) -> None:
    right = "content->size + 2"
    module = planted(SOURCE, tmp_path, (right, "content->size + 1"))
    context = chatline.NATIVE.args[0]  # type: ignore[union-attr]

    def differs(text: str) -> bool:
        line = _spaced_line(text)
        return not _agrees(partial(module.chat_facts, context), line)

    found = find(SPACED_TEXT, differs, settings=settings(database=None, max_examples=2000))
    assert _agrees(_native(), _spaced_line(found))


def test_a_native_tier_taking_the_slash_escape_as_spelled_is_caught(tmp_path: Path) -> None:
    right = "case 'b': case 'f':"
    module = planted(SOURCE, tmp_path, (right, "case '/': " + right))
    context = chatline.NATIVE.args[0]  # type: ignore[union-attr]
    usual = _dumps(_record())

    def slashed(text: str) -> bytes:
        return usual.replace(b'"Hello there."', orjson.dumps(text).replace(b"/", b"\\/"))

    def differs(text: str) -> bool:
        line = slashed(text)
        return _clear(line) and not _agrees(partial(module.chat_facts, context), line)

    found = find(st.text(alphabet="a /", min_size=1), differs, settings=settings(database=None))
    assert "/" in found and _agrees(_native(), slashed(found))


# --- the walk over a run of lines ------------------------------------------------------------


def _walked_lines() -> list[bytes]:
    """Usual chat lines with a call, a blank line, a CRLF line and another shape between."""
    usual = [_dumps(_record(id=f"chatcmpl-{i}")) for i in range(40)]
    call = usual[3].replace(
        b'"content":"Hello there."', b'"content":null,"tool_calls":[{"id":"c","type":"x"}]'
    )
    return [*usual[:10], call, b"", usual[10] + b"\r", b'{"x": 1}', *usual[11:], b" "]


def test_the_walk_makes_the_rows_the_builder_makes_of_the_general_facts() -> None:
    lines = _walked_lines()
    data = b"".join(line + b"\n" for line in lines)
    walk = chatline.WALK
    assert walk is not None
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    walked = TableBuilder("responses", "f.jsonl")
    at, before, offset = 0, 7, 100  # a read from file offset 100, 7 lines before it
    while at < len(data):
        at, before = walk(data, at, len(data), before, offset, "f.jsonl", walked.rows)
        if at < len(data):  # the line it stopped at is the caller's: the walk goes on after
            at, before = starts[before - 7 + 1], before + 1
    expected = TableBuilder("responses", "f.jsonl")
    for row in walked.rows:
        index = row[1] - 8
        expected.add(row[1], offset + starts[index], 0, _general(lines[index])[0])
    assert walked.rows == expected.rows
    assert len(walked.rows) == 40  # every usual line but the one ending in `\r`


def test_the_walk_counts_a_run_of_lines_as_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = _walked_lines()
    walked = _walked_count(monkeypatch)
    fastparse.fast_decoder.cache_clear()
    try:
        for cuts in ([], [5], [13, 20]):
            assert count_tally(lines, cuts, FAST) == count_tally(lines, cuts, GENERAL)
    finally:
        fastparse.fast_decoder.cache_clear()
    assert sum(walked) > 40  # many lines were walked (not only read one by one)


def test_a_walk_that_drops_the_lines_it_is_not_sure_of_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    right = """        if (status == 0)
            break;"""
    wrong = """        if (status == 0) {
            number++;
            start = stop + 1;
            continue;
        }"""
    module = planted(SOURCE, tmp_path, (right, wrong))
    context = chatline.NATIVE.args[0]  # type: ignore[union-attr]
    lines = _walked_lines()
    monkeypatch.setattr(chatline, "WALK", partial(module.chat_rows, context))
    fastparse.fast_decoder.cache_clear()
    try:
        assert count_tally(lines, [], FAST) != count_tally(lines, [], GENERAL)
    finally:
        fastparse.fast_decoder.cache_clear()
