"""Dagster asset checks built on the engine's rule results: one check per rule family.

The numbers come from the same tallies as the stats JSON (the engine's per-file and
per-dataset rule results), split by the role of the file asset they belong to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from genledger.ledger.records import DatasetRecord
from genledger.refresh.collect import file_rows
from genledger.rules.catalogue import RULES, RULES_BY_NAME, Rule, Severity, Table
from genledger.rules.result import MAX_EXAMPLES, RuleTally, merge_failures
from genledger.rules.rows import file_failures

EVERY_DATASET_PRESENT = "every_dataset_present"
EVERY_FILE_RECOGNISED = "every_file_recognised"
FILE_RULES = ("unreadable_files", "empty_files")
ROLE_TABLES = {
    "responses": (
        Table.RESPONSES, Table.IDS, Table.FILES, Table.FOLDER, Table.DATASET, Table.ANSWERS,
        Table.WINDOWS, Table.PROVIDER, Table.PROMPTS,
    ),
    "tokenized": (Table.TOKENIZED, Table.FILES, Table.FOLDER),
}  # fmt: skip
# Rules about a whole dataset: checked on its responses asset, or on its tokenized one when
# it has no responses (a pretokenized dataset).
DATASET_LEVEL = {
    "responses": {
        Table.IDS,
        Table.DATASET,
        Table.FOLDER,
        Table.ANSWERS,
        Table.WINDOWS,
        Table.PROVIDER,
        Table.PROMPTS,
    },
    "tokenized": {Table.FOLDER},
}
# Rules weighed over the whole dataset (a share against `[health]`, or the drift of its
# windows) or against the provider's books: their verdict is the stats block's
# (`genledger.ledger.health.weighed`, `genledger.ledger.provider`).
WEIGHED = ("truncated_outputs", "duplicate_outputs", "output_drift", "provider_mismatch")


def rules_for(role: str) -> tuple[Rule, ...]:
    """The rules that apply to a file asset of `role`."""
    return tuple(r for r in RULES if any(t in ROLE_TABLES[role] for t in r.tables))


def families_for(role: str) -> tuple[str, ...]:
    """The check names (rule families) on a file asset of `role`, in catalogue order."""
    return tuple(dict.fromkeys(rule.family for rule in rules_for(role)))


def _family_rules(role: str, family: str) -> tuple[Rule, ...]:
    return tuple(r for r in rules_for(role) if r.family == family)


def check_specs(asset_key: dg.AssetKey, role: str) -> list[dg.AssetCheckSpec]:
    """One non-blocking check spec per rule family of a file asset."""
    return [
        dg.AssetCheckSpec(
            family,
            asset=asset_key,
            description=" ".join(r.description for r in _family_rules(role, family)),
        )
        for family in families_for(role)
    ]


def role_failures(
    record: DatasetRecord, role: str, block: dict[str, Any] | None = None
) -> dict[str, RuleTally]:
    """The failing rules of one role's files, from the committed record of their dataset;
    the rules weighed over the dataset take the verdict of its stats `block`."""
    files = [f for f in record.files.values() if f.role == role]
    failures: dict[str, RuleTally] = {}
    for state in files:
        failures = merge_failures(failures, state.tally.failures)
    has_responses = any(f.role == "responses" for f in record.files.values())
    main = role == "responses" or not has_responses
    # The prompts files (the expected total) have no asset: their file rules (unreadable, an
    # unterminated last line) are checked on the dataset's main asset.
    prompts = [f for f in record.files.values() if f.role == "prompts"] if main else []
    for state in prompts:  # a prompt line that is no JSON (`malformed_prompts`)
        failures = merge_failures(failures, state.tally.failures)
    rows = file_rows(files + prompts)
    if rows:
        failures = merge_failures(failures, file_failures(rows))
    if main:
        for name, tally in record.rules.failures.items():
            if DATASET_LEVEL[role].intersection(RULES_BY_NAME[name].tables):
                failures = merge_failures(failures, {name: tally})
    if block is not None:
        failures = {k: v for k, v in failures.items() if k not in WEIGHED}
        ours = {r.name for r in rules_for(role)}
        for failure in block["quality"]["failures"]:
            if failure["check"] in WEIGHED and failure["check"] in ours:
                failures[failure["check"]] = RuleTally(failure["count"], failure["examples"])
    return failures


@dataclass(frozen=True)
class Rows:
    """How many rows each kind of rule looked at, for `rows_checked`."""

    lines: int  # complete lines parsed (records plus malformed lines)
    records: int
    files: int
    folder: int = 0  # files found in the dataset folder, recognised or not


def _rows_checked(rule: Rule, rows: Rows) -> int:
    if Table.FILES in rule.tables:
        return rows.files
    if Table.FOLDER in rule.tables:
        return rows.folder
    if {Table.DATASET, Table.WINDOWS, Table.PROVIDER} & set(rule.tables):
        return 1
    return rows.lines if rule.name == "malformed_lines" else rows.records


def _examples_md(examples: Iterable[dict[str, Any]]) -> str:
    lines = [f"- `{e.get('file')}:{e.get('line')}` {e.get('reason')}" for e in examples]
    return "\n".join(lines[:MAX_EXAMPLES]) or "none"


def family_result(
    asset_key: dg.AssetKey,
    role: str,
    family: str,
    failures: dict[str, RuleTally],
    dataset: str,
    rows: Rows,
    reasons: dict[str, dict[str, int]] | None = None,
    items: Sequence[str] = (),
    detail: str = "",
) -> dg.AssetCheckResult:
    """Pass/fail, severity and metadata of one family on one file asset; `reasons`: failing
    rows by reason for the rules that have them (failed requests, empty outputs); `items`:
    every failing thing by name (unrecognised paths), so notifications can tell a new one;
    `detail`: the run-health rules' line (genledger.notify.wording)."""
    rules = _family_rules(role, family)
    failing = [r for r in rules if r.name in failures and failures[r.name].count > 0]
    severity = (
        dg.AssetCheckSeverity.ERROR
        if any(r.severity is Severity.ERROR for r in failing)
        else dg.AssetCheckSeverity.WARN
    )
    examples = [e for r in failing for e in failures[r.name].examples]
    metadata: dict[str, Any] = {
        "dataset": dataset,
        "failure_count": dg.MetadataValue.int(sum(failures[r.name].count for r in failing)),
        "rows_checked": dg.MetadataValue.int(max(_rows_checked(r, rows) for r in rules)),
        "rules": dg.MetadataValue.json(
            {r.name: failures[r.name].count if r.name in failures else 0 for r in rules}
        ),
        "examples": dg.MetadataValue.md(_examples_md(examples)),
    }
    by_reason = {r.name: (reasons or {})[r.name] for r in failing if (reasons or {}).get(r.name)}
    if by_reason:
        metadata["reasons"] = dg.MetadataValue.json(by_reason)
    if rows.records == 0 and not failing:
        metadata["note"] = "no records yet: nothing to check (files_have_records says so)"
    if failing and items:
        metadata["items"] = dg.MetadataValue.json(list(items))
    if failing and detail:
        metadata["detail"] = detail
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=family,
        passed=not failing,
        severity=severity,
        metadata=metadata,
        description=_describe(failing, failures),
    )


