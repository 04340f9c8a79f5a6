"""What a read's flags say of each of its lines: `read_plain`, said once for a whole read, is
`plain_line` of every line whenever it says anything; in a read with `\\u` or `\\/` escapes
each line is said spelled as it would be alone (exactly when it has neither escape)."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from genledger.fast import rawtext
from genledger.fast.rawtext import (
    PLAIN,
    SPELLED,
    ReadFlags,
    inspect,
    plain_line,
    read_clear,
    read_plain,
)

PIECES = st.sampled_from([b"a", b"think>", b"<think>", b"\\u003c", b"\\u00e9", b"\\/", b'"', b" "])
LINES = st.lists(PIECES, max_size=8).map(b"".join)
FLAGS = st.builds(
    ReadFlags,
    utf8=st.booleans(),
    risky_escapes=st.booleans(),
    think_tags=st.booleans(),
    tag_lines=st.one_of(st.none(), st.frozensets(st.integers(0, 60), max_size=4)),
    respelled=st.booleans(),
)


@settings(max_examples=500, deadline=None)
@given(FLAGS, LINES)
def test_a_reads_plain_is_each_lines(flags: ReadFlags, line: bytes) -> None:
    said = read_plain(flags)
    assert said is None or said == plain_line(line, flags)


def test_the_read_says_nothing_when_its_lines_differ() -> None:
    flags = ReadFlags(utf8=True, risky_escapes=False, think_tags=True, respelled=False)
    assert read_plain(flags) is None
    assert plain_line(b"a", flags) == SPELLED != plain_line(b"<think>", flags)
    assert read_plain(ReadFlags(utf8=True, risky_escapes=False, think_tags=False)) is None
    clear = ReadFlags(utf8=True, risky_escapes=False, think_tags=False, respelled=False)
    assert read_plain(clear) == SPELLED


def test_a_read_plain_that_ignores_think_tags_is_caught() -> None:
    # planted bug: a read with think tags said plain as a whole
    def planted(flags: ReadFlags) -> int | None:
        if not flags.utf8:
            return 0
        return None if flags.risky_escapes else (PLAIN if flags.respelled else SPELLED)

    def differs(flags: ReadFlags, line: bytes) -> bool:
        said = planted(flags)
        return said is not None and said != plain_line(line, flags)

    tagged = ReadFlags(utf8=True, risky_escapes=False, think_tags=True, respelled=False)
    assert differs(tagged, b'{"text": "<think>"}')
    assert not any(differs(tagged, line) for line in (b"a", b"think", b"<thin>"))


# --- spelled line by line --------------------------------------------------------------------

# the spellings a line may hold: think tags written out and `\u003c`-spelled, `\/`, a surrogate
# pair, a lone surrogate, an escaped backslash before `u`, raw UTF-8
SPELLINGS = st.sampled_from([
    b"a", b"/", b"think>", b"<think>", b"\\u003cthink>", b"\\u003c/think>", b"\\u00e9",
    b"\\u4e2d", b"\\ud83d\\ude00", b"\\ud83d", b"\\/", b"<\\/think>", b"\\\\u", b"\\n",
    "é中😀".encode(), b'"', b" ",
])  # fmt: skip
SPELLED_LINES = st.lists(SPELLINGS, max_size=8).map(b"".join)


def _escaped(line: bytes) -> bool:
    """What SPELLED excludes, stated apart from rawtext: a `\\u` or `\\/` escape."""
    return b"\\u" in line or b"\\/" in line


def _misjudged(lines: list[bytes]) -> list[bytes]:
    """The lines of a read of `lines` said otherwise than alone, or spelled otherwise than
    `_escaped` says."""
    data = b"\n".join(lines) + b"\n"
    flags = inspect(data, len(data))
    wrong = []
    for line in lines:
        said = plain_line(line, flags)
        alone = plain_line(line, inspect(line, len(line)))
        spelled = said != 0 and not _escaped(line)
        # a clear read's line without either escape or a think tag is spelled: what the
        # native tier needs (its scan refuses the others)
        clear = not read_clear(flags) or _escaped(line) or b"think>" in line or said == SPELLED
        if said != alone or (said == SPELLED) != spelled or not clear:
            wrong.append(line)
    return wrong


@settings(max_examples=500, deadline=None)
@given(st.lists(SPELLED_LINES, min_size=1, max_size=6))
def test_each_line_of_a_read_is_said_spelled_as_if_read_alone(lines: list[bytes]) -> None:
    assert _misjudged(lines) == []


def test_a_line_without_escapes_is_spelled_in_a_read_with_some() -> None:
    data = b'{"a": "\\u00e9"}\n{"a": "b"}\n{"a": "\\/"}\n'
    flags = inspect(data, len(data))
    assert flags.respelled and read_clear(flags) and read_plain(flags) is None
    said = [plain_line(line, flags) for line in data.splitlines()]
    assert said == [PLAIN, SPELLED, PLAIN]


def test_a_per_line_check_that_misses_the_slash_escape_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # planted bug: only `\u` makes a line respelled
    monkeypatch.setattr(rawtext, "_respelled", lambda content: b"\\u" in content)

    found = find(st.lists(SPELLED_LINES, min_size=1, max_size=6), lambda ls: bool(_misjudged(ls)))
    assert any(b"\\/" in line for line in _misjudged(found))
