"""The stats JSON v1 (docs/design.md §5): built from the committed per-file counts, nothing else."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from genledger.ledger.records import DatasetState, FileState
from genledger.ledger.tally import FileTally
from genledger.rules.catalogue import COUNTER_NAMES, RULES, RULES_BY_NAME, Severity, worst
from genledger.rules.result import MAX_EXAMPLES, RuleTally, merge_failures

SCHEMA_VERSION = 1
RULE_ORDER = {rule.name: i for i, rule in enumerate(RULES)}


def iso_utc(ts: float | None) -> str | None:
    """A POSIX timestamp as ISO-8601 UTC (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


def _ratio(numerator: int, denominator: int | None) -> float | None:
    return numerator / denominator if denominator else None


def _sum_tallies(files: list[FileState]) -> FileTally:
    return sum((f.tally for f in files), start=FileTally())


def quality_block(failures: dict[str, RuleTally]) -> dict[str, Any]:
    """Status, one counter per rule (0 when clean) and the failures with examples."""
    block: dict[str, Any] = {"status": worst([RULES_BY_NAME[n].severity for n in failures])}
    block.update({name: failures[name].count if name in failures else 0 for name in COUNTER_NAMES})
    ordered = sorted(
        failures,
        key=lambda n: (RULES_BY_NAME[n].severity is not Severity.ERROR, RULE_ORDER[n]),
    )
    block["failures"] = [
        {
            "check": name,
            "severity": str(RULES_BY_NAME[name].severity),
            "count": failures[name].count,
            "examples": failures[name].examples,
        }
        for name in ordered
    ]
    return block


def file_entry(state: FileState) -> dict[str, Any]:
    """bytes, lines, pending_bytes, mtime (and role, error) of one file."""
    entry: dict[str, Any] = {
        "bytes": state.checkpoint.size,
        "lines": state.checkpoint.lines,
        "pending_bytes": state.pending_bytes,
        "mtime": iso_utc(state.mtime),
        "role": state.role,
    }
    if state.error is not None:
        entry["error"] = state.error
    return entry


def dataset_stats(
    kind: str,
    n_prompts_config: int | None,
    files: list[FileState],
    dataset: DatasetState,
    unrecognised: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One dataset's block of the stats JSON; `unrecognised`: its files matching no pattern."""
    by_role = {role: [f for f in files if f.role == role] for role in ROLES}
    responses = _sum_tallies(by_role["responses"])
    tokenized = _sum_tallies(by_role["tokenized"])
    n_prompts = n_prompts_config
    readable_prompts = [f for f in by_role["prompts"] if f.error is None]
    if n_prompts is None and readable_prompts:
        n_prompts = sum(f.tally.prompt_lines for f in readable_prompts)
    failures = merge_failures(
        merge_failures(responses.failures, tokenized.failures), dataset.failures
    )
    return {
        "kind": kind,
        "n_prompts": n_prompts,
        "n_done": responses.records,
        "progress": _ratio(responses.records, n_prompts),
        "total_comp": responses.total_comp,
        "avg_comp": _ratio(responses.total_comp, responses.counted),
        "total_prompt": responses.total_prompt,
        "total_reasoning": responses.total_reasoning if responses.n_reasoning else None,
        "total_cached_prompt": responses.total_cached_prompt if responses.n_cached else None,
        "n_samples": responses.n_samples,
        "stream_chunks": responses.stream_chunks,
        "failed_request_reasons": dict(sorted(responses.failed_reasons.items())),
        "empty_output_reasons": dict(sorted(responses.empty_reasons.items())),
        "n_counted": responses.counted,
        "formats": dict(sorted(responses.formats.items())),
        "finish_reasons": dict(sorted(responses.finish_reasons.items())),
        "n_tokenized": tokenized.records,
        "total_tokens": tokenized.total_tokens,
        "avg_tokens": _ratio(tokenized.total_tokens, tokenized.counted),
        "n_tokens_counted": tokenized.counted,
        "total_loss_tokens": tokenized.total_loss_tokens,
        "quality": quality_block(failures),
        "files": {f.name: file_entry(f) for f in files},
        "unrecognised": unrecognised_block(unrecognised),
        "rate": None,
    }


MAX_LISTED = 20  # unrecognised paths named (the count says how many in all)


def unrecognised_block(paths: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """`unrecognised`: how many files match no pattern, and the first `MAX_LISTED` paths."""
    return {"count": len(paths), "paths": list(paths[:MAX_LISTED])}


ROLES = ("responses", "tokenized", "prompts")
SUMMED = (
    "n_done",
    "total_comp",
    "total_prompt",
    "n_counted",
    "n_tokenized",
    "total_tokens",
    "total_loss_tokens",
    "n_tokens_counted",
    "n_samples",
    "stream_chunks",
)
KNOWN_OR_NULL = ("total_reasoning", "total_cached_prompt")  # null when no record reports them


def totals(
    datasets: dict[str, dict[str, Any]], outside: dict[str, RuleTally] | None = None
) -> dict[str, Any]:
    """The same counters summed over datasets (`outside`: failures of files in no dataset)."""
    out: dict[str, Any] = {key: sum(d[key] for d in datasets.values()) for key in SUMMED}
    for key in KNOWN_OR_NULL:
        known = [d[key] for d in datasets.values() if d[key] is not None]
        out[key] = sum(known) if known else None
    inference = [d for d in datasets.values() if d["kind"] == "inference"]
    known = [d["n_prompts"] for d in inference]
    out["n_prompts"] = sum(known) if inference and None not in known else None
    out["progress"] = _ratio(out["n_done"], out["n_prompts"])
    out["avg_comp"] = _ratio(out["total_comp"], out["n_counted"])
    out["avg_tokens"] = _ratio(out["total_tokens"], out["n_tokens_counted"])
    out["formats"] = _merged(d["formats"] for d in datasets.values())
    out["finish_reasons"] = _merged(d["finish_reasons"] for d in datasets.values())
    for key in ("failed_request_reasons", "empty_output_reasons"):
        out[key] = _merged(d[key] for d in datasets.values())
    out["n_datasets"] = len(datasets)
    out["quality"] = _total_quality(datasets, outside or {})
    out["rate"] = None
    return out


def _merged(maps: Any) -> dict[str, int]:
    total: Counter[str] = Counter()
    for mapping in maps:
        total.update(mapping)
    return dict(sorted(total.items()))


def _total_quality(
    datasets: dict[str, dict[str, Any]], outside: dict[str, RuleTally]
) -> dict[str, Any]:
    failures: dict[str, RuleTally] = {}
    for name, data in datasets.items():
        for failure in data["quality"]["failures"]:
            examples = [{"dataset": name, **e} for e in failure["examples"]]
            failures = merge_failures(
                failures, {failure["check"]: RuleTally(failure["count"], examples)}
            )
    failures = merge_failures(failures, outside)
    block = quality_block(failures)
    block["datasets_by_status"] = dict(Counter(d["quality"]["status"] for d in datasets.values()))
    for failure in block["failures"]:
        failure["examples"] = failure["examples"][:MAX_EXAMPLES]
    return block


def document(
    data_root: str,
    datasets: dict[str, dict[str, Any]],
    now: float,
    unrecognised: tuple[str, ...] = (),
    outside: dict[str, RuleTally] | None = None,
    unreadable: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    """The whole stats JSON; `unrecognised`: files under the root in no dataset (loose, or in
    a folder holding no recognised file), `unreadable`: what cannot be read there (path,
    reason), `outside`: their rule failures and the root's own."""
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": iso_utc(now),
        "data_root": data_root,
        "totals": totals(datasets, outside),
        "datasets": datasets,
        "unrecognised": unrecognised_block(unrecognised),
        "unreadable": unreadable_block(unreadable),
    }


def unreadable_block(entries: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """`unreadable`: how many entries outside every dataset cannot be read, and the first
    `MAX_LISTED` of them with the OS's reason."""
    return {"count": len(entries), "files": dict(entries[:MAX_LISTED])}
