"""What a read's flags say of each of its lines: `read_plain`, said once for a whole read, is
`plain_line` of every line whenever it says anything."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast.rawtext import PLAIN, SPELLED, ReadFlags, plain_line, read_plain

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
    assert read_plain(ReadFlags(utf8=True, risky_escapes=False, think_tags=False)) == PLAIN


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
