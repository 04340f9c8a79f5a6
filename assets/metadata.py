"""Materialization metadata (numbers as numbers): a file asset's from its dataset's stats block,
`stats_json`'s from the whole stats JSON."""

from __future__ import annotations

from typing import Any

import dagster as dg

from genledger.parse.buckets import BUCKETS, DECLARED
from genledger.tail.discovery import Dataset


def _number(value: float | None) -> dg.MetadataValue | None:
    if value is None:
        return None
    if isinstance(value, int):
        return dg.MetadataValue.int(value)
    return dg.MetadataValue.float(float(value))


def _share(part: int | None, whole: int) -> float | None:
    return part / whole if part is not None and whole else None


def _role_files(block: dict[str, Any], role: str) -> dict[str, dict[str, Any]]:
    return {name: f for name, f in block["files"].items() if f.get("role") == role}


def _role_numbers(block: dict[str, Any], role: str) -> dict[str, float | None]:
    if role == "responses":
        return {
            "records": block["n_done"],
            "n_prompts": block["n_prompts"],
            "progress": block["progress"],
            "total_comp": block["total_comp"],
            "avg_comp": block["avg_comp"],
            "total_prompt": block["total_prompt"],
            "n_counted": block["n_counted"],
            "n_prompt_counted": block.get("n_prompt_counted"),
            # null (not plotted) when no record reports them, never a made-up 0: the counts
            # formats report, then every usage bucket side by side (`parse.buckets`)
            **{b.stat: block.get(b.stat) for b in DECLARED},
            "reasoning_share": _share(block.get("total_reasoning"), block["total_comp"]),
            **{b.label: block.get(b.stat) for b in BUCKETS},
            "n_samples": block.get("n_samples"),
            "stream_chunks": block.get("stream_chunks"),
            "failed_requests": block["quality"].get("failed_requests"),
            "empty_outputs": block["quality"].get("empty_outputs"),
            "usage_inconsistent": block["quality"].get("usage_inconsistent"),
            **health_numbers(block),
        }
    return {
        "records": block["n_tokenized"],
        "total_tokens": block["total_tokens"],
        "avg_tokens": block["avg_tokens"],
        "total_loss_tokens": block["total_loss_tokens"],
        "supervised_share": block.get("supervised_share"),
        "prompt_not_masked": block["quality"].get("prompt_not_masked"),
        "over_length": block["quality"].get("over_length"),
    }


WINDOW_NUMBERS = ("truncated_share", "empty_share", "failed_share", "refusal_share",
                  "median_output_tokens")  # fmt: skip


def health_numbers(block: dict[str, Any]) -> dict[str, float | None]:
    """Run health as numbers the UI plots over materializations: truncation, output-length
    quantiles, duplicates, each share of the first and the latest window (drift), and the
    prompts still to run (docs/stats-json.md)."""
    health = block.get("health") or {}
    quantiles = health.get("output_tokens") or {}
    numbers: dict[str, float | None] = {
        "truncated": health.get("truncated"),
        "truncated_share": health.get("truncated_share"),
        "duplicate_outputs": health.get("duplicate_outputs"),
        "duplicate_share": health.get("duplicate_share"),
        **{f"output_tokens_{q}": quantiles.get(q) for q in ("p50", "p90", "p99", "max")},
    }
    for side in ("first", "latest"):
        window = health.get(f"{side}_window") or {}
        for name in WINDOW_NUMBERS:
            numbers[f"{side}_window/{name}"] = window.get(name)
    numbers["drift_moves"] = len(health.get("drift") or [])
    prompts = block.get("prompts") or {}
    for name in ("answered", "failed", "missing"):
        numbers[f"prompts_{name}"] = prompts.get(name)
    return numbers


COMPRESSION = {"gzip": "gzip", "zstd": "zstd"}


def _forms(dataset: Dataset, role: str) -> dict[str, int]:
    """How many of the role's files are stored each way (jsonl, gzip, zstd, parquet)."""
    counts: dict[str, int] = {}
    for f in dataset.of_role(role):
        counts[f.form] = counts.get(f.form, 0) + 1
    return dict(sorted(counts.items()))


def _compression(dataset: Dataset, role: str) -> str:
    """The compressions of the role's JSONL files (`none` when all are plain)."""
    used = sorted({COMPRESSION[f.form] for f in dataset.of_role(role) if f.form in COMPRESSION})
    return ", ".join(used) or "none"


