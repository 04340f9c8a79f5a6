"""The line splitter: `\\n` is the only line end, partial tails wait, CR and BOM are stripped."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.tail.lines import BOM, Block, LineSplitter, LongLine, is_blank


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


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    return [data[a:b] for a, b in pairwise(edges)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 40), max_size=12),
    st.lists(st.integers(0, 10_000), max_size=8),
    st.integers(1, 30),
    st.booleans(),
)
def test_lines_over_the_cap_are_long_lines_wherever_the_chunks_are_cut(
    lengths: list[int], cuts: list[int], limit: int, ended: bool
) -> None:
    data = b"".join(b"x" * n + b"\n" for n in lengths) + (b"y" * 35 if not ended else b"")
    splitter = LineSplitter(limit=limit)
    got: list[tuple[str, int, int]] = []
    for chunk in _pieces(data, cuts):
        for block in splitter.blocks(chunk):
            if isinstance(block, LongLine):
                got.append(("long", block.number + 1, block.length))
            else:
                got += [("line", n, len(c)) for n, _, c in block.rows()]
    expected = [("long" if n > limit else "line", i, n) for i, n in enumerate(lengths, 1)]
    assert got == expected
    assert splitter.pending == (0 if ended else 35)
    assert splitter.tail == (b"" if ended or limit < 35 else b"y" * 35)


def test_a_line_spanning_many_chunks_is_joined_once_not_once_a_chunk() -> None:
    # Rebuilding tail + chunk for every chunk made a 400 MB line quadratic; the pieces are
    # kept in a list and joined once, so the splitter holds them, not copies of copies.
    splitter = LineSplitter(limit=1 << 30)
    chunk = b"x" * 4096
    for _ in range(1000):
        assert list(splitter.blocks(chunk)) == []
    assert len(splitter._parts) == 1000  # one reference a chunk, nothing joined yet
    (block,) = splitter.blocks(b"\n")
    assert block.end == 4096 * 1000 + 1


def test_a_finished_stream_ends_its_last_line_even_when_it_is_too_long() -> None:
    splitter = LineSplitter(limit=10)
    assert list(splitter.blocks(b"ok\n" + b"z" * 50)) != []
    (last,) = splitter.finish()
    assert isinstance(last, LongLine) and last.length == 50 and last.number == 1
    assert splitter.pending == 0 and splitter.line_number == 2


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


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"", b"b\r", b"\xef\xbb\xbfc", b"{}"]), min_size=1, max_size=8),
    st.data(),
)
def test_rows_from_any_line_to_any_line_are_the_rows_of_the_whole_read(
    lines: list[bytes], data: st.DataObject
) -> None:
    # A reader may take a block's lines in pieces (the native walk reads runs of lines in
    # C and leaves single lines to `rows(start, before, end)`): the pieces are the rows of the
    # whole, and the block's line count stays right whichever piece came last.
    text = b"".join(line + b"\n" for line in lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    whole = list(Block(text, 0, 4, len(text)).rows())
    block = Block(text, 0, 4, len(text))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(lines)), max_size=4))))
    for first, last in pairwise([0, *cuts, len(lines)]):
        if first < last and data.draw(st.booleans()):  # else another reader took the piece
            assert list(block.rows(starts[first], 4 + first, starts[last])) == whole[first:last]
    assert block.next_number == 4 + len(lines)
