"""The line splitter: `\\n` is the only line end, partial tails wait, CR and BOM are stripped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.tail.lines import BOM, LineSplitter, is_blank


def _contents(chunks: list[bytes]) -> tuple[list[bytes], LineSplitter]:
    splitter = LineSplitter()
    out = [line.content for chunk in chunks for line in splitter.feed(chunk)]
    return out, splitter


def test_bytes_after_the_last_newline_stay_pending_until_their_newline_arrives() -> None:
    splitter = LineSplitter()
    first = list(splitter.feed(b'{"a":1}\n{"b"'))
    assert [(x.number, x.offset, x.content, x.end) for x in first] == [(1, 0, b'{"a":1}', 8)]
    assert splitter.pending == len(b'{"b"')
    assert splitter.offset == len(b'{"a":1}\n')
    assert list(splitter.feed(b":2")) == []
    second = list(splitter.feed(b"}\n"))
    assert [(x.number, x.offset, x.content) for x in second] == [(2, 8, b'{"b":2}')]
    assert splitter.pending == 0


def test_a_line_split_in_every_possible_place_reads_the_same() -> None:
    data = '{"t":"é🙂\u2028x"}\r\n{"u":2}\n'.encode()
    whole, _ = _contents([data])
    for cut in range(len(data) + 1):
        assert _contents([data[:cut], data[cut:]])[0] == whole


def test_unicode_line_separators_and_form_feeds_inside_strings_are_not_line_ends() -> None:
    text = '{"t":"a\u2028b\u2029c\u0085d\x0ce\x0bf\x1cg\x1dh\x1ei"}\n'
    out, splitter = _contents([text.encode()])
    assert out == [text[:-1].encode()]
    assert splitter.line_number == 1


def test_crlf_line_ends_lose_their_carriage_return_only_once() -> None:
    out, _ = _contents([b"a\r\n", b"b\r\r\n", b"c\r", b"\n"])
    assert out == [b"a", b"b\r", b"c"]


def test_a_bom_is_stripped_at_file_offset_zero_and_nowhere_else() -> None:
    out, _ = _contents([BOM + b"{}\n" + BOM + b"{}\n"])
    assert out == [b"{}", BOM + b"{}"]


def test_a_bom_split_across_chunks_is_still_stripped() -> None:
    out, _ = _contents([BOM[:1], BOM[1:2], BOM[2:] + b"{}\n"])
    assert out == [b"{}"]


def test_a_resumed_splitter_knows_it_is_past_offset_zero() -> None:
    splitter = LineSplitter(offset=10, line_number=3)
    [line] = list(splitter.feed(BOM + b"{}\n"))
    assert (line.number, line.offset, line.content, line.end) == (4, 10, BOM + b"{}", 16)


def test_blank_lines_are_yielded_numbered_and_recognised_as_blank() -> None:
    splitter = LineSplitter()
    got = list(splitter.feed(b"\n \t\r\n\x0c\n{}\n"))
    assert [x.number for x in got] == [1, 2, 3, 4]
    assert [is_blank(x.content) for x in got] == [True, True, True, False]


def test_line_offsets_and_ends_tile_the_file() -> None:
    data = b"one\n\ntwo\r\nthree\n"
    splitter = LineSplitter()
    got = list(splitter.feed(data))
    assert [x.offset for x in got] == [0, 4, 5, 10]
    assert [x.end for x in got] == [4, 5, 10, 16]
    assert [data[x.offset : x.end] for x in got] == data.splitlines(keepends=True)


PIECES = [b"{}", b'{"i": 1}', b"[1]", b"x", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"\n", BOM]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30), st.integers(0, 3), st.booleans())
def test_counting_non_blank_lines_equals_looking_at_each(
    pieces: list[bytes], offset: int, resumed: bool
) -> None:
    # A prompts file's lines are counted without a loop when no line can be blank; the count
    # must be the loop's, whatever whitespace, carriage returns and BOMs the lines hold.
    data = b"".join(pieces) + b"\n"
    splitter = LineSplitter(offset=offset if resumed else 0)
    for block in splitter.blocks(data):
        expected = sum(not is_blank(content) for _, _, content in block.rows())
        assert block.non_blank() == expected, data


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30), st.integers(0, 3), st.booleans())
def test_line_spans_are_the_rows_without_copies(
    pieces: list[bytes], offset: int, resumed: bool
) -> None:
    # The lifted tier reads tokenized lines in place: each span must cut out exactly the row
    # `rows()` gives, with its number and offset, whatever CRs, BOMs and blank lines it holds.
    data = b"".join(pieces) + b"\n"
    splitter = LineSplitter(offset=offset if resumed else 0)
    for block in splitter.blocks(data):
        spans = [(n, o, block.data[a:b]) for n, o, a, b in block.spans()]
        assert spans == list(block.rows()), data
        assert block.next_number == spans[-1][0]