def file_asset_metadata(
    dataset: Dataset, role: str, block: dict[str, Any], failure_count: int
) -> dict[str, Any]:
    """Paths, sizes, records, token totals, format mix, row count and column schema."""
    files = _role_files(block, role)
    paths = [str(f.path) for f in dataset.of_role(role)]
    numbers = _role_numbers(block, role)
    metadata: dict[str, Any] = {
        "dataset": dataset.name,
        "path": dg.MetadataValue.path(paths[0] if len(paths) == 1 else str(dataset.path)),
        "paths": dg.MetadataValue.md("\n".join(f"- `{p}`" for p in paths) or "none"),
        "files": dg.MetadataValue.int(len(files)),
        "bytes": dg.MetadataValue.int(sum(f["bytes"] for f in files.values())),
        "lines": dg.MetadataValue.int(sum(f["lines"] for f in files.values())),
        "pending_bytes": dg.MetadataValue.int(sum(f["pending_bytes"] for f in files.values())),
        "status": block["quality"]["status"],
        "failures": dg.MetadataValue.int(failure_count),
        "forms": dg.MetadataValue.json(_forms(dataset, role)),
        "compression": _compression(dataset, role),
        "dagster/row_count": dg.MetadataValue.int(int(numbers["records"] or 0)),
    }
    for name, value in numbers.items():
        number = _number(value)
        if number is not None:
            metadata[name] = number
    if role == "responses":
        metadata["formats"] = dg.MetadataValue.json(block["formats"])
        for fmt, count in block["formats"].items():
            metadata[f"format/{fmt}"] = dg.MetadataValue.int(count)
        metadata["finish_reasons"] = dg.MetadataValue.json(block["finish_reasons"])
        for key in ("failed_request_reasons", "empty_output_reasons"):
            if block.get(key):
                metadata[key] = dg.MetadataValue.json(block[key])
        metadata.update(cost_metadata(block))
    return metadata


def cost_metadata(block: dict[str, Any]) -> dict[str, Any]:
    """What a stats block says the run cost: dollars spent and projected, per model, and the
    records no price covers (never left out in silence: docs/cost.md)."""
    metadata: dict[str, Any] = {}
    for key in ("cost_usd", "cost_projected_usd"):
        number = _number(block.get(key))
        if number is not None:
            metadata[key] = number
    unpriced = block.get("cost_unpriced") or {}
    n_unpriced = int(unpriced.get("n_records") or 0)
    metadata["cost_unpriced_records"] = dg.MetadataValue.int(n_unpriced)
    if n_unpriced:
        names = ", ".join(unpriced.get("models") or [])
        metadata["cost_unpriced"] = dg.MetadataValue.md(
            f"**{n_unpriced:,} records have no price** and are not in `cost_usd` "
            f'(models: {names}); give them one in genledger.toml (`[prices."MODEL"]`).'
        )
    models = block.get("models") or {}
    if models:
        metadata["models"] = dg.MetadataValue.json(models)
        for name, entry in models.items():
            number = _number(entry.get("cost_usd"))
            if number is not None:
                metadata[f"cost/{name}"] = number
    if block.get("prices"):
        metadata["prices"] = dg.MetadataValue.json(block["prices"])
        drift = (block.get("health") or {}).get("drift")
        metadata["drift"] = dg.MetadataValue.md("\n".join(f"- {d}" for d in drift or []) or "none")
        if block.get("prompts_unjoinable"):
            metadata["prompts_unjoinable"] = block["prompts_unjoinable"]
    return metadata


def stats_metadata(stats: dict[str, Any], path: str) -> dict[str, Any]:
    """Totals and per-dataset status counts as numbers, plus where the JSON was written."""
    totals = stats["totals"]
    by_status = totals["quality"].get("datasets_by_status", {})
    metadata: dict[str, Any] = {
        "path": dg.MetadataValue.path(path),
        "data_root": stats["data_root"],
        "status": totals["quality"]["status"],
        "datasets": dg.MetadataValue.int(len(stats["datasets"])),
    }
    for status in ("ok", "warn", "error"):
        metadata[f"datasets_{status}"] = dg.MetadataValue.int(int(by_status.get(status, 0)))
    for name in (
        "n_done",
        "n_counted",
        "n_prompt_counted",
        "total_comp",
        "total_prompt",
        "n_tokenized",
    ):
        metadata[name] = dg.MetadataValue.int(int(totals[name]))
    metadata["total_tokens"] = dg.MetadataValue.int(int(totals["total_tokens"]))
    for name in ("n_prompts", "progress", "avg_comp", "avg_tokens"):
        if totals.get(name) is not None:
            value = totals[name]
            metadata[name] = (
                dg.MetadataValue.int(value)
                if isinstance(value, int)
                else dg.MetadataValue.float(float(value))
            )
    metadata["unrecognised_files"] = dg.MetadataValue.int(
        int(stats.get("unrecognised", {}).get("count", 0))
        + sum(int(d.get("unrecognised", {}).get("count", 0)) for d in stats["datasets"].values())
    )
    metadata["failures"] = dg.MetadataValue.json(
        {f["check"]: f["count"] for f in totals["quality"]["failures"]}
    )
    metadata.update(cost_metadata(totals))
    return metadata
