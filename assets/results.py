"""One dataset's file-asset results: each role's materialization metadata and check results.

Built from the record a refresh committed and its stats block, the same way whichever step
reports them: the dataset's own multi-asset (a run of that dataset) or `stats_json` (which
records the datasets a refresh of the whole root found changed, `assets/recording.py`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import dagster as dg

from assets.metadata import file_asset_metadata
from assets.signature import SIGNATURE_KEY
from assets.spec import DatasetSpec
from checks.asset_checks import Rows, families_for, family_result, role_failures, rules_for
from genledger.config import Config
from genledger.ledger.records import DatasetRecord
from genledger.notify.wording import detail
from genledger.tail.discovery import Dataset


@dataclass(frozen=True)
class RoleResult:
    """One file asset's materialization metadata and its check results."""

    key: dg.AssetKey
    metadata: dict[str, Any]
    checks: list[dg.AssetCheckResult]


def role_result(
    spec: DatasetSpec,
    dataset: Dataset,
    role: str,
    block: dict[str, Any],
    record: DatasetRecord,
    signature: str,
    config: Config,
    families: Collection[str] | None = None,
) -> RoleResult:
    """The results of one role's file asset; `families`: only those checks (None: all)."""
    key = spec.asset_key(role)
    failures = role_failures(record, role, block)
    records = block["n_done"] if role == "responses" else block["n_tokenized"]
    malformed = failures["malformed_lines"].count if "malformed_lines" in failures else 0
    files = sum(1 for f in block["files"].values() if f.get("role") == role)
    folder = len(dataset.files) + len(dataset.unrecognised)
    rows = Rows(lines=records + malformed, records=records, files=files, folder=folder)
    failure_count = sum(t.count for t in failures.values())
    items = dataset.unrecognised if "unrecognised_files" in failures else ()
    metadata = file_asset_metadata(dataset, role, block, failure_count)
    metadata[SIGNATURE_KEY] = signature
    reasons = _reasons(block)
    settings = _Settings(config)
    checks = [
        family_result(
            key,
            role,
            family,
            failures,
            spec.name,
            rows,
            reasons,
            items,
            detail([r.name for r in rules_for(role) if r.family == family], block, settings),
        )
        for family in families_for(role)
        if families is None or family in families
    ]
    return RoleResult(key, metadata, checks)


def dataset_results(
    spec: DatasetSpec,
    dataset: Dataset,
    block: dict[str, Any],
    record: DatasetRecord,
    signature: str,
    config: Config,
) -> list[RoleResult]:
    """Every role's results of one dataset (all its checks)."""
    return [role_result(spec, dataset, r, block, record, signature, config) for r in spec.roles]


class _Settings:
    """The thresholds a check's wording names."""

    def __init__(self, config: Config) -> None:
        self.truncated_share = config.health.truncated_share
        self.duplicate_share = config.health.duplicate_share
        self.max_seq_len = config.max_seq_len


def _reasons(block: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Failed requests and empty outputs by reason, from the dataset's stats block."""
    return {
        "failed_requests": block.get("failed_request_reasons") or {},
        "empty_outputs": block.get("empty_output_reasons") or {},
    }
