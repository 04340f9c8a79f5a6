"""The pandera models' rules in plain Python, row by row (the quick-rules lever).

Importing pandas and pandera costs about a second, more than reading a 1 % append, and
pandera's per-table overhead dominates a cold scan of many files. So a process that has not
loaded pandera (the CLI, forked workers) evaluates the rules of `rules.models` here instead,
streaming over the rows; the tallies (counts, examples with the same `rules.catalogue` reasons,
sums, formats, ids) equal `genledger.rules.frame`'s, which tests/genledger/test_quickrules.py
checks on every defect and on generated tables. A process that loaded pandera already (the
Dagster code location) keeps validating with the models; `GENLEDGER_PANDERA=1|0` forces it. The
mirror knows each table's rule set: a rule added to the catalogue and not here sends every
table to pandera.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from genledger.ledger.tally import MAX_EXAMPLES, FileTally, RuleTally
from genledger.parse.formats import FINISH_SEPARATOR
from genledger.parse.table import POSITION, RESPONSE_COLUMNS, TOKENIZED_COLUMNS, TableBuilder
from genledger.rules.catalogue import RULES_BY_NAME, Table, rules_of

# Same values as genledger.rules.frame's (a test checks), kept here so no pandas is imported.
PANDERA = os.environ.get("GENLEDGER_PANDERA", "auto")  # 1: always, 0: never, auto
Row = dict[str, Any]


def _column(columns: tuple[str, ...], name: str) -> int:
    return columns.index(name)


# Row positions of the builder's tuples (genledger.parse.table): rows stay tuples on the hot path,
# and only the few that become examples are turned into dicts.
(
    R_ERROR, R_FORMAT, R_TYPE, R_COUNT, R_PROMPT, R_FINISH, R_OUT, R_FAILED, R_THINK, R_ID,
    R_LINE, R_REASONING, R_CACHED, R_SAMPLES, R_MORE, R_EMPTY, R_CHUNK,
) = (
    _column(RESPONSE_COLUMNS, name)
    for name in (
        "parse_error", "format", "count_type", "completion_tokens", "prompt_tokens",
        "finish_reason", "output_len", "failed_request", "think_leak", "record_id", "line",
        "reasoning_tokens", "cached_tokens", "n_samples", "more_finishes", "empty_output",
        "stream_chunk",
    )
)  # fmt: skip
PARSE_ERROR = POSITION.index("parse_error")  # both tables start with the position columns
T_ERROR, T_TOKENS, T_LOSS_LEN, T_LOSS_SUM = (
    _column(TOKENIZED_COLUMNS, name) for name in ("parse_error", "n_tokens", "loss_len", "loss_sum")
)


def _counted(v: tuple[Any, ...]) -> bool:
    """`genledger.rules.models.ResponseTable`'s valid count: an int >= 0."""
    count = v[R_COUNT]
    return v[R_TYPE] == "int" and count is not None and count >= 0


def _response_failed(v: tuple[Any, ...]) -> list[str]:
    """The rules of `genledger.rules.models.ResponseTable` this row fails, in catalogue order."""
    failed: list[str] = []
    parsed, found, counted = v[R_ERROR] is None, v[R_TYPE] is not None, _counted(v)
    request_failed = v[R_FAILED]
    if not parsed:
        failed.append("malformed_lines")
    if parsed and not found and not request_failed and not v[R_CHUNK]:
        failed.append("missing_tokens")
    if found and not counted:
        failed.append("invalid_tokens")
    if counted:
        count, out_len = v[R_COUNT], v[R_OUT]
        if count == 0 and not request_failed:
            failed.append("zero_tokens")
        if v[R_FORMAT] != "derived" and out_len is not None and abs(count - out_len) > 1:
            failed.append("count_mismatch")
    if request_failed:
        failed.append("failed_requests")
    if counted and v[R_COUNT] > 0 and v[R_EMPTY] and not request_failed:
        failed.append("empty_outputs")
    if v[R_THINK]:
        failed.append("think_tag_leaks")
    return failed


def _tokenized_failed(v: tuple[Any, ...]) -> list[str]:
    """The rules of `genledger.rules.models.TokenizedTable` this row fails, in catalogue order."""
    failed: list[str] = []
    n, loss_len = v[T_TOKENS], v[T_LOSS_LEN]
    if v[T_ERROR] is not None:
        failed.append("malformed_lines")
    elif n is None:
        failed.append("tokenized_missing_tokens")
    if n == 0:
        failed.append("tokenized_zero_tokens")
    if n is not None and loss_len is not None:
        if n != loss_len:
            failed.append("loss_mask_mismatch")
        if n > 0 and v[T_LOSS_SUM] == 0:
            failed.append("no_trainable_tokens")
    return failed


