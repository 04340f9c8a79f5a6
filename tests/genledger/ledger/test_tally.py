"""Counters are mergeable: counting two halves and adding equals counting the whole."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger.books import account
from genledger.ledger.tally import FileTally
from genledger.parse.formats import response_facts
from genledger.parse.table import TableBuilder
from genledger.parse.tokenized import tokenized_facts
from genledger.rules.result import MAX_EXAMPLES, RuleTally, merge_failures
from genledger.synth.records import WRITERS


def mixed_records(n: int, seed: int) -> list[dict[str, Any]]:
    """Records of every writer, some zero, some invalid, some repeated ids."""
    rng = random.Random(seed)
    kinds = sorted(WRITERS)
    records = []
    for i in range(n):
        record = WRITERS[kinds[i % len(kinds)]](f"r{i % 7}", 3, rng.randint(0, 9), rng)
        if i % 5 == 0:
            record["completion_tokens"] = "bad"  # a flat count; other formats win before it
        records.append(record)
    return records


def tally(records: list[dict[str, Any]], first_line: int = 1, numbered_from: int = 0) -> FileTally:
    """Tally of records written one per line from `first_line`, their lines numbered from
    `numbered_from` when given (a piece read from the middle of a file)."""
    builder = TableBuilder("responses", "raw_responses.jsonl")
    for i, record in enumerate(records):
        line = (numbered_from or first_line) + i
        builder.add(line, 100 * (first_line + i), 0, response_facts(record))
    return FileTally.accounted(account("responses")(builder.rows))


def test_two_halves_add_up_to_the_whole() -> None:
    records = mixed_records(40, seed=1)
    whole = tally(records)
    halves = tally(records[:17]) + tally(records[17:], first_line=18)
    assert halves == whole
    assert whole["records"] == 40 and whole.failures


def test_sum_from_an_empty_tally_is_the_tally() -> None:
    part = tally(mixed_records(9, seed=2))
    assert sum([part], start=FileTally()) == part


def test_round_trip_through_json_keeps_everything() -> None:
    part = tally(mixed_records(12, seed=3))
    assert FileTally.from_dict(part.to_dict()) == part


def test_the_dict_shape_does_not_depend_on_the_values() -> None:
    assert set(FileTally().to_dict()) == set(tally(mixed_records(5, seed=4)).to_dict())


def test_merged_examples_keep_the_first_ones() -> None:
    a = RuleTally(4, [{"line": i} for i in range(4)])
    b = RuleTally(3, [{"line": i} for i in range(4, 7)])
    merged = merge_failures({"zero_tokens": a}, {"zero_tokens": b, "missing_tokens": b})
    assert merged["zero_tokens"].count == 7
    assert merged["zero_tokens"].examples == [{"line": i} for i in range(MAX_EXAMPLES)]
    assert merged["missing_tokens"] == b


def test_tokenized_tallies_merge_too() -> None:
    rows = [{"input_ids": [1] * (i % 4), "loss_mask": [i % 2] * (i % 4)} for i in range(10)]

    def tok(part: list[dict[str, Any]], first: int) -> FileTally:
        builder = TableBuilder("tokenized", "tokenized_data.jsonl")
        for i, row in enumerate(part):
            builder.add(first + i, 0, 0, tokenized_facts(row))
        return FileTally.accounted(account("tokenized")(builder.rows))

    assert tok(rows[:4], 1) + tok(rows[4:], 5) == tok(rows, 1)
    assert tok(rows, 1)["total_tokens"] == sum(len(r["input_ids"]) for r in rows)


def test_a_tally_of_sums_refuses_a_key_the_books_do_not_have() -> None:
    assert FileTally.of(prompt_lines=3)["prompt_lines"] == 3
    with pytest.raises(KeyError, match="prompt_line"):
        FileTally.of(prompt_line=3)


def test_a_damaged_tally_raises_instead_of_counting_wrong() -> None:
    good = tally(mixed_records(4, seed=5)).to_dict()
    for damaged in ({**good, "sums": [1, 2]}, {**good, "sums": {"records": "abc"}}, {}):
        with pytest.raises((ValueError, KeyError, TypeError, AttributeError)):
            FileTally.from_dict(damaged)


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=12),
    seed=st.integers(min_value=0, max_value=5),
)
def test_the_sum_of_many_tallies_equals_adding_them_one_by_one(cuts: list[int], seed: int) -> None:
    records = mixed_records(60, seed)
    bounds = [0, *sorted(cuts), 60]
    parts = [
        tally(records[a:b], first_line=a + 1) if b > a else FileTally()
        for a, b in itertools.pairwise(bounds)
    ]
    one_by_one = sum(parts, start=FileTally())
    joined = FileTally.sum_of(parts)
    assert joined == one_by_one
    assert joined.to_dict() == one_by_one.to_dict() == tally(records).to_dict()
    assert joined.trail == one_by_one.trail


def test_a_datasets_sum_keeps_its_files_output_lengths_side_by_side() -> None:
    # A dataset's files are summed for its stats only: three files of 5,000 lengths each hold
    # more than one summary keeps exact, yet their sum neither compacts them (exact still)
    # nor loads the sketch library and numpy (~0.1 s of a small refresh).
    code = (
        "import json, sys\n"
        "from dataclasses import replace\n"
        "from genledger.ledger.quantiles import Quantiles\n"
        "from genledger.ledger.tally import FileTally\n"
        "lengths = [Quantiles.of(range(i, 15000, 3)) for i in range(3)]\n"
        "files = [replace(FileTally(), quantiles={'output_tokens': q}) for q in lengths]\n"
        "for many in (files, files[:2]):\n"
        "    summed = FileTally.sum_of(many).quantiles['output_tokens']\n"
        "    assert not summed.parts and summed.n == 5000 * len(many), summed.n\n"
        "print(json.dumps([FileTally.sum_of(files).quantiles['output_tokens'].summary(),\n"
        "                  'datasketches' in sys.modules, 'numpy' in sys.modules]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    found, sketches, numpy = json.loads(run.stdout or run.stderr)
    assert (sketches, numpy) == (False, False)
    # exact: the smallest length whose rank reaches each fraction of 0..14,999
    assert found == {"p50": 7499, "p90": 13499, "p99": 14849, "max": 14999}
