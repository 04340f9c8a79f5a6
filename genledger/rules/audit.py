"""The audit: pandera validates a table the books' pass counted, and must find the same
failures (`GENLEDGER_AUDIT=1`, the tests, the Dagster layer's schemas).

It is a second, independent evaluation of the rule conditions — vectorised over pandas
columns instead of compiled over row tuples — so a difference means a bug in one of them;
it raises rather than report numbers nobody can trust.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa

from genledger.parse.table import frame_of
from genledger.rules.catalogue import RULES_BY_NAME, Table
from genledger.rules.models import schema_of
from genledger.rules.result import RuleTally


class AuditMismatch(AssertionError):
    """pandera and the books' pass disagree on a table's failures; the message says how."""


@dataclass
class Validation:
    """The parsed table (rule columns added) and, per failing rule, the failing positions."""

    table: pd.DataFrame
    failing: dict[str, np.ndarray] = field(default_factory=dict)

    def count(self, rule: str) -> int:
        """How many rows fail `rule`."""
        rows = self.failing.get(rule)
        return 0 if rows is None else len(rows)

    def counts(self) -> dict[str, int]:
        """Failing rows per failing rule."""
        return {rule: len(rows) for rule, rows in self.failing.items() if len(rows)}


def validate(table: Table, frame: pd.DataFrame, params: dict[str, Any] | None = None) -> Validation:
    """Validate `frame` (RangeIndex) lazily (`params` bound); schema errors other than rules
    raise."""
    try:
        return Validation(schema_of(table, _key(params)).validate(frame, lazy=True))
    except pa.errors.SchemaErrors as errors:
        cases = errors.failure_cases
        unexpected = cases[~cases["column"].isin(list(RULES_BY_NAME))]
        if len(unexpected):
            raise
        failing = {
            str(rule): np.sort(group["index"].to_numpy(dtype=np.int64))
            for rule, group in cases.groupby("column", sort=False)
        }
        return Validation(errors.data, failing)


def _key(params: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((params or {}).items()))


def audit(
    role: str,
    rows: list[tuple[Any, ...]],
    failures: Mapping[str, RuleTally],
    params: dict[str, Any] | None = None,
) -> None:
    """Validate the rows of a `role` table and compare every rule's failing rows with the
    books' pass (`failures`); raises `AuditMismatch` when they differ."""
    found = validate(Table(role), frame_of(role, rows), params).counts()
    counted = {name: tally.count for name, tally in failures.items() if tally.count}
    if found != counted:
        raise AuditMismatch(
            f"the audit of a {role} table disagrees with the books: pandera {found}, "
            f"books {counted}"
        )
