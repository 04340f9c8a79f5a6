"""Parquet shards: opened through pyarrow, read one row group at a time, only the columns asked.

Memory is bounded by one row group of the columns read, whatever the file's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from genledger.tail.roots import RemoteFile, Source, stream_source
from genledger.tail.sealed import NotThisFormat

MAGIC = b"PAR1"
NOT_PARQUET = "not a Parquet file"


class ParquetShard:
    """An open Parquet file: its schema, row count and row groups."""

    def __init__(self, source: Source) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._stream = stream_source(source) if isinstance(source, RemoteFile) else None
        try:
            # A local file is memory-mapped: its pages are decoded without a copy first.
            self.file = pq.ParquetFile(self._stream or str(source), memory_map=False)
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
        """(first row's index, table) of each row group, holding only `columns` (None: all).
        Raises `CorruptRowGroup` when one cannot be decoded."""
        import pyarrow as pa

        first = 0
        for index in range(self.file.num_row_groups):
            try:
                table = self.file.read_row_group(index, columns=columns)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise CorruptRowGroup(first, f"corrupt Parquet row group {index}: {exc}") from exc
            yield first, table
            first += table.num_rows

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
