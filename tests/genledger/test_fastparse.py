"""The fast line decoder gives exactly the general path's facts (or its Malformed reason)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger import fastparse
from genledger.fastparse import general_facts, line_facts
from genledger.jsonline import Malformed

from .hard_lines import (
    RESPONSE_LINES,
    RESPONSE_RECORDS,
    TOKENIZED_LINES,
    TOKENIZED_RECORDS,
    encodings,
)


def outcome(decode: Any, line: bytes, role: str) -> Any:
    """Facts, or the Malformed reason, of one line."""
    try:
        return decode(line, role)
    except Malformed as exc:
        return ("malformed", str(exc))


def assert_same(line: bytes, role: str) -> None:
    assert outcome(line_facts, line, role) == outcome(general_facts, line, role), line[:200]


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
    decoder = fastparse._Decoder("responses")
    for line in RESPONSE_LINES[:7]:
        assert decoder.decode(line)
    assert fastparse._Decoder("tokenized").decode(TOKENIZED_LINES[0])


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
