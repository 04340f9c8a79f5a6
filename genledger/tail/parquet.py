"""Parquet shards: opened through pyarrow, streamed in batches of rows, only the columns asked.

Pages are read as the batches need them (no pre-buffering of a whole row group, no memory map
of the file), and a batch holds about `BATCH_BYTES` of the asked columns whatever their rows'
size, so memory is bounded by a batch and a page, whatever the file's or the row group's size
(docs/performance.md, "Sealed files").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from genledger.tail.roots import RemoteFile, Source, stream_source
from genledger.tail.sealed import NotThisFormat

MAGIC = b"PAR1"
# Decoded at a time, estimated from the footer: small batches stay in the CPU caches and
# keep the reader's own buffers small (1,024 rows of 4k-token samples took 200 MB of Arrow
# memory per process and were slower than 64, benchmarks/sealed.py).
BATCH_BYTES = 4 << 20
READ_BUFFER = 1 << 20
NOT_PARQUET = "not a Parquet file"


class ParquetShard:
    """An open Parquet file: its schema, row count and row groups."""

    def __init__(self, source: Source) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        lean_memory_pool()
        self._stream = stream_source(source) if isinstance(source, RemoteFile) else None
        try:
            # Streamed, not pre-buffered nor memory-mapped: a row group's pages are read as
            # batches need them (a mapped file's pages would all count as our memory).
            self.file = pq.ParquetFile(
                self._stream or str(source), pre_buffer=False, buffer_size=READ_BUFFER
            )
        except (pa.ArrowException, ValueError) as exc:
            self.close()
            raise NotThisFormat(NOT_PARQUET) from exc

    @property
    def num_rows(self) -> int:
        """Rows in the whole file, from its footer (nothing decoded)."""
        return int(self.file.metadata.num_rows)

    @property
    def column_names(self) -> list[str]:
        """Top-level column names."""
        return list(self.file.schema_arrow.names)

    def batches(self, columns: list[str] | None, groups: range | None = None) -> Iterator[Batch]:
        """Each batch of about `BATCH_BYTES` of row groups `groups` (None: all) in file order,
        holding only `columns` (None: all), each able to give a row with every column.
        Raises `CorruptRowGroup` when a batch cannot be decoded."""
        meta = self.file.metadata
        groups = range(meta.num_row_groups) if groups is None else groups
        first = sum(meta.row_group(g).num_rows for g in range(groups.start))
        for group in groups:
            rows = self.batch_rows(group, columns)
            batches = self.file.iter_batches(
                rows, row_groups=[group], columns=columns, use_threads=False
            )
            whole = _Whole(self, group, first)
            start = first
            while (batch := _next(batches, first)) is not None:
                yield Batch(first, batch, whole, first - start)
                first += batch.num_rows

    def rows_in(self, groups: range | None) -> int:
        """Rows of row groups `groups` (None: the whole file), from the footer."""
        if groups is None:
            return self.num_rows
        return sum(self.file.metadata.row_group(g).num_rows for g in groups)

    def batch_rows(self, group: int, columns: list[str] | None) -> int:
        """Rows of row group `group` that hold about `BATCH_BYTES` of `columns` once decoded:
        each value takes at least a slot and its levels, whatever its encoded size."""
        meta = self.file.metadata.row_group(group)
        wanted = self._leaves(columns) if columns is not None else None
        if wanted is None or len(self._leaves(self.column_names)) != meta.num_columns:
            wanted = list(range(meta.num_columns))  # a layout not understood: every column
        size = 0
        for leaf in wanted:
            chunk = meta.column(leaf)
            size += chunk.total_uncompressed_size + 8 * chunk.num_values
        return max(1, min(meta.num_rows, meta.num_rows * BATCH_BYTES // max(size, 1)))

    def _leaves(self, columns: list[str]) -> list[int]:
        """Indices of the Parquet leaf columns under the top-level `columns`."""
        schema = self.file.schema_arrow
        leaves: list[int] = []
        start = 0
        for field in schema:
            count = _leaf_count(field.type)
            if field.name in columns:
                leaves.extend(range(start, start + count))
            start += count
        return leaves

    def close(self) -> None:
        """Release the file."""
        file = getattr(self, "file", None)
        if file is not None:
            file.close()
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> ParquetShard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def group_bytes(path: Path) -> list[int] | None:
    """The stored bytes of each row group of a local Parquet file (from its footer), or None
    when it has no readable footer."""
    try:
        with ParquetShard(path) as shard:
            meta = shard.file.metadata
            return [
                sum(group.column(c).total_compressed_size for c in range(group.num_columns))
                for group in (meta.row_group(g) for g in range(meta.num_row_groups))
            ]
    except (NotThisFormat, OSError):
        return None


class Batch:
    """Rows `first`... of the file with the columns asked (`data`, an Arrow record batch)."""

    def __init__(self, first: int, data: Any, whole: _Whole, offset: int) -> None:
        self.first, self.data = first, data
        self._whole, self._offset = whole, offset

    def record(self, index: int) -> dict[str, Any]:
        """Row `index` of this batch with every column of the file, as `to_pylist` gives it.
        Decoded on demand, ahead only: ask rows in increasing order. Raises
        `CorruptRowGroup`."""
        return self._whole.record(self._offset + index)


class _Whole:
    """Every column of one row group, in batches of about `BATCH_BYTES`, decoded only as far
    as the rows asked (a shard reading few columns reads the rest for few rows)."""

    def __init__(self, shard: ParquetShard, group: int, first: int) -> None:
        self.shard, self.group, self.first = shard, group, first
        self.rows = 0
        self.batches: Iterator[Any] | None = None
        self.at, self.records = 0, list[dict[str, Any]]()

    def record(self, row: int) -> dict[str, Any]:
        if self.batches is None:
            self.rows = self.shard.batch_rows(self.group, None)
            file = self.shard.file
            self.batches = file.iter_batches(self.rows, row_groups=[self.group], use_threads=False)
        if row < self.at - len(self.records):
            raise ValueError(f"row {row} asked after row {self.at - 1}")
        while row >= self.at:
            batch = _next(self.batches, self.first + self.at)
            if batch is None:
                raise IndexError(f"row {row} is past its row group")
            self.records = batch.to_pylist()
            self.at += batch.num_rows
        return self.records[row - (self.at - len(self.records))]


def _next(batches: Iterator[Any], first: int) -> Any:
    """The next batch, or None at the end; a batch that cannot be decoded raises
    `CorruptRowGroup` naming the row it starts at."""
    import pyarrow as pa

    try:
        return next(batches, None)
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = f"corrupt Parquet data after row {first}: {exc}"
        raise CorruptRowGroup(first, reason) from exc


def _leaf_count(kind: Any) -> int:
    """Parquet leaf columns an Arrow type is stored in (nested types: their children's)."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return sum(_leaf_count(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_map(kind):
        return _leaf_count(kind.key_type) + _leaf_count(kind.item_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _leaf_count(kind.value_type)
    return 1


_POOL_SET = False


def lean_memory_pool() -> None:
    """Use jemalloc, releasing freed pages at once, as Arrow's memory pool (when pyarrow has
    it): the default mimalloc pool cost a third more time in page faults for the same reads,
    and holds on to freed pages (benchmarks/sealed.py)."""
    global _POOL_SET
    if _POOL_SET:
        return
    _POOL_SET = True
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowException):
        pass  # a pyarrow built without jemalloc keeps its default pool


class CorruptRowGroup(Exception):
    """A row group that cannot be decoded; the rows before it were read."""

    def __init__(self, first_row: int, reason: str) -> None:
        super().__init__(reason)
        self.first_row = first_row
        self.reason = reason
