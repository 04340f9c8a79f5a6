"""The books' pass over columns (`genledger.ledger.arraybooks`) gives the row pass's
`Accounted` (`books.account`, the definition) on the hard lines, generated tables, every
real recorded line, the benchmark's real-openai corpus and records the OpenAI SDK builds
near the usual shape, read in blocks cut at any line; where it cannot be exact (a column not
clean, a sum past int64) it says None and the refresh takes the row pass; planted bugs are
caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.fast import vector
from genledger.ledger import arraybooks
from genledger.ledger.arraybooks import column_account
from genledger.ledger.books import Accounted, account
from genledger.parse.schema import RESPONSES
from genledger.parse.table import TableBuilder
from genledger.refresh import count

from ..fast.realfiles import FILES, SHARED
from ..fast.test_chatline import CHANGE, _change, _real_openai_corpus, _record
from ..hard_lines import RESPONSE_LINES, TOKENIZED_LINES
from ..refresh.test_count import FAST, GENERAL, tally
from ..rules.test_audit import builder_of, drawn_table

vector.load(numpy=True)


def _both(role: str, rows: list[tuple[Any, ...]]) -> tuple[Accounted, Accounted | None]:
    column_account.cache_clear()  # a planted change is compiled in
    return account(role)(rows), column_account(role, count._taker(role))(rows)


def _real_rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for path in FILES:
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        rows += builder_of(lines, "responses").rows
    return rows


def _small(row: tuple[Any, ...]) -> bool:
    return not any(type(v) is int and abs(v) > 2**40 for v in row)


def test_the_hard_lines_count_as_the_row_pass_counts() -> None:
    for role, lines in (("responses", RESPONSE_LINES), ("tokenized", TOKENIZED_LINES)):
        rows = builder_of(lines * 3, role).rows
        by_rows, by_columns = _both(role, rows)
        assert by_columns is None or by_columns == by_rows  # counts near int64: the row pass
        small = [row for row in rows if _small(row)]
        by_rows, by_columns = _both(role, small)
        assert by_columns is not None
        assert by_columns == by_rows


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_generated_tables_count_as_the_row_pass_counts(data: st.DataObject) -> None:
    builder = drawn_table(data)
    by_rows, by_columns = _both(builder.role, builder.rows)
    assert by_columns is None or by_columns == by_rows


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_every_real_line_counts_as_the_row_pass_counts() -> None:
    rows = _real_rows()
    assert len(rows) > 1000
    by_rows, by_columns = _both("responses", rows)
    assert by_columns is not None  # the parsers' facts are clean columns
    assert by_columns == by_rows
    assert len(by_rows.groups["models"]) > 5 and by_rows.failures  # keys and failures at all


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
@pytest.mark.parametrize("cuts", [[], [1, 2, 3], list(range(0, 4000, 997)), [2500]])
def test_the_real_openai_corpus_cut_anywhere_counts_as_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cuts: list[int]
) -> None:
    lines = _real_openai_corpus(tmp_path, 1.5)
    general = tally(lines, [], GENERAL)  # one read: incremental reads count as a full one
    monkeypatch.setattr(count, "COLUMN_ROWS", 1)  # every chunk over columns
    assert tally(lines, cuts, FAST) == general
    monkeypatch.setattr(count, "CHUNK_ROWS", 333)  # and chunks that end anywhere
    assert tally(lines, cuts, FAST) == general


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(CHANGE, max_size=3), min_size=1, max_size=12),
    st.lists(st.integers(0, 12), max_size=3),
)
def test_sdk_records_near_the_shape_count_as_the_general_path(
    changed: list[list[tuple[str, str, Any]]], cuts: list[int]
) -> None:
    lines = []
    for number, changes in enumerate(changed):
        record = _record(id=f"chatcmpl-{number}")
        for where, key, value in changes:
            _change(record, where, key, value)
        try:
            line = orjson.dumps(record)
        except (TypeError, orjson.JSONEncodeError):  # beyond 64 bits, surrogates
            line = orjson.dumps({"id": "x"})
        lines.append(line[: len(line) - 3] if number % 5 == 4 else line)  # some cut short
    general = tally(lines, cuts, GENERAL)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(count, "COLUMN_ROWS", 1)
        assert tally(lines, cuts, FAST) == general


def _rows_with(**facts: Any) -> list[tuple[Any, ...]]:
    builder = TableBuilder("responses", "f.jsonl")
    usual = {"format": "openai_chat", "count_type": "int", "completion_tokens": 5,
             "prompt_tokens": 3, "n_samples": 1, "model": "m", "finish_reason": "stop"}  # fmt: skip
    for line in range(1, 4):
        builder.add(line, 0, 0, RESPONSES.make(**{**usual, **facts}))
    return builder.rows


def test_sums_that_could_pass_int64_go_to_the_row_pass() -> None:
    rows = _rows_with(completion_tokens=2**63 - 1, prompt_tokens=2**63 - 1)
    by_rows, by_columns = _both("responses", rows)
    assert by_columns is None
    assert by_rows.sums["total_comp"] == 3 * (2**63 - 1)  # past int64, exact
    done = count.tally_rows("responses", rows * 2000, FAST)  # a chunk the columns would take
    assert done.sums["total_comp"] == 6000 * (2**63 - 1)


def test_columns_not_clean_go_to_the_row_pass() -> None:
    for facts in ({"prompt_tokens": 2.5}, {"model": 5}, {"prompt_tokens": 2**64}):
        rows = _rows_with(**facts)
        assert _both("responses", rows)[1] is None
        assert count.tally_rows("responses", rows * 2000, FAST) == count.tally_rows(
            "responses", rows * 2000, GENERAL
        )


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
@pytest.mark.parametrize(
    "name, wrong",
    [
        ("SLOT_S", 3600),  # price keys by the hour
        ("TIER_STARTS", (1_000, 100_000)),  # other tier bands
        ("window_limit", lambda params=(): 999),  # a window one short
        ("INT64_MAX", -1),  # every sum refused: no pass over columns at all
    ],
)
def test_a_planted_bug_is_caught(monkeypatch: pytest.MonkeyPatch, name: str, wrong: Any) -> None:
    rows = _real_rows()
    monkeypatch.setattr(arraybooks, name, wrong)
    by_rows, by_columns = _both("responses", rows)
    column_account.cache_clear()
    assert by_columns != by_rows


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(-2, 2), st.sampled_from([0, 5, 2**40, -(2**61)])),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([1, 2, 3]),
)
def test_keys_are_grouped_in_the_order_they_first_occur(keys: list[Any], width: int) -> None:
    import numpy as np

    keys = [key[:width] for key in keys]
    parts = [np.array([key[i] for key in keys], np.int64) for i in range(width)]
    first, group = arraybooks._groups(parts)
    seen: dict[Any, int] = {}
    for row, key in enumerate(keys):
        seen.setdefault(key, row)
    assert sorted(first.tolist()) == sorted(seen.values())
    assert [keys[int(first[g])] for g in group.tolist()] == keys  # each row's own key


def test_a_trail_labelled_by_a_count_shows_its_values_and_nulls() -> None:
    from genledger.fast.columns import taker
    from genledger.ledger.books import RECORD, Trail, _trail_reader

    rows = _rows_with(prompt_tokens=None) + _rows_with(prompt_tokens=7)
    entry = Trail("t", RECORD, flags=(("any", RECORD),), value="completion_tokens",
                  valid=RECORD, label="prompt_tokens")  # fmt: skip
    names = RESPONSES.names
    used = (("line", b"i"), ("completion_tokens", b"i"), ("prompt_tokens", b"i"),
            ("parse_error", b"c"), ("stream_chunk", b"b"))  # fmt: skip
    books = arraybooks._Books(taker("responses", used)(rows), {})
    for limit in (2, 4, 10):
        assert books.trail(entry, limit) == _trail_reader(entry, names, limit)(rows)


def _tally_file(lines: list[bytes], role: str, reading: Any) -> dict[str, object]:
    from genledger.tail.lines import Block

    data = b"".join(line + b"\n" for line in lines)
    half = data.find(b"\n", len(data) // 2) + 1  # two reads
    blocks = [Block(data[:half], 0, 0, half), Block(data[half:], half, data[:half].count(b"\n"),
              len(data) - half)]  # fmt: skip
    return count.tally_blocks(blocks, "f.jsonl", role, reading).to_dict()


@pytest.mark.parametrize("shape", ["reference", "second", "tokens", "variants"])
def test_the_benchmark_corpora_count_as_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    from genledger.synth.corpus import write_corpus

    write_corpus(tmp_path, 0.6, shape=shape)
    files = sorted(tmp_path.rglob("*.jsonl"))
    checked, taken = 0, []

    def counted(role: str, take: Any, params: Any = ()) -> Any:
        def run(rows: Any) -> Any:
            taken.append(column_account(role, take, params)(rows))
            return taken[-1]

        return run

    monkeypatch.setattr(count, "column_account", counted)
    for path in files:
        role = "responses" if path.name.startswith("raw_responses") else "tokenized"
        if not path.name.startswith(("raw_responses", "tokenized")):
            continue
        lines = path.read_bytes().splitlines()
        general = _tally_file(lines, role, GENERAL)
        with monkeypatch.context() as patch:
            patch.setattr(count, "COLUMN_ROWS", 1)
            assert _tally_file(lines, role, FAST) == general, path.name
        checked += 1
    assert checked and any(done is not None for done in taken)  # the columns read some
