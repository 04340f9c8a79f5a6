"""One factory per dataset spec: a multi-asset over the dataset's file assets and their checks."""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from assets.metadata import file_asset_metadata
from assets.signature import SIGNATURE_KEY, dataset_signature, signature_token
from assets.spec import DatasetSpec
from checks.asset_checks import (
    Rows,
    check_specs,
    families_for,
    family_result,
    role_failures,
    rules_for,
)
from genledger.config import Config
from genledger.ledger.records import DatasetRecord
from genledger.notify.wording import detail
from genledger.refresh.collect import refresh_dataset_record
from genledger.tail.discovery import DataRootError, Dataset, discover_one

ROLE_TEXT = {
    "responses": "model responses (raw_responses*: .jsonl, .jsonl.gz, .jsonl.zst, .parquet)",
    "tokenized": "tokenized training samples (tokenized_data*: .jsonl, .gz, .zst, .parquet)",
}


def kinds_of(dataset: Dataset, role: str) -> set[str]:
    """The storage kinds of a role's files: `jsonl` (plain or compressed) and/or `parquet`,
    plus `pandas` (the token table the checks validate)."""
    forms = {f.form for f in dataset.of_role(role)}
    kinds = {"parquet" if form == "parquet" else "jsonl" for form in forms} or {"jsonl"}
    return kinds | {"pandas"}


def _asset_spec(spec: DatasetSpec, role: str, owners: list[str]) -> dg.AssetSpec:
    return dg.AssetSpec(
        spec.asset_key(role),
        group_name=spec.key,
        kinds=kinds_of(spec.dataset, role),
        owners=owners,
        description=(
            f"Token table of the {ROLE_TEXT[role]} of dataset `{spec.name}`, "
            "refreshed incrementally (only new complete lines are read)."
        ),
        metadata={"dataset": spec.name},
        tags={"genledger/role": role},
    )


def _current(spec: DatasetSpec, config: Config) -> Dataset:
    """The dataset as it is now (shards may have appeared since load time)."""
    assert config.data_root is not None
    try:
        return discover_one(config.data_root, spec.name, config) or spec.dataset
    except DataRootError:
        return spec.dataset


def _role_events(
    spec: DatasetSpec,
    dataset: Dataset,
    role: str,
    block: dict[str, Any],
    record: DatasetRecord,
    selected_checks: set[dg.AssetCheckKey],
    signature: str,
    config: Config,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
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
    yield dg.MaterializeResult(asset_key=key, metadata=metadata)
    settings = _Settings(config)
    for family in families_for(role):
        if dg.AssetCheckKey(key, family) in selected_checks:
            reasons = _reasons(block)
            names = [r.name for r in rules_for(role) if r.family == family]
            said = detail(names, block, settings)
            yield family_result(key, role, family, failures, spec.name, rows, reasons, items, said)


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


def build_dataset_assets(spec: DatasetSpec, config: Config) -> dg.AssetsDefinition:
    """The multi-asset of one dataset: refresh it once, report each file asset and its checks."""
    owners = list(config.dagster.owners)
    specs = [_asset_spec(spec, role, owners) for role in spec.roles]
    checks = [c for role in spec.roles for c in check_specs(spec.asset_key(role), role)]

    @dg.multi_asset(
        name=f"{spec.key}__files",
        specs=specs,
        check_specs=checks,
        can_subset=True,
        op_tags={"genledger/dataset": spec.key},
    )
    def _refresh(
        context: dg.AssetExecutionContext,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        dataset = _current(spec, config)
        # Taken before reading: a file that grows during the refresh differs from it next time,
        # so the schedule refreshes the dataset again rather than missing the growth.
        signature = signature_token(dataset_signature(dataset))
        # The record committed by this very refresh: its per-file counts split the checks by role.
        record, block = refresh_dataset_record(config, dataset)
        # No context.log line: one more event per dataset per run, and the materialization's
        # metadata already carries the records and the status.
        selected = set(context.selected_asset_check_keys)
        for role in spec.roles:
            if spec.asset_key(role) in context.selected_asset_keys:
                yield from _role_events(
                    spec, dataset, role, block, record, selected, signature, config
                )

    return _refresh
