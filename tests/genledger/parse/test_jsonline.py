"""A line is an object or an array of objects (an SGLang batch); anything else is malformed."""

from __future__ import annotations

import pytest

from genledger.parse.jsonline import Malformed, records_of


def test_an_object_line_is_one_record() -> None:
    assert records_of(b'{"completion_tokens": 3}') == [{"completion_tokens": 3}]


def test_an_array_line_is_one_record_per_element() -> None:
    line = b'[{"meta_info": {"completion_tokens": 1}}, {"meta_info": {"completion_tokens": 2}}]'
    assert [r["meta_info"]["completion_tokens"] for r in records_of(line)] == [1, 2]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"completion_tokens": 3', "invalid JSON"),
        (b"not json at all", "invalid JSON"),
        (b'{"a": NaN}', "invalid JSON"),
        (b'{"a": "\xff"}', "invalid JSON"),
        (b"42", "not a JSON object"),
        (b'"a string"', "not a JSON object"),
        (b"null", "not a JSON object"),
        (b"true", "not a JSON object"),
        (b'[{"a": 1}, 2]', "non-object"),
        (b"[[1, 2]]", "non-object"),
    ],
)
def test_lines_that_are_not_records_are_malformed_with_a_reason(line: bytes, why: str) -> None:
    with pytest.raises(Malformed, match=why):
        records_of(line)


def test_an_empty_array_line_holds_no_records_and_is_not_malformed() -> None:
    # An array of objects with zero elements is still one (docs/tailing.md reads it so).
    assert records_of(b"[]") == []


def test_surrounding_whitespace_is_allowed() -> None:
    assert records_of(b'  {"a": 1}  ') == [{"a": 1}]