def _describe(failing: list[Rule], failures: dict[str, RuleTally]) -> str | None:
    if not failing:
        return None
    return "; ".join(
        f"{failures[r.name].count} x {r.name} ({r.severity}): {r.description}" for r in failing
    )


def stats_check_spec() -> dg.AssetCheckSpec:
    """The check on `stats_json`: every dataset the location knows is in the stats JSON."""
    return dg.AssetCheckSpec(
        EVERY_DATASET_PRESENT,
        asset=dg.AssetKey(["stats_json"]),
        description=(
            "Every dataset of the data root, and every one counted before (its folder deleted or "
            "unmounted since), has a block in the stats JSON with files that can be read."
        ),
    )


def every_dataset_present(stats: dict[str, Any], expected: Iterable[str]) -> dg.AssetCheckResult:
    """Fail ERROR if a known dataset is absent from the stats JSON, WARN if there is none.

    Known: the location's datasets (`expected`, which holds those the state dir counted even
    when the root no longer does) and every dataset the stats JSON reports, since the engine
    reports a dataset it counted before and cannot find now with each of its files gone.
    """
    # A dataset whose every file is gone (its folder deleted, its share unmounted) is reported
    # by the engine file by file, and is not present.
    blocks = stats.get("datasets", {})
    present = {name for name, block in blocks.items() if not _gone(block)}
    wanted = sorted(set(expected) | set(blocks))
    missing = [name for name in wanted if name not in present]
    empty = not present
    metadata = {
        "datasets_expected": dg.MetadataValue.int(len(wanted)),
        "datasets_present": dg.MetadataValue.int(len(present)),
        "failure_count": dg.MetadataValue.int(len(missing) + int(empty and not missing)),
        "missing": dg.MetadataValue.json(missing),
    }
    description = None
    if missing:
        description = f"missing from the stats JSON: {', '.join(missing)}"
    elif empty:
        description = "the data root holds no dataset yet"
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey(["stats_json"]),
        check_name=EVERY_DATASET_PRESENT,
        passed=not missing and not empty,
        severity=dg.AssetCheckSeverity.ERROR if missing else dg.AssetCheckSeverity.WARN,
        metadata=metadata,
        description=description,
    )


