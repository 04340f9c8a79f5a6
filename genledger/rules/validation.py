"""Run a pandera model lazily and turn its failure cases into per-rule row positions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pandera.pandas as pa

from genledger.rules.catalogue import RULES_BY_NAME


@dataclass
class Validation:
    """The parsed table (rule columns added) and, per failing rule, the failing row positions."""

    table: pd.DataFrame
    failing: dict[str, np.ndarray] = field(default_factory=dict)

    def count(self, rule: str) -> int:
        """How many rows fail `rule`."""
        rows = self.failing.get(rule)
        return 0 if rows is None else len(rows)


def run(model: type[pa.DataFrameModel], frame: pd.DataFrame) -> Validation:
    """Validate `frame` (RangeIndex) with `lazy=True`; schema errors other than rules raise."""
    try:
        return Validation(model.validate(frame, lazy=True))
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
