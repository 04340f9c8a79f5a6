"""The prompts check in C (`fast.jsonlines.all_json`) says a block is JSON line by line only
where its definition (`refresh.count._json_lines`) does, and a prompts file's tally is that of
its lines decoded one by one, however its lines are mixed and cut into reads."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast.jsonlines import all_json
from genledger.ledger.prompts import PromptIds, PromptKey
from genledger.refresh import count
from genledger.refresh.count import _json_lines, prompt_tally
from genledger.tail.lines import BOM, Block, is_blank

from ..blocks import blocks_of

# lines of a prompts file, and lines near JSON that are none (each alone), or blank
PROMPTS = [b'{"i": 0}', b'{"messages": [{"role": "user", "content": "2+2?"}]}', b"[1, 2]", b'"x"']
NEAR = [b"{", b"1, 2", b"[1", b"2]", b'"a', b'b"', b"tru", b"{} {}", b"\xff", b'"\xed\xa0\x80"']
BLANK = [b"", b"  ", b"\t", b"\x0c"]
ODD = [b'{"i": 1}\r', b"\r", BOM + b'{"i": 2}', b'{"custom_id": "p1"}', b'{"id": 7}']
POOL = [*PROMPTS, *NEAR, *BLANK, *ODD]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


def _one_by_one(blocks: list[Block]) -> dict[str, object]:
    """The definition of a prompts file's tally: every non-blank line decoded."""
    found = PromptIds(PromptKey(), "p.jsonl")
    for block in blocks:
        for number, _, content in block.rows():
            if not is_blank(content):
                found.add_line(number, content)
    return found.tally().to_dict()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=12), st.booleans())
def test_all_json_only_where_every_line_is(lines: list[bytes], at_start: bool) -> None:
    data = b"".join(line + b"\n" for line in lines)
    block = Block(data, 0 if at_start else 10, 0, len(data))
    if all_json(data, len(data), at_start):
        assert _json_lines(block)


@settings(max_examples=200, deadline=None)
@given(st.lists(JSON_VALUES, min_size=1, max_size=20))
def test_json_lines_are_answered_in_c(values: list[object]) -> None:
    data = b"".join(orjson.dumps(v) + b"\n" for v in values)
    assert all_json(data, len(data), True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(POOL), max_size=30), st.lists(st.integers(0, 30), max_size=4))
def test_prompt_tally_is_the_lines_decoded_one_by_one(lines: list[bytes], cuts: list[int]) -> None:
    blocks = blocks_of(lines, cuts)
    assert prompt_tally(blocks, name="p.jsonl").to_dict() == _one_by_one(blocks)


def test_a_check_that_says_yes_to_a_bad_line_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tally test above fails with a check that answers True for every block."""
    monkeypatch.setattr(count.jsonlines, "all_json", lambda data, end, file_start: True)
    blocks = blocks_of([b'{"i": 0}', b"{", b"[1", b"2]"], [])
    assert prompt_tally(blocks, name="p.jsonl").to_dict() != _one_by_one(blocks)
