"""The answer keys' collapse in C (genledger/fast/_collapse.c) equals its definition,
`genledger.parse.answer.collapsed_escaped`, on every text orjson can write, on bytes orjson
never writes, and on every text of the real recorded responses; a native variant with a
planted bug is caught by the same checks.

The extension is built by the package's install (`pip install -e .`; CI does it), so these
tests FAIL, never skip, when it is missing: a silent fallback to the definition would keep
the keys right but lose the speed the benchmarks report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from genledger.fast import answerkeys
from genledger.parse.answer import Buffer, collapsed_escaped, escaped, hash64

from .builds import current_build
from .planted import planted as compiled
from .realfiles import FILES, SHARED

SOURCE = Path(answerkeys.__file__).with_name("_collapse.c")
Native = Callable[[Callable[[Buffer], Buffer], Buffer], Buffer]
# Texts made of what the collapse looks at: spaces, every whitespace character, backslashes
# and things after them that look like escapes, quotes, control characters, non-ASCII;
# long enough (hundreds of pieces) to cross the scan's 16-byte blocks at every offset.
PIECES = [" ", "  ", "\n", "\t", "\r", "\x0b", "\x0c", "\b", "\x01", "\x1f", "\\", "\\n",
          "\\\\", "u000b", "\\u000b", "/", '"', "a", "word", "é", "解", "😀", "\u2028",
          "\x7f"]  # fmt: skip
SPACED = st.lists(st.sampled_from(PIECES), max_size=300).map("".join)
# Bytes orjson never writes inside a string: `\/`, `\u0041`, upper-case hex, a lone or cut
# escape, raw quotes and control bytes, invalid UTF-8. The definition decides them (or raises).
RAW = st.lists(
    st.sampled_from(
        [b" ", b"  ", b"\\", b"\\\\", b"\\n", b"\\f", b"\\u000b", b"\\u000B", b"\\u0041",
         b"\\/", b"\\ud83d", b"\\x", b'"', b"\n", b"\x01", b"a", b"\xc3\xa9", b"\xc3", b"\xff",
         b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"u000b"]
    ),
    max_size=100,
).map(b"".join)  # fmt: skip


def _outcome(collapse: Callable[[Buffer], Buffer], body: Buffer) -> tuple[object, bool]:
    """What a collapse gives: its bytes (or its error) and whether it is the input itself."""
    try:
        result = collapse(body)
    except Exception as exc:
        return type(exc), False
    return bytes(result), result is body


def _differs(native: Native, body: bytes) -> bool:
    """Whether `native` disagrees with the definition on `body`, given as bytes or as a view:
    other bytes or another error, or a copy where the definition returns the input itself
    (callers test `body is inner`). Where the definition copies a view it left unchanged,
    the native collapse may return the view: the same bytes, no copy."""
    for given_ in (body, memoryview(body), memoryview(b"<" + body + b">")[1:-1]):
        ours, ours_same = _outcome(lambda b: native(collapsed_escaped, b), given_)
        theirs, theirs_same = _outcome(collapsed_escaped, given_)
        if ours != theirs or (theirs_same and not ours_same):
            return True
    return False


def _native() -> Native:
    from genledger.fast import _collapse  # an ImportError here fails the test, never skips

    return _collapse.collapsed_escaped


def test_the_extension_is_built_from_the_current_source() -> None:
    current_build("_collapse")
    assert answerkeys.NATIVE


@settings(max_examples=3000, deadline=None)
@given(st.text())
def test_any_text_as_orjson_escapes_it_collapses_as_the_definition_does(text: str) -> None:
    assert not _differs(_native(), escaped(text))


@settings(max_examples=3000, deadline=None)
@given(SPACED)
def test_texts_of_whitespace_escapes_spaces_and_backslashes_collapse_alike(text: str) -> None:
    assert not _differs(_native(), escaped(text))


@settings(max_examples=2000, deadline=None)
@given(RAW)
def test_bytes_orjson_never_writes_get_the_definitions_answer_or_error(body: bytes) -> None:
    assert not _differs(_native(), body)


def test_the_edges_collapse_alike() -> None:
    texts = ["", " ", "  ", "\n", "\x0b", "a", " a", "a ", "a  b", "\\", "\\\\", "\\n",
             "\\\\n", "a\n", "\ta", "a \x0b b", "\\\\ \n", "x" * 16 + " ",
             " " + "y" * 40 + "\n"]  # fmt: skip
    for text in texts:
        assert not _differs(_native(), escaped(text)), text
    native = _native()
    body = escaped("an answer")  # nothing to collapse: the input itself, as callers test
    assert native(collapsed_escaped, body) is body
    view = memoryview(body)
    assert native(collapsed_escaped, view) is view
    assert isinstance(native(collapsed_escaped, memoryview(escaped("a\nb"))), bytes)
    with pytest.raises(TypeError):
        native(collapsed_escaped, "a str is no buffer")  # type: ignore[arg-type]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _real_bodies() -> Iterator[bytes]:
    """Every string of every real record, as orjson escapes it and as its line spells it
    (other writers' `\\u` and `\\/` escapes included)."""
    for path in FILES:
        for line in path.read_bytes().splitlines():
            yield from (m.group()[1:-1] for m in JSON_STRING.finditer(line))
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            yield from map(escaped, _strings(record))


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_every_text_of_the_real_records_collapses_as_the_definition_does() -> None:
    native = _native()
    bodies = list(_real_bodies())
    assert len(bodies) > 10_000
    assert [b for b in bodies if _differs(native, b)] == []


def test_a_native_collapse_that_forgets_the_form_feed_is_caught(tmp_path: Path) -> None:
    # `\f` is no whitespace
    right = "case 'n': case 't': case 'r': case 'f':"
    bug = (right, "case 'n': case 't': case 'r':")
    planted = compiled(SOURCE, tmp_path, bug).collapsed_escaped
    assert not _differs(planted, escaped("a\nb"))  # the variant works but for its bug
    # the property above finds it from its own strategy, as its test run would
    found = find(
        SPACED,
        lambda text: _differs(planted, escaped(text)),
        settings=settings(max_examples=3000, database=None),
    )
    assert "\x0c" in found, found


# --- the key of a spelled string in one call (`_collapse.spelled_key`) ----------------------

Key = Callable[[Buffer], int | None]


def _key_outcome(key: Key, data: Buffer) -> object:
    """A key function's result, or its error's type."""
    try:
        return key(data)
    except Exception as exc:
        return type(exc)


def _key_differs(native: Any, data: bytes) -> bool:
    """Whether the native key of `data` (bytes, a view, a view inside a larger buffer)
    differs from the Python steps' key or error."""
    key = lambda given: native.spelled_key(answerkeys.spelled_steps, hash64, given)  # noqa: E731
    for given_ in (data, memoryview(data), memoryview(b"<" + data + b">")[1:-1]):
        if _key_outcome(key, given_) != _key_outcome(answerkeys.spelled_steps, given_):
            return True
    return False


def _collapse_module() -> Any:
    from genledger.fast import _collapse  # an ImportError here fails the test, never skips

    return _collapse


def test_the_answer_keys_take_the_native_key() -> None:
    assert answerkeys.key_of_spelled is not answerkeys.spelled_steps
    assert answerkeys.key_of_spelled_bytes is not answerkeys.spelled_bytes_steps


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(), SPACED))
def test_the_native_key_of_any_spelled_text_is_the_steps_key(text: str) -> None:
    data = b'"' + escaped(text) + b'"'
    assert not _key_differs(_collapse_module(), data)
    assert answerkeys.key_of_spelled_bytes(data) == answerkeys.spelled_bytes_steps(data)


