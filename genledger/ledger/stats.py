"""The stats JSON (docs/stats-json.md): built from the committed per-file counts, nothing else;
which stats a dataset block and the totals hold comes from the books (`ledger.books`)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from genledger.config import HealthSettings
from genledger.ledger.books import BOOKS, Count, Priced, Ratio, Sum, Tally
from genledger.ledger.health import DEFAULT_HEALTH, health_block, total_health, weighed
from genledger.ledger.records import DatasetState, FileState
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows
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
    return FileTally.sum_of(f.tally for f in files)


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
        "bytes": state.checkpoint.file.size,
        "lines": state.checkpoint.lines,
        "pending_bytes": state.pending_bytes,
        "mtime": iso_utc(state.mtime),
        "role": state.role,
    }
    if state.error is not None:
        entry["error"] = state.error
    if state.aliases:
        entry["aliases"] = list(state.aliases)
    return entry


def dataset_stats(
    kind: str,
    n_prompts_config: int | None,
    files: list[FileState],
    dataset: DatasetState,
    unrecognised: tuple[str, ...] = (),
    windows: Windows | None = None,
    settings: HealthSettings = DEFAULT_HEALTH,
) -> dict[str, Any]:
    """One dataset's block of the stats JSON; `unrecognised`: its files matching no pattern,
    `windows`: its first and latest records, `settings`: when the share rules fail."""
    ordered = sorted(files, key=lambda f: ROLES.index(f.role))  # examples: responses first
    tally = _sum_tallies(ordered)
    n_prompts = n_prompts_config
    if n_prompts is None and any(f.role == "prompts" and f.error is None for f in files):
        n_prompts = tally["prompt_lines"]
    block: dict[str, Any] = {"kind": kind, "n_prompts": n_prompts}
    block.update(book_stats(tally, n_prompts))
    failures = merge_failures(tally.failures, dataset.failures)
    health = health_block(tally, windows, failures)
    block.update(
        health=health,
        prompts=dataset.prompts,
        prompts_unjoinable=dataset.unjoinable,
        quality=quality_block(weighed(failures, health, settings)),
        files={f.name: file_entry(f) for f in files},
        unrecognised=unrecognised_block(unrecognised),
        rate=None,
    )
    return block


def _entries() -> list[tuple[str, Any]]:
    """(stat, entry) of every entry of the books that names a stat, in order (the price keys'
    stats are the cost's: `ledger.cost`)."""
    named = [(getattr(e, "stat", None), e) for entries in BOOKS.values() for e in entries]
    return [(stat, e) for stat, e in named if stat is not None and not isinstance(e, Priced)]


def book_stats(tally: FileTally, n_prompts: int | None) -> dict[str, Any]:
    """The stats the books name, in their order, from a dataset's summed tally."""
    values: dict[str, Any] = {"n_prompts": n_prompts}
    for stat, entry in _entries():
        if isinstance(entry, Tally):
            values[stat] = dict(sorted(tally.counter(entry.key).items()))
        elif isinstance(entry, Sum) and entry.known is not None and not tally[entry.known]:
            values[stat] = None  # no record reports it: unknown, never 0
        elif isinstance(entry, Count | Sum):
            values[stat] = tally[entry.key]
    return _with_ratios(values)


def _with_ratios(values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for stat, entry in _entries():
        if isinstance(entry, Ratio):
            out[stat] = _ratio(values[entry.numerator], values[entry.denominator])
        else:
            out[stat] = values[stat]
    return out


MAX_LISTED = 20  # unrecognised paths named (the count says how many in all)


def unrecognised_block(paths: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """`unrecognised`: how many files match no pattern, and the first `MAX_LISTED` paths."""
    return {"count": len(paths), "paths": list(paths[:MAX_LISTED])}


ROLES = ("responses", "tokenized", "prompts")


def totals(
    datasets: dict[str, dict[str, Any]], outside: dict[str, RuleTally] | None = None
) -> dict[str, Any]:
    """The same stats over all datasets (`outside`: failures of files in no dataset): sums,
    known-or-null sums, merged counters, ratios of the totals."""
    blocks = list(datasets.values())
    inference = [d for d in blocks if d["kind"] == "inference"]
    known = [d["n_prompts"] for d in inference]
    values: dict[str, Any] = {"n_prompts": sum(known) if inference and None not in known else None}
    for stat, entry in _entries():
        if isinstance(entry, Tally):
            values[stat] = _merged(d[stat] for d in blocks)
        elif isinstance(entry, Sum) and entry.known is not None:
            found = [d[stat] for d in blocks if d[stat] is not None]
            values[stat] = sum(found) if found else None
        elif isinstance(entry, Count | Sum):
            values[stat] = sum(d[stat] for d in blocks)
    out: dict[str, Any] = {"n_prompts": values["n_prompts"], **_with_ratios(values)}
    out["n_datasets"] = len(datasets)
    out["health"] = total_health(blocks)
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