FLAGS: dict[Table, Callable[[Row], dict[str, bool]]] = {
    Table.IDS: lambda r: {"duplicate_ids": r["duplicate_ids"]},
    Table.FILES: lambda r: {
        "unreadable_files": r["error"] is not None,
        "empty_files": r["error"] is None and r["records"] == 0,
    },
    Table.DATASET: lambda r: {
        "all_tokens_zero_or_missing": r["n_done"] > 0 and r["n_nonzero"] == 0
    },
}
KNOWN_RULES = {
    Table.RESPONSES: {"malformed_lines", "missing_tokens", "invalid_tokens", "zero_tokens",
                      "count_mismatch", "failed_requests", "empty_outputs", "think_tag_leaks"},
    Table.TOKENIZED: {"malformed_lines", "tokenized_missing_tokens", "tokenized_zero_tokens",
                      "loss_mask_mismatch", "no_trainable_tokens"},
    Table.IDS: {"duplicate_ids"},
    Table.FILES: {"unreadable_files", "empty_files"},
    Table.DATASET: {"all_tokens_zero_or_missing"},
}  # fmt: skip


def mirrors_catalogue() -> bool:
    """Every table's rules in `genledger.rules.catalogue` are the ones mirrored here."""
    return all({r.name for r in rules_of(t)} == names for t, names in KNOWN_RULES.items())


def use_pandera() -> bool:
    """Validate with pandera: when asked (`1`), or on `auto` when it is loaded already; always
    when the catalogue has a rule the mirror does not know."""
    if not mirrors_catalogue() or PANDERA == "1":
        return True
    return PANDERA != "0" and "pandera" in sys.modules


def rule_tallies(table: Table, rows: Iterable[Row]) -> dict[str, RuleTally]:
    """Count and exemplify each failing rule of `table`, in catalogue order like pandera."""
    failures = _Failures(table)
    for row in rows:
        failures.check(row)
    return failures.tallies()


def _example(row: Row, rule: str) -> dict[str, Any]:
    example: dict[str, Any] = {"file": row.get("file"), "line": row.get("line", 0)}
    example["reason"] = RULES_BY_NAME[rule].reason(row)
    if "offset" in row:
        example["offset"] = row["offset"]
    return example


def tally_rows(builder: TableBuilder) -> FileTally:
    """The FileTally of one file's rows: pandera's when `use_pandera()`, else the mirror's."""
    if use_pandera():
        from genledger.rules.frame import tally_responses, tally_tokenized

        tally = tally_responses if builder.role == "responses" else tally_tokenized
        return tally(builder.frame())
    if builder.role == "responses":
        return mirror_responses(builder.rows)
    return mirror_tokenized(builder.rows)


class _Failures:
    """Failing-rule counts and first examples, fed one row at a time."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.flags = FLAGS.get(table)  # response and tokenized rows come as tuples (add)
        self.counts: Counter[str] = Counter()
        self.rows: dict[str, list[Row]] = {}

    def add(self, values: tuple[Any, ...], failed: list[str], columns: tuple[str, ...]) -> None:
        """A table row (a builder tuple) that fails the rules `failed`."""
        row: Row | None = None
        for name in failed:
            self.counts[name] += 1
            examples = self.rows.setdefault(name, [])
            if len(examples) < MAX_EXAMPLES:
                row = row or dict(zip(columns, values, strict=True))
                examples.append(row)

    def check(self, row: Row) -> Row:
        assert self.flags is not None
        for name, failed in self.flags(row).items():
            row[name] = failed
            if failed:
                self.counts[name] += 1
                examples = self.rows.setdefault(name, [])
                if len(examples) < MAX_EXAMPLES:
                    examples.append(row)
        return row

    def tallies(self) -> dict[str, RuleTally]:
        return {
            rule.name: RuleTally(
                self.counts[rule.name], [_example(r, rule.name) for r in self.rows[rule.name]]
            )
            for rule in rules_of(self.table)
            if self.counts[rule.name]
        }


def _records(
    rows: Iterable[tuple[Any, ...]],
    failures: _Failures,
    failed_of: Callable[[tuple[Any, ...]], list[str]],
    columns: tuple[str, ...],
) -> Iterator[tuple[Any, ...]]:
    """Every row's failures go to `failures`; the rows that are records (parsed) come out."""
    for v in rows:
        failed = failed_of(v)
        if failed:
            failures.add(v, failed, columns)
        if v[PARSE_ERROR] is None:
            yield v