def _gone(block: dict[str, Any]) -> bool:
    """Every file of a dataset block was counted before and is gone now."""
    files = block.get("files") or {}
    return bool(files) and all(
        str(entry.get("error") or "").startswith(("gone:", "not listed:"))
        for entry in files.values()
    )


def files_check_spec() -> dg.AssetCheckSpec:
    """The check on `stats_json`: every file under the data root is recognised."""
    return dg.AssetCheckSpec(
        EVERY_FILE_RECOGNISED,
        asset=dg.AssetKey(["stats_json"]),
        description=(
            "Every regular file under the data root (not ignored) is a responses, tokenized or "
            "prompts file of a dataset: nothing is skipped in silence."
        ),
    )


def unrecognised_paths(stats: dict[str, Any]) -> list[str]:
    """The unrecognised files the stats JSON names, relative to the data root."""
    paths = list(stats.get("unrecognised", {}).get("paths", []))
    for name, block in stats.get("datasets", {}).items():
        paths += [f"{name}/{p}" for p in block.get("unrecognised", {}).get("paths", [])]
    return sorted(paths)


def every_file_recognised(stats: dict[str, Any]) -> dg.AssetCheckResult:
    """WARN when some file under the root matches no pattern (per dataset or outside all)."""
    outside = int(stats.get("unrecognised", {}).get("count", 0))
    inside = sum(
        int(block.get("unrecognised", {}).get("count", 0))
        for block in stats.get("datasets", {}).values()
    )
    paths = unrecognised_paths(stats)
    examples = [{"file": p, "line": 0, "reason": "matches no pattern"} for p in paths]
    metadata: dict[str, Any] = {
        "failure_count": dg.MetadataValue.int(outside + inside),
        "outside_datasets": dg.MetadataValue.int(outside),
        "in_datasets": dg.MetadataValue.int(inside),
        "examples": dg.MetadataValue.md(_examples_md(examples)),
        "items": dg.MetadataValue.json(paths),
    }
    count = outside + inside
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey(["stats_json"]),
        check_name=EVERY_FILE_RECOGNISED,
        passed=count == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=metadata,
        description=f"{count} unrecognised file(s): {', '.join(paths[:5])}" if count else None,
    )
