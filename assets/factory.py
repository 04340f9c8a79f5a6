"""One factory per dataset spec: a multi-asset over the dataset's file assets and their checks."""

from collections.abc import Iterator

import dagster as dg

from assets.columns import column_schema
from assets.results import role_result
from assets.signature import dataset_signature, signature_token
from assets.spec import DatasetSpec
from checks.asset_checks import check_specs
from genledger.config import Config
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
        # The column schema is the same for every materialization: stated once here, not
        # in each materialization's events (9 kB of a recorded file asset's 15 kB).
        metadata={"dataset": spec.name, "dagster/column_schema": column_schema(role)},
        tags={"genledger/role": role},
    )


def _current(spec: DatasetSpec, config: Config) -> Dataset:
    """The dataset as it is now (shards may have appeared since load time)."""
    assert config.data_root is not None
    try:
        return discover_one(config.data_root, spec.name, config) or spec.dataset
    except DataRootError:
        return spec.dataset


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
            key = spec.asset_key(role)
            if key in context.selected_asset_keys:
                families = {c.name for c in selected if c.asset_key == key}
                result = role_result(
                    spec, dataset, role, block, record, signature, config, families
                )
                yield dg.MaterializeResult(asset_key=key, metadata=result.metadata)
                yield from result.checks

    return _refresh