def mirror_responses(rows: Iterable[tuple[Any, ...]]) -> FileTally:
    """`quality.tally_responses` in plain Python, streaming over the builder's rows."""
    failures = _Failures(Table.RESPONSES)
    tally = FileTally()
    formats: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for v in _records(rows, failures, _response_failed, RESPONSE_COLUMNS):
        if v[R_CHUNK]:  # a streamed fragment: counted apart, never a record
            tally.stream_chunks += 1
            continue
        tally.records += 1
        tally.n_samples += v[R_SAMPLES]
        if _counted(v):
            count = v[R_COUNT]
            tally.counted += 1
            tally.nonzero += count > 0
            tally.total_comp += count
        prompt, reasoning, cached = v[R_PROMPT], v[R_REASONING], v[R_CACHED]
        if prompt is not None and prompt >= 0:
            tally.total_prompt += prompt
        if reasoning is not None and reasoning >= 0:
            tally.total_reasoning += reasoning
            tally.n_reasoning += 1
        if cached is not None and cached >= 0:
            tally.total_cached_prompt += cached
            tally.n_cached += 1
        if isinstance(v[R_FORMAT], str):
            formats[v[R_FORMAT]] += 1
        if isinstance(v[R_FINISH], str):
            reasons[v[R_FINISH]] += 1
        if isinstance(v[R_MORE], str):
            reasons.update(v[R_MORE].split(FINISH_SEPARATOR))
        if v[R_ID] is not None:
            tally.ids.append(v[R_LINE], v[R_ID])
    tally.formats, tally.finish_reasons = dict(formats), dict(reasons)
    tally.failures = failures.tallies()
    return tally


def mirror_tokenized(rows: Iterable[tuple[Any, ...]]) -> FileTally:
    """`quality.tally_tokenized` in plain Python, streaming over the builder's rows."""
    failures = _Failures(Table.TOKENIZED)
    tally = FileTally()
    for v in _records(rows, failures, _tokenized_failed, TOKENIZED_COLUMNS):
        tally.records += 1
        n = v[T_TOKENS]
        if n is not None:
            tally.counted += 1
            tally.nonzero += n > 0
            tally.total_tokens += n
        if v[T_LOSS_SUM] is not None:
            tally.total_loss_tokens += v[T_LOSS_SUM]
    tally.failures = failures.tallies()
    return tally


def _counts(values: Iterable[Any]) -> dict[str, int]:
    return dict(Counter(v for v in values if isinstance(v, str)))


def id_failures(files: Iterable[tuple[str, FileTally]]) -> dict[str, RuleTally]:
    """`quality.id_failures`, by the mirror when the ids are few enough."""
    files = list(files)
    # One duplicated() pass either way: only the import would make pandera dearer.
    if use_pandera():
        from genledger.rules import frame as quality

        return quality.id_failures(files)
    return mirror_id_failures(files)


def mirror_id_failures(files: list[tuple[str, FileTally]]) -> dict[str, RuleTally]:
    """The duplicate-id rule in plain Python: an id seen before in the dataset's shards."""
    seen: set[bytes] = set()  # ids as their UTF-8 bytes: equal bytes, equal ids
    duplicates = []
    for name, tally in files:
        for line, key in tally.ids.encoded():
            if key in seen:  # only failing rows become rows of the rule's table
                duplicates.append(
                    {"file": name, "line": line, "record_id": key.decode(), "duplicate_ids": True}
                )
            else:
                seen.add(key)
    return rule_tallies(Table.IDS, duplicates)


def file_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """`quality.file_failures`, by the mirror when pandera is not needed."""
    if use_pandera():
        from genledger.rules import frame as quality

        return quality.file_failures(rows)
    return mirror_file_failures(rows)


def mirror_file_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Unreadable and empty files in plain Python."""
    return rule_tallies(Table.FILES, [dict(r) for r in rows])


def dataset_failures(n_done: int, n_nonzero: int) -> dict[str, RuleTally]:
    """`quality.dataset_failures`, by the mirror when pandera is not needed."""
    if use_pandera():
        from genledger.rules import frame as quality

        return quality.dataset_failures(n_done, n_nonzero)
    return mirror_dataset_failures(n_done, n_nonzero)


def mirror_dataset_failures(n_done: int, n_nonzero: int) -> dict[str, RuleTally]:
    """The silent-zero aggregate rule in plain Python."""
    return rule_tallies(Table.DATASET, [{"n_done": n_done, "n_nonzero": n_nonzero}])
