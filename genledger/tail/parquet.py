"""Parquet shards: opened through pyarrow, streamed in batches of rows, only the columns asked.

Pages are read as the batches need them (no pre-buffering of a whole row group), so memory
is bounded by a batch and a page, whatever the file's or the row group's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from genledger.tail.roots import RemoteFile, Source, stream_source
from genledger.tail.sealed import NotThisFormat

MAGIC = b"PAR1"
BATCH_ROWS = 1024  # rows decoded at a time: ~40 MB of 4k-token samples
READ_BUFFER = 1 << 20
NOT_PARQUET = "not a Parquet file"


class ParquetShard:
    """An open Parquet file: its schema, row count and row groups."""

    def __init__(self, source: Source) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._stream = stream_source(source) if isinstance(source, RemoteFile) else None
        try:
            # A local file is memory-mapped: its pages are decoded without a copy first.
            # Streamed, not pre-buffered: a row group's pages are read as batches need them
            # (a third of the memory and faster than whole row groups, benchmarks/sealed.py).
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
        """(first row's index, table) of each batch of `BATCH_ROWS` rows, holding only
        `columns` (None: all). Raises `CorruptRowGroup` when a batch cannot be decoded."""
        import pyarrow as pa

        first = 0
        batches = self.file.iter_batches(BATCH_ROWS, columns=columns, use_threads=False)
        while True:
            try:
                batch = next(batches, None)
            except (pa.ArrowException, OSError, ValueError) as exc:
                reason = f"corrupt Parquet data after row {first}: {exc}"
                raise CorruptRowGroup(first, reason) from exc
            if batch is None:
                return
            yield first, pa.Table.from_batches([batch])
            first += batch.num_rows

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


class CorruptRowGroup(Exception):
    """A row group that cannot be decoded; the rows before it were read."""

    def __init__(self, first_row: int, reason: str) -> None:
        super().__init__(reason)
        self.first_row = first_row
        self.reason = reason
