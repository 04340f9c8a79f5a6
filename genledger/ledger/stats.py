"""The stats JSON (docs/stats-json.md), written here and nowhere else: each block's fields are
declared once, in order (`DATASET_FIELDS`, `TOTALS_FIELDS`, `DOCUMENT_FIELDS`), and `written`
lays out the sections other modules compute (cost: `ledger.cost`, rates: `ledger.rates`,
provider books: `ledger.provider`) in that order. The sections come from the committed
per-file counts, nothing else; which stats they hold comes from the books (`ledger.books`).
The JSON Schema (`ledger.schema`) is generated from the same declarations."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from genledger.config import HealthSettings
from genledger.ledger.books import BOOKS, Count, Priced, Ratio, Sum, Tally
from genledger.ledger.health import DEFAULT_HEALTH, health_block, total_health, weighed
from genledger.ledger.provider import Status, provider_books, provider_rows
from genledger.ledger.records import DatasetState, FileState
from genledger.ledger.tally import FileTally
from genledger.ledger.window import Windows
from genledger.rules.catalogue import COUNTER_NAMES, RULES, RULES_BY_NAME, Severity, worst
from genledger.rules.result import MAX_EXAMPLES, RuleTally, merge_failures
from genledger.rules.rows import provider_failures

SCHEMA_VERSION = 1
RULE_ORDER = {rule.name: i for i, rule in enumerate(RULES)}


def book_entries() -> list[tuple[str, Any]]:
    """(stat, entry) of every entry of the books that names a stat, in order (the price keys'
    stats are the cost's: `ledger.cost`)."""
    named = [(getattr(e, "stat", None), e) for entries in BOOKS.values() for e in entries]
    return [(stat, e) for stat, e in named if stat is not None and not isinstance(e, Priced)]


BOOK_STATS = tuple(stat for stat, _ in book_entries())
COST_FIELDS = ("models", "cost_usd", "cost_projected_usd", "cost_unpriced", "prices")
# The order of every block's fields: the one place it is stated.
DATASET_FIELDS = (
    "kind",
    "n_prompts",
    *BOOK_STATS,
    "health",
    "prompts",
    "prompts_unjoinable",
    "provider_books",
    *COST_FIELDS,
    "quality",
    "files",
    "unrecognised",
    "aliases",
    "rate",
)
TOTALS_FIELDS = ("n_prompts", *BOOK_STATS, "n_datasets", "health", *COST_FIELDS, "quality", "rate")
DOCUMENT_FIELDS = (
    "schema_version",
    "generated_at",
    "data_root",
    "totals",
    "datasets",
    "unrecognised",
    "unreadable",
)


def written(fields: tuple[str, ...], sections: dict[str, Any]) -> dict[str, Any]:
    """The block of `sections` in the order of `fields`; a field missing or undeclared is a
    bug, raised at once rather than written."""
    if set(sections) != set(fields):
        missing, extra = set(fields) - set(sections), set(sections) - set(fields)
        raise KeyError(f"stats block: missing {sorted(missing)}, undeclared {sorted(extra)}")
    return {name: sections[name] for name in fields}


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


def dataset_sections(
    kind: str,
    n_prompts_config: int | None,
    files: list[FileState],
    dataset: DatasetState,
    unrecognised: tuple[str, ...] = (),
    windows: Windows | None = None,
    settings: HealthSettings = DEFAULT_HEALTH,
    status: Status | None = None,
    aliases: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One dataset's sections counted from its files (all but its cost and rate);
    `unrecognised`: its files matching no pattern, `windows`: its first and latest records,
    `settings`: when the share rules fail, `status`: the provider's batch status objects,
    `aliases`: the folders that are the dataset's own (or one in it) under another name."""
    ordered = sorted(files, key=lambda f: ROLES.index(f.role))  # examples: responses first
    tally = _sum_tallies(ordered)
    n_prompts = n_prompts_config
    if n_prompts is None and any(f.role == "prompts" and f.error is None for f in files):
        n_prompts = tally["prompt_lines"]
    sections: dict[str, Any] = {"kind": kind, "n_prompts": n_prompts}
    sections.update(book_stats(tally, n_prompts))
    books = None if status is None else provider_books(status, sections)
    failures = merge_failures(tally.failures, dataset.failures)
    failures = merge_failures(failures, provider_failures(provider_rows(books)))
    health = health_block(tally, windows, failures)
    sections.update(
        health=health,
        prompts=dataset.prompts,
        prompts_unjoinable=dataset.unjoinable,
        provider_books=books,
        quality=quality_block(weighed(failures, health, settings)),
        files={f.name: file_entry(f) for f in files},
        unrecognised=unrecognised_block(unrecognised),
        aliases=list(aliases),
    )
    return sections


def dataset_block(
    sections: dict[str, Any], cost: dict[str, Any], rate: dict[str, Any] | None
) -> dict[str, Any]:
    """A dataset's block of the stats JSON: its counted sections, its cost fields
    (`ledger.cost`) and its rate (`ledger.rates`)."""
    return written(DATASET_FIELDS, {**sections, **cost, "rate": rate})


def book_stats(tally: FileTally, n_prompts: int | None) -> dict[str, Any]:
    """The stats the books name, in their order, from a dataset's summed tally."""
    values: dict[str, Any] = {"n_prompts": n_prompts}
    for stat, entry in book_entries():
        if isinstance(entry, Tally):
            values[stat] = dict(sorted(tally.counter(entry.key).items()))
        elif isinstance(entry, Sum) and entry.known is not None and not tally[entry.known]:
            values[stat] = None  # no record reports it: unknown, never 0
        elif isinstance(entry, Count | Sum):
            values[stat] = tally[entry.key]
    return _with_ratios(values)


def _with_ratios(values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for stat, entry in book_entries():
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
    datasets: dict[str, dict[str, Any]],
    outside: dict[str, RuleTally] | None,
    cost: dict[str, Any],
    rate: dict[str, Any] | None,
    output_tokens: dict[str, int] | None,
) -> dict[str, Any]:
    """The same stats over all datasets (`outside`: failures of files in no dataset): sums,
    known-or-null sums, merged counters, ratios of the totals; `cost`, `rate` and the
    merged `output_tokens` quantiles are computed over every dataset by their modules."""
    blocks = list(datasets.values())
    inference = [d for d in blocks if d["kind"] == "inference"]
    known = [d["n_prompts"] for d in inference]
    values: dict[str, Any] = {"n_prompts": sum(known) if inference and None not in known else None}
    for stat, entry in book_entries():
        if isinstance(entry, Tally):
            values[stat] = _merged(d[stat] for d in blocks)
        elif isinstance(entry, Sum) and entry.known is not None:
            found = [d[stat] for d in blocks if d[stat] is not None]
            values[stat] = sum(found) if found else None
        elif isinstance(entry, Count | Sum):
            values[stat] = sum(d[stat] for d in blocks)
    sections: dict[str, Any] = {"n_prompts": values["n_prompts"], **_with_ratios(values)}
    sections.update(
        cost,
        n_datasets=len(datasets),
        health=total_health(blocks, output_tokens),
        quality=_total_quality(datasets, outside or {}),
        rate=rate,
    )
    return written(TOTALS_FIELDS, sections)


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
    totals_block: dict[str, Any],
    now: float,
    unrecognised: tuple[str, ...] = (),
    unreadable: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    """The whole stats JSON; `unrecognised`: files under the root in no dataset (loose, or in
    a folder holding no recognised file), `unreadable`: what cannot be read there (path,
    reason)."""
    return written(
        DOCUMENT_FIELDS,
        {
            "schema_version": SCHEMA_VERSION,
            "generated_at": iso_utc(now),
            "data_root": data_root,
            "totals": totals_block,
            "datasets": datasets,
            "unrecognised": unrecognised_block(unrecognised),
            "unreadable": unreadable_block(unreadable),
        },
    )


def unreadable_block(entries: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """`unreadable`: how many entries outside every dataset cannot be read, and the first
    `MAX_LISTED` of them with the OS's reason."""
    return {"count": len(entries), "files": dict(entries[:MAX_LISTED])}