@settings(max_examples=2000, deadline=None)
@given(RAW)
def test_the_native_key_of_bytes_orjson_never_writes_is_the_steps_key_or_error(body: bytes) -> None:
    assert not _key_differs(_collapse_module(), b'"' + body + b'"')
    assert not _key_differs(_collapse_module(), body)  # not even a string's quotes


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_the_native_key_of_every_real_text_is_the_steps_key() -> None:
    native = _collapse_module()
    bodies = list(_real_bodies())
    assert [b for b in bodies if _key_differs(native, b'"' + b + b'"')] == []


@pytest.mark.parametrize(
    ("right", "wrong"),
    [
        # a text with an escaped backslash scanned whatever else it spells (`\\/`)
        ("if (pair && !orjson_spelled(data, size)) {", "if (0) {"),
        # an escaped backslash after the first change goes unnoted
        ("*pair |= step == 2;\n            out[written] = c;", "out[written] = c;"),
    ],
)
def test_a_native_key_that_scans_texts_outside_orjsons_spelling_is_caught(
    right: str, wrong: str, tmp_path: Path
) -> None:
    planted = compiled(SOURCE, tmp_path, (right, wrong))
    assert not _key_differs(planted, b'"a\\nb"')  # the variant works but for its bug
    found = find(
        RAW,
        lambda body: _key_differs(planted, b'"x' + body + b'x"'),
        settings=settings(max_examples=5000, database=None),
    )
    assert b"\\\\" in found, found
