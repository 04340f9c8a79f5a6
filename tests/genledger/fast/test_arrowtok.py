"""Tokenized Parquet counted in bulk equals the general path row by row, on generated tables."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.fast.arrowtok import columns_of, records_with_stand_ins
from genledger.refresh.scan import scan_file

from ..shards import jsonl

IDS = st.lists(st.integers(0, 9), max_size=5)
MASK = st.lists(st.one_of(st.integers(0, 1), st.integers(-3, 3)), max_size=5)
NESTED = st.booleans()


@st.composite
def tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows of one Parquet file: flat or [[...]] lists, masks of any length, some nulls."""
    nested = draw(NESTED)
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        ids = draw(st.one_of(st.none(), IDS))
        mask = draw(st.one_of(st.none(), MASK))
        if nested:
            ids = None if ids is None else [ids]
            mask = None if mask is None else [mask]
        rows.append({"input_ids": ids, "loss_mask": mask})
    return rows


def tally(path: Path) -> Any:
    scan = scan_file(path, f"x/{path.name}", "tokenized", None)
    assert scan.error is None
    failures = {
        k: (v.count, [(e["line"], e["reason"]) for e in v.examples])
        for k, v in scan.delta.failures.items()
    }
    d = scan.delta
    keys = ("tokenized_records", "tokens_counted", "tokens_nonzero", "total_tokens")
    return *(d[k] for k in keys), d["total_loss_tokens"], failures


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=tables(), group=st.integers(1, 5))
def test_bulk_counts_equal_the_general_path(rows: list[dict[str, Any]], group: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain, sealed = Path(tmp) / "tokenized_data.jsonl", Path(tmp) / "tokenized_data.parquet"
        plain.write_bytes(jsonl(rows))
        pq.write_table(pa.Table.from_pylist(rows), sealed, row_group_size=group)
        assert tally(sealed) == tally(plain)


@settings(max_examples=100, deadline=None)
@given(rows=tables(), start=st.integers(0, 12))
def test_a_sliced_batch_gives_the_facts_of_the_same_rows_copied(
    rows: list[dict[str, Any]], start: int
) -> None:
    # Record batches may be views into bigger buffers (an offset): their buffers are read
    # from that offset on, validity bits included.
    sliced = pa.Table.from_pylist(rows).slice(start)
    copied = pa.Table.from_pylist(sliced.to_pylist(), schema=sliced.schema)
    got, expected = columns_of(sliced), columns_of(copied)
    assert (got is None) == (expected is None)
    if got is not None and expected is not None:
        for name in ("n_tokens", "n_ok", "loss_len", "loss_ok", "loss_sum"):
            assert getattr(got, name).tolist() == getattr(expected, name).tolist(), name


@st.composite
def response_tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows of a responses Parquet file: flat /generate records whose id lists (flat, [[...]],
    empty or null) are only counted, beside counts that are there or not."""
    nested = draw(NESTED)
    rows = []
    for i in range(draw(st.integers(1, 12))):
        out, inp = draw(st.one_of(st.none(), IDS)), draw(st.one_of(st.none(), IDS))
        if nested:
            out, inp = (None if v is None else [v] for v in (out, inp))
        count = draw(st.one_of(st.none(), st.integers(0, 9)))
        rows.append({"id": f"r{i}", "completion_tokens": count, "output_ids": out,
                     "input_ids": inp, "text": draw(st.sampled_from(["", "a", None]))})  # fmt: skip
    return rows


def response_tally(path: Path) -> Any:
    scan = scan_file(path, f"x/{path.name}", "responses", None)
    assert scan.error is None
    d = scan.delta
    failures = {
        k: (v.count, [(e["line"], e["reason"]) for e in v.examples]) for k, v in d.failures.items()
    }
    return {k: d[k] for k in d.sums}, d.counters, failures


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=response_tables(), group=st.integers(1, 5))
def test_counted_id_lists_of_responses_give_the_facts_of_their_values(
    rows: list[dict[str, Any]], group: int
) -> None:
    # output_ids / input_ids are read by len(...) only: Parquet rows get lists of zeros from
    # the list offsets; the books equal those of the same records as JSON lines.
    with tempfile.TemporaryDirectory() as tmp:
        plain, sealed = Path(tmp) / "raw_responses.jsonl", Path(tmp) / "raw_responses.parquet"
        plain.write_bytes(jsonl(rows))
        pq.write_table(pa.Table.from_pylist(rows), sealed, row_group_size=group)
        assert response_tally(sealed) == response_tally(plain)


def test_only_flat_integer_lists_become_stand_ins() -> None:
    batch = pa.RecordBatch.from_pylist(
        [{"output_ids": [5, 6], "input_ids": [[1]], "x": [7]}, {"output_ids": None, "input_ids":
          None, "x": None}]
    )  # fmt: skip
    records = records_with_stand_ins(batch, frozenset({"output_ids", "input_ids"}))
    assert records == [
        {"output_ids": [0, 0], "input_ids": [[1]], "x": [7]},
        {"output_ids": None, "input_ids": None, "x": None},
    ]
