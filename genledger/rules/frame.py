"""Validate token tables with the pandera models and tally the results per file/dataset."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from genledger.ledger.idlist import IdList
from genledger.ledger.tally import MAX_EXAMPLES, FileTally, RuleTally
from genledger.parse.formats import FINISH_SEPARATOR
from genledger.rules import models as schemas
from genledger.rules import validation
from genledger.rules.catalogue import RULES_BY_NAME, Table, rules_of

# Examples of dataset-level rules name the response files as a whole (a glob, not one file).
MODELS = {
    Table.RESPONSES: schemas.ResponseTable,
    Table.TOKENIZED: schemas.TokenizedTable,
    Table.IDS: schemas.IdTable,
    Table.FILES: schemas.FileTable,
    Table.DATASET: schemas.DatasetTable,
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


def tally_responses(frame: pd.DataFrame) -> FileTally:
    """Counters of one responses table (validated here)."""
    table, failures = rule_tallies(Table.RESPONSES, frame)
    parsed = table[~table["malformed_lines"]]
    records = parsed[~parsed["stream_chunk"]]  # streamed fragments are no records
    counted = records[records["counted"]]
    with_id = records[records["record_id"].notna()]
    reasoning = records["reasoning_tokens"][records["reasoning_tokens"] >= 0]
    cached = records["cached_tokens"][records["cached_tokens"] >= 0]
    finishes = records["finish_reason"].tolist() + [
        reason
        for more in records["more_finishes"].dropna().tolist()
        for reason in more.split(FINISH_SEPARATOR)
    ]
    return FileTally(
        records=len(records),
        counted=len(counted),
        nonzero=int((counted["completion_tokens"] > 0).sum()),
        total_comp=_sum(counted["completion_tokens"]),
        total_prompt=_sum(records["prompt_tokens"][records["prompt_tokens"] >= 0]),
        total_reasoning=_sum(reasoning),
        n_reasoning=int(reasoning.notna().sum()),
        total_cached_prompt=_sum(cached),
        n_cached=int(cached.notna().sum()),
        n_samples=int(records["n_samples"].sum()),
        stream_chunks=int(parsed["stream_chunk"].sum()),
        formats=_counts(records["format"]),
        finish_reasons=_counts(pd.Series(finishes, dtype=object)),
        failures=failures,
        ids=IdList.of(zip(with_id["line"].tolist(), with_id["record_id"].tolist(), strict=True)),
    )


def tally_tokenized(frame: pd.DataFrame) -> FileTally:
    """Counters of one tokenized table (validated here)."""
    table, failures = rule_tallies(Table.TOKENIZED, frame)
    records = table[~table["malformed_lines"]]
    with_tokens = records[records["has_tokens"]]
    return FileTally(
        records=len(records),
        counted=len(with_tokens),
        nonzero=int((with_tokens["n_tokens"] > 0).sum()),
        total_tokens=_sum(with_tokens["n_tokens"]),
        total_loss_tokens=_sum(records["loss_sum"]),
        failures=failures,
    )


def _sum(values: pd.Series) -> int:
    return int(sum(values.dropna().tolist()))


def _counts(values: pd.Series) -> dict[str, int]:
    return dict(Counter(v for v in values.tolist() if isinstance(v, str)))


def id_failures(files: Iterable[tuple[str, FileTally]]) -> dict[str, RuleTally]:
    """The dataset-level duplicate-id rule over all response shards, in file order."""
    names, lines, ids = [], [], []
    for name, tally in files:
        names.extend([name] * len(tally.ids))
        for line, rid in tally.ids:
            lines.append(line)
            ids.append(rid)
    frame = pd.DataFrame(
        {
            "file": pd.array(names, dtype=object),
            "line": pd.array(lines, dtype="int64"),
            "record_id": pd.array(ids, dtype=object),
        }
    )
    return rule_tallies(Table.IDS, frame)[1]


def file_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Unreadable and empty data files of a dataset: rows of file, role, records, error."""
    frame = pd.DataFrame(
        {
            "file": pd.array([r["file"] for r in rows], dtype=object),
            "role": pd.array([r["role"] for r in rows], dtype=object),
            "records": pd.array([r["records"] for r in rows], dtype="int64"),
            "error": pd.array([r["error"] for r in rows], dtype=object),
        }
    )
    return rule_tallies(Table.FILES, frame)[1]


def dataset_failures(n_done: int, n_nonzero: int) -> dict[str, RuleTally]:
    """The aggregate rule: responses exist but not one valid non-zero count."""
    frame = pd.DataFrame(
        {
            "n_done": pd.array([n_done], dtype="int64"),
            "n_nonzero": pd.array([n_nonzero], dtype="int64"),
        }
    )
    return rule_tallies(Table.DATASET, frame)[1]
