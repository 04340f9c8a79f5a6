"""The per-file token table: one row per record (or malformed line), typed pandas columns.

Rows are collected without pandas; pandas is imported only to build a non-empty table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genledger.parse.formats import ResponseFacts
from genledger.parse.tokenized import TokenizedFacts

POSITION = ("file", "line", "offset", "item", "parse_error")
RESPONSE_COLUMNS = POSITION + ResponseFacts._fields
TOKENIZED_COLUMNS = POSITION + TokenizedFacts._fields
INT_COLUMNS = frozenset({"line", "offset", "item", "n_samples"})
NULLABLE_INT_COLUMNS = frozenset(
    {"completion_tokens", "prompt_tokens", "reasoning_tokens", "cached_tokens", "output_len"}
    | {"n_tokens", "loss_len", "loss_sum"}
)
BOOL_COLUMNS = frozenset({"failed_request", "think_leak", "empty_output", "stream_chunk"})
EMPTY_RESPONSE = ResponseFacts._make(
    0 if name == "n_samples" else False if name in BOOL_COLUMNS else None
    for name in ResponseFacts._fields
)
EMPTY_TOKENIZED = TokenizedFacts(None, None, None)

if TYPE_CHECKING:
    import pandas as pd


class TableBuilder:
    """Collects rows of one file's table, then builds it with exact dtypes in one go."""

    def __init__(self, role: str, file: str) -> None:
        self.role = role
        self.file = file
        self.rows: list[tuple[Any, ...]] = []
        self._empty = EMPTY_RESPONSE if role == "responses" else EMPTY_TOKENIZED

    def add(self, line: int, offset: int, item: int, facts: tuple[Any, ...]) -> None:
        """A parsed record."""
        self.rows.append((self.file, line, offset, item, None, *facts))

    def add_malformed(self, line: int, offset: int, reason: str) -> None:
        """A line that is not a record."""
        self.rows.append((self.file, line, offset, 0, reason, *self._empty))

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame with a RangeIndex."""
        import pandas as pd  # only when there is something to tabulate: keeps no-ops light

        names = RESPONSE_COLUMNS if self.role == "responses" else TOKENIZED_COLUMNS
        columns = list(zip(*self.rows, strict=True)) if self.rows else [()] * len(names)
        return pd.DataFrame(
            {name: _column(name, values) for name, values in zip(names, columns, strict=True)}
        )


def _column(name: str, values: tuple[Any, ...]) -> Any:
    import pandas as pd

    if name in NULLABLE_INT_COLUMNS:
        return pd.array(values, dtype="Int64")
    if name in INT_COLUMNS:
        return pd.array(values, dtype="int64")
    if name in BOOL_COLUMNS:
        return pd.array(values, dtype="bool")
    return pd.array(values, dtype=object)
