"""Parquet shards: opened through pyarrow, streamed in batches of rows, only the columns asked.

Pages are read as the batches need them (no pre-buffering of a whole row group, no memory map
of the file), and a batch holds about `BATCH_BYTES` of the asked columns whatever their rows'
size, so memory is bounded by a batch and a page, whatever the file's or the row group's size
(docs/performance.md, "Sealed files").
"""

from __future__ import annotations

from collections.abc import Iterator
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

    def row_groups(self, columns: list[str] | None) -> Iterator[tuple[int, Any]]:
        """(first row's index, record batch) of each batch of about `BATCH_BYTES`, holding
        only `columns` (None: all). Raises `CorruptRowGroup` when a batch cannot be decoded."""
        import pyarrow as pa

        first = 0
        for group in range(self.file.num_row_groups):
            rows = self.batch_rows(group, columns)
            batches = self.file.iter_batches(
                rows, row_groups=[group], columns=columns, use_threads=False
            )
            while True:
                try:
                    batch = next(batches, None)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    reason = f"corrupt Parquet data after row {first}: {exc}"
                    raise CorruptRowGroup(first, reason) from exc
                if batch is None:
                    break
                yield first, batch
                first += batch.num_rows

    def batch_rows(self, group: int, columns: list[str] | None) -> int:
        """Rows of row group `group` that hold about `BATCH_BYTES` of `columns` once decoded:
        each value takes at least a slot and its levels, whatever its encoded size."""
        meta = self.file.metadata.row_group(group)
        wanted = range(meta.num_columns) if columns is None else self._leaves(columns)
        size = 0
        for leaf in wanted:
            chunk = meta.column(leaf)
            size += chunk.total_uncompressed_size + 8 * chunk.num_values
        return max(1, min(meta.num_rows, meta.num_rows * BATCH_BYTES // max(size, 1)))

    def _leaves(self, columns: list[str]) -> list[int]:
        """Indices of the Parquet leaf columns under the top-level `columns`."""
        schema = self.file.schema_arrow
        leaves, start = [], 0
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
