"""The per-file token table: one row per record (or malformed line), typed pandas columns.

Rows are collected without pandas; pandas is imported only to build a non-empty table. The
columns and their dtypes come from the facts schema (`genledger.parse.schema`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genledger.parse.schema import TABLES, Facts

if TYPE_CHECKING:
    import pandas as pd


class TableBuilder:
    """Collects rows of one file's table, then builds it with exact dtypes in one go."""

    def __init__(self, role: str, file: str) -> None:
        self.role = role
        self.file = file
        self.table = TABLES[role]
        self.rows: list[tuple[Any, ...]] = []

    def add(self, line: int, offset: int, item: int, facts: Facts) -> None:
        """A parsed record."""
        self.rows.append((self.file, line, offset, item, None, *facts))

    def add_all(self, line: int, offset: int, facts: list[Facts]) -> None:
        """A line's parsed records, in order (a settled stream request's events and facts)."""
        file = self.file
        self.rows.extend([(file, line, offset, item, None, *f) for item, f in enumerate(facts)])

    def add_malformed(self, line: int, offset: int, reason: str) -> None:
        """A line that is not a record."""
        self.rows.append((self.file, line, offset, 0, reason, *self.table.empty))

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame with a RangeIndex."""
        return frame_of(self.role, self.rows)


def frame_of(role: str, rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """Row tuples of a role's table as a DataFrame with the schema's dtypes."""
    import pandas as pd  # only when there is something to tabulate: keeps no-ops light

    table = TABLES[role]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(table.columns)
    return pd.DataFrame(
        {
            column.name: pd.array(values, dtype=column.dtype)  # type: ignore[call-overload]
            for column, values in zip(table.columns, columns, strict=True)
        }
    )
