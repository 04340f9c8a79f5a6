"""Tokenized Parquet columns decoded with Arrow buffers and numpy, no Python loop per row.

`input_ids` / `loss_mask` as `list<int>` or `list<list<int>>` (one level unwrapped, like
`parse.tokenized.unwrap`) give each row's token count, mask length and mask sum straight from
the list offsets and a running sum of the values: the tokenized facts as numpy columns, which
the books sum in bulk (`ledger.books.array_sums`). Columns of any other type, or values the
general path would read differently (null inner lists, non-integer or huge mask values),
return None: the caller then reads those rows through `parse.tokenized.tokenized_facts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MASK_BOUND = 1 << 31  # mask values within ±this keep every per-row sum exact in int64


@dataclass
class Columns:
    """Per-row facts of one row group, as numpy arrays (`*_ok`: the value is not None)."""

    n_tokens: Any
    n_ok: Any
    loss_len: Any
    loss_ok: Any
    loss_sum: Any

    @property
    def rows(self) -> int:
        """How many rows."""
        return len(self.n_tokens)

    @property
    def arrays(self) -> dict[str, tuple[Any, Any]]:
        """The tokenized fact columns as (values, present) pairs."""
        return {
            "n_tokens": (self.n_tokens, self.n_ok),
            "loss_len": (self.loss_len, self.loss_ok),
            "loss_sum": (self.loss_sum, self.loss_ok),
        }

    def row(self, index: int) -> tuple[int | None, int | None, int | None]:
        """(n_tokens, loss_len, loss_sum) of one row, None where the value is absent."""
        ok = bool(self.loss_ok[index])
        return (
            int(self.n_tokens[index]) if self.n_ok[index] else None,
            int(self.loss_len[index]) if ok else None,
            int(self.loss_sum[index]) if ok else None,
        )


def _is_list(pa: Any, kind: Any) -> bool:
    return bool(pa.types.is_list(kind) or pa.types.is_large_list(kind))


def _flat(pa: Any, array: Any) -> tuple[Any, Any, Any] | None:
    """(valid rows, per-row value offsets into `values`, values) of a list or list-of-lists
    array, or None when the general path must read it."""

    if not _is_list(pa, array.type):
        return None
    valid = _valid(array)
    offsets = _numbers(pa, array.offsets)
    values = array.values
    if _is_list(pa, values.type):
        if values.null_count:
            return None  # [[1], null] is no list of lists to the general path
        offsets = _numbers(pa, values.offsets)[offsets]
        values = values.values
    elif pa.types.is_list(values.type) or pa.types.is_struct(values.type):
        return None
    return valid, offsets, values


# pyarrow's own `to_numpy` imports pandas on first use: 0.2 s of CPU in every forked worker,
# a tenth of a 1 GB count. The buffers are read as numpy directly instead.


def _numbers(pa: Any, array: Any) -> Any:
    """A null-free integer array's values as numpy, without a copy."""
    import numpy as np

    kind = array.type
    width = kind.bit_width // 8
    dtype = np.dtype(f"{'i' if pa.types.is_signed_integer(kind) else 'u'}{width}")
    return np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * width)


def _valid(array: Any) -> Any:
    """Whether each value of `array` is not null, as a numpy bool array."""
    import numpy as np

    if array.null_count == 0:
        return np.ones(len(array), bool)
    bits = np.unpackbits(np.frombuffer(array.buffers()[0], np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def _sums(pa: Any, offsets: Any, values: Any) -> Any | None:
    """Per-row sums of integer values between `offsets`; None when the general path must."""
    import numpy as np
    import pyarrow.compute as pc

    if not pa.types.is_integer(values.type):
        return None  # floats and booleans count differently in mask_sum
    if len(values):
        bounds = pc.min_max(values)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is not None and (low < -MASK_BOUND or high > MASK_BOUND):
            return None
    if values.null_count:
        values = values.fill_null(0)
    numbers = _numbers(pa, values)
    starts, lengths = offsets[:-1], np.diff(offsets)
    sums = np.zeros(len(lengths), np.int64)
    filled = lengths > 0
    if filled.any():
        # One pass, no running-sum array as large as the column. reduceat sums from each
        # start to the next one: over the non-empty rows only, each segment is its own row.
        used = numbers[: offsets[-1]]
        sums[filled] = np.add.reduceat(used, starts[filled], dtype=np.int64)
    return sums


def _one_array(column: Any) -> Any:
    """A column as one array: a record batch's is one; a table's is usually one chunk already
    (no copy then)."""
    if not hasattr(column, "num_chunks"):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def columns_of(table: Any) -> Columns | None:
    """The facts of every row of a table or record batch with `input_ids` and maybe
    `loss_mask` columns."""
    import numpy as np
    import pyarrow as pa

    rows = table.num_rows
    n_tokens, n_ok = np.zeros(rows, np.int64), np.zeros(rows, bool)
    loss_len, loss_ok, loss_sum = np.zeros(rows, np.int64), np.zeros(rows, bool), None
    names = table.column_names
    if "input_ids" in names:
        flat = _flat(pa, _one_array(table.column("input_ids")))
        if flat is None:
            return None
        n_ok, offsets, _ = flat
        n_tokens = np.diff(offsets).astype(np.int64)
    if "loss_mask" in names:
        flat = _flat(pa, _one_array(table.column("loss_mask")))
        if flat is None:
            return None
        loss_ok, offsets, values = flat
        loss_len = np.diff(offsets).astype(np.int64)
        loss_sum = _sums(pa, offsets, values)
        if loss_sum is None:
            return None
    if loss_sum is None:
        loss_sum = np.zeros(rows, np.int64)
    return Columns(n_tokens, n_ok, loss_len, loss_ok, loss_sum)


def records_with_stand_ins(batch: Any, counted: frozenset[str]) -> list[dict[str, Any]]:
    """`batch.to_pylist()`, except that each flat integer list column in `counted` (one the
    declarations read only by `len(...)` or presence) becomes a same-length list of zeros per
    row, from the list offsets: no Python int is made for an id (~20-50 us a 1,000-id row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.column_names
    lengths: dict[str, list[int | None]] = {}
    arrays = []
    for name, column in zip(names, batch.columns, strict=True):
        kind = column.type
        if name in counted and _is_list(pa, kind) and pa.types.is_integer(kind.value_type):
            lengths[name] = pc.list_value_length(column).to_pylist()
            column = pa.nulls(len(column))  # keeps the key, and its place, in each record
        arrays.append(column)
    if not lengths:
        return batch.to_pylist()  # type: ignore[no-any-return]
    records: list[dict[str, Any]] = pa.RecordBatch.from_arrays(arrays, names=names).to_pylist()
    for name, counts in lengths.items():
        for record, n in zip(records, counts, strict=True):
            if n is not None:
                record[name] = [0] * n
    return records
