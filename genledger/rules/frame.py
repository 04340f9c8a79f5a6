"""The rules evaluated with the pandera models: failing rows as counts and examples."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from genledger.rules import models as schemas
from genledger.rules import validation
from genledger.rules.catalogue import RULES_BY_NAME, Table, rules_of
from genledger.rules.result import MAX_EXAMPLES, Ids, RuleTally

# Examples of dataset-level rules name the response files as a whole (a glob, not one file).
MODELS = {
    Table.RESPONSES: schemas.ResponseTable,
    Table.TOKENIZED: schemas.TokenizedTable,
    Table.IDS: schemas.IdTable,
    Table.FILES: schemas.FileTable,
    Table.FOLDER: schemas.FolderTable,
    Table.DATASET: schemas.DatasetTable,
    Table.ROOT: schemas.RootTable,
}


def rule_tallies(table: Table, frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, RuleTally]]:
    """Validate `frame` as `table`; return the parsed frame and a tally per failing rule."""
    result = validation.run(MODELS[table], frame)
    tallies = {}
    for rule in rules_of(table):
        rows = result.failing.get(rule.name)
        if rows is not None and len(rows):
            tallies[rule.name] = RuleTally(len(rows), _examples(result.table, rows, rule.name))
    return result.table, tallies


def _examples(frame: pd.DataFrame, rows: np.ndarray, rule: str) -> list[dict[str, Any]]:
    reason = RULES_BY_NAME[rule].reason
    examples = []
    for raw in frame.iloc[rows[:MAX_EXAMPLES]].to_dict("records"):
        record = {str(k): v for k, v in raw.items()}
        example: dict[str, Any] = {"file": record.get("file"), "line": record.get("line", 0)}
        example["reason"] = reason(record)
        if "offset" in record:
            example["offset"] = record["offset"]
        examples.append(_plain(example))
    return examples


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """numpy scalars to Python ones, so the example is JSON-able."""
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in data.items()}


def id_failures(files: Iterable[tuple[str, Ids]]) -> dict[str, RuleTally]:
    """The dataset-level duplicate-id rule over all response shards, in file order."""
    names: list[str] = []
    lines: list[int] = []
    record_ids: list[str] = []
    for name, ids in files:
        names.extend([name] * len(ids))
        for line, rid in ids:
            lines.append(line)
            record_ids.append(rid)
    frame = pd.DataFrame(
        {
            "file": pd.array(names, dtype=object),
            "line": pd.array(lines, dtype="int64"),
            "record_id": pd.array(record_ids, dtype=object),
        }
    )
    return rule_tallies(Table.IDS, frame)[1]


def file_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Unreadable and empty data files of a dataset, and last lines that never end: rows of
    the FILES table's columns."""
    frame = pd.DataFrame(
        {
            "file": pd.array([r["file"] for r in rows], dtype=object),
            "role": pd.array([r["role"] for r in rows], dtype=object),
            "records": pd.array([r["records"] for r in rows], dtype="int64"),
            "error": pd.array([r["error"] for r in rows], dtype=object),
            "pending_bytes": pd.array([r["pending_bytes"] for r in rows], dtype="int64"),
            "settled": pd.array([r["settled"] for r in rows], dtype=bool),
            "line": pd.array([r["line"] for r in rows], dtype="int64"),
        }
    )
    return rule_tallies(Table.FILES, frame)[1]


def folder_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Files of a dataset folder that match no pattern: rows of file, recognised."""
    frame = pd.DataFrame(
        {
            "file": pd.array([r["file"] for r in rows], dtype=object),
            "recognised": pd.array([r["recognised"] for r in rows], dtype=bool),
        }
    )
    return rule_tallies(Table.FOLDER, frame)[1]


def dataset_failures(n_done: int, n_nonzero: int) -> dict[str, RuleTally]:
    """The aggregate rule: responses exist but not one valid non-zero count."""
    frame = pd.DataFrame(
        {
            "n_done": pd.array([n_done], dtype="int64"),
            "n_nonzero": pd.array([n_nonzero], dtype="int64"),
        }
    )
    return rule_tallies(Table.DATASET, frame)[1]


def root_failures(n_datasets: int) -> dict[str, RuleTally]:
    """The data root's own rule: it holds at least one dataset."""
    frame = pd.DataFrame({"n_datasets": pd.array([n_datasets], dtype="int64")})
    return rule_tallies(Table.ROOT, frame)[1]
