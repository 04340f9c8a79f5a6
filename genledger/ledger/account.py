"""A file's FileTally from its token table: the rules' failures plus the sums and counts.

Two equal ways (tests/genledger/rules/test_rows.py): row by row over the builder's tuples
(`*_by_rows`, every refresh; no pandas) and over the validated pandera frame (`*_by_frame`,
`GENLEDGER_RULES=pandera`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from genledger.ledger.idlist import IdList
from genledger.ledger.tally import FileTally
from genledger.parse.formats import FINISH_SEPARATOR
from genledger.parse.table import POSITION, RESPONSE_COLUMNS, TOKENIZED_COLUMNS
from genledger.rules.catalogue import COUNTED, Table
from genledger.rules.expr import RowFunction, condition_function
from genledger.rules.rows import Failures, failing_rules

if TYPE_CHECKING:
    import pandas as pd

Values = tuple[Any, ...]
_counted = condition_function(COUNTED, RESPONSE_COLUMNS)
NO_FINISH = "no finish reason"


def reason_kind(detail: Any) -> str:
    """A failed request's reason without its free text (`errored`, `status_code 400`)."""
    return str(detail).split(":", 1)[0][:60] if detail else "unknown"


def _position(columns: tuple[str, ...], name: str) -> int:
    return columns.index(name)


# Row positions of the builder's tuples (genledger.parse.table): rows stay tuples on the hot
# path, and only the few that become examples are turned into dicts.
(
    R_FORMAT, R_COUNT, R_PROMPT, R_FINISH, R_ID, R_LINE, R_REASONING, R_CACHED, R_SAMPLES,
    R_MORE, R_CHUNK, R_DETAIL,
) = (
    _position(RESPONSE_COLUMNS, name)
    for name in ("format", "completion_tokens", "prompt_tokens", "finish_reason", "record_id",
                 "line", "reasoning_tokens", "cached_tokens", "n_samples", "more_finishes",
                 "stream_chunk", "request_detail")
)  # fmt: skip
PARSE_ERROR = POSITION.index("parse_error")  # both tables start with the position columns
T_TOKENS, T_LOSS_SUM = (_position(TOKENIZED_COLUMNS, n) for n in ("n_tokens", "loss_sum"))


def _records(
    rows: Iterable[Values], failures: Failures, failed_of: RowFunction, columns: Sequence[str]
) -> Iterator[Values]:
    """Every row's failures go to `failures`; the rows that are records (parsed) come out."""
    for v in rows:
        failed = failed_of(v)
        if failed:
            failures.add(v, failed, columns)
        if v[PARSE_ERROR] is None:
            yield v


def responses_by_rows(rows: Iterable[Values]) -> FileTally:
    """The FileTally of one responses table's row tuples."""
    failures = Failures(Table.RESPONSES)
    tally = FileTally()
    formats: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    failed_reasons: Counter[str] = Counter()
    empty_reasons: Counter[str] = Counter()
    failed_of = failing_rules(Table.RESPONSES)
    # Plain locals on the hot path; the tally's fields are set once at the end.
    records = chunks = samples = counted = nonzero = comp = 0
    prompts = reasoning_sum = reasoning_n = cached_sum = cached_n = 0
    for v in rows:
        failed = failed_of(v)
        if failed:
            failures.add(v, failed, RESPONSE_COLUMNS)
            # the rules' own verdicts say which rows to tally by reason
            if "failed_requests" in failed:
                failed_reasons[reason_kind(v[R_DETAIL])] += 1
            if "empty_outputs" in failed:
                empty_reasons[v[R_FINISH] or NO_FINISH] += 1
        if v[PARSE_ERROR] is not None:
            continue
        if v[R_CHUNK]:  # a streamed fragment: counted apart, never a record
            chunks += 1
            continue
        records += 1
        samples += v[R_SAMPLES]
        if _counted(v):
            count = v[R_COUNT]
            counted += 1
            nonzero += count > 0
            comp += count
        prompt, reasoning, cached = v[R_PROMPT], v[R_REASONING], v[R_CACHED]
        if prompt is not None and prompt >= 0:
            prompts += prompt
        if reasoning is not None and reasoning >= 0:  # reported: the total is known
            reasoning_sum += reasoning
            reasoning_n += 1
        if cached is not None and cached >= 0:
            cached_sum += cached
            cached_n += 1
        if isinstance(v[R_FORMAT], str):
            formats[v[R_FORMAT]] += 1
        if isinstance(v[R_FINISH], str):
            reasons[v[R_FINISH]] += 1
        if isinstance(v[R_MORE], str):  # the later samples' finish reasons
            reasons.update(v[R_MORE].split(FINISH_SEPARATOR))
        if v[R_ID] is not None:
            tally.ids.append(v[R_LINE], v[R_ID])
    tally.records, tally.stream_chunks, tally.n_samples = records, chunks, samples
    tally.counted, tally.nonzero, tally.total_comp = counted, nonzero, comp
    tally.total_prompt = prompts
    tally.total_reasoning, tally.n_reasoning = reasoning_sum, reasoning_n
    tally.total_cached_prompt, tally.n_cached = cached_sum, cached_n
    tally.formats, tally.finish_reasons = dict(formats), dict(reasons)
    tally.failed_reasons, tally.empty_reasons = dict(failed_reasons), dict(empty_reasons)
    tally.failures = failures.tallies()
    return tally


def tokenized_by_rows(rows: Iterable[Values]) -> FileTally:
    """The FileTally of one tokenized table's row tuples."""
    failures = Failures(Table.TOKENIZED)
    tally = FileTally()
    for v in _records(rows, failures, failing_rules(Table.TOKENIZED), TOKENIZED_COLUMNS):
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


def responses_by_frame(frame: pd.DataFrame) -> FileTally:
    """Counters of one responses table, validated with its pandera model."""
    from genledger.rules.frame import rule_tallies

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
        n_reasoning=len(reasoning.dropna()),
        total_cached_prompt=_sum(cached),
        n_cached=len(cached.dropna()),
        n_samples=int(records["n_samples"].sum()),
        stream_chunks=int(parsed["stream_chunk"].sum()),
        formats=_counts(records["format"]),
        finish_reasons=_counts(finishes),
        failed_reasons=_counts(
            [reason_kind(d) for d in records["request_detail"][records["failed_requests"]]]
        ),
        empty_reasons=_counts(
            [
                f if isinstance(f, str) else NO_FINISH
                for f in records["finish_reason"][records["empty_outputs"]]
            ]
        ),
        failures=failures,
        ids=IdList.of(zip(with_id["line"].tolist(), with_id["record_id"].tolist(), strict=True)),
    )


def tokenized_by_frame(frame: pd.DataFrame) -> FileTally:
    """Counters of one tokenized table, validated with its pandera model."""
    from genledger.rules.frame import rule_tallies

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


def _counts(values: pd.Series | list[Any]) -> dict[str, int]:
    items = values if isinstance(values, list) else values.tolist()
    return dict(Counter(v for v in items if isinstance(v, str)))
