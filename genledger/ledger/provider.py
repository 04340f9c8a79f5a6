"""The provider's own books of a batch (docs/stats-json.md#provider-books): its status object
read beside the batch's output and set against what genledger counted.

Two status objects are known, each as its API returns it: OpenAI's Batch (`"object":
"batch"`, `request_counts` {total, completed, failed} and, since 2025, `usage` {input_tokens,
output_tokens}) and Anthropic's Message Batch (`"type": "message_batch"`, `request_counts`
{processing, succeeded, errored, canceled, expired}, no usage). A pair is `[provider,
genledger]`, written only where the provider reports its side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

PAIRS = ("requests", "failed", "input_tokens", "output_tokens")
# genledger's side of each pair: a stat of the dataset block (a counter: its values summed)
OURS = {
    "requests": "n_done",
    "failed": "failed_request_reasons",
    "input_tokens": "total_prompt",
    "output_tokens": "total_comp",
}
ANTHROPIC_FAILED = ("errored", "canceled", "expired")
MAX_STATUS_BYTES = 1 << 20  # a status object is a few hundred bytes; anything this big is not one


class StatusError(ValueError):
    """A file named like a batch status object that is not one (the message says why)."""


@dataclass(frozen=True)
class ProviderCounts:
    """What a status object reports: the provider, its status, and its side of each pair."""

    provider: str
    status: str | None
    counts: dict[str, int] = field(default_factory=dict)  # keys of PAIRS it reports


def _whole(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StatusError(f"{where} is {value!r}, not a count")
    return value


def _counts(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if not isinstance(value, Mapping):
        raise StatusError(f"no `{key}` object")
    return value


def parse_status(data: bytes) -> ProviderCounts:
    """The counts of an OpenAI Batch or an Anthropic Message Batch object; `StatusError`
    naming what is wrong otherwise."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StatusError(f"not JSON ({exc})") from None
    if not isinstance(raw, Mapping):
        raise StatusError("not a JSON object")
    if raw.get("object") == "batch":
        return _openai(raw)
    if raw.get("type") == "message_batch":
        return _anthropic(raw)
    raise StatusError('neither an OpenAI batch ("object": "batch") nor an Anthropic message batch')


def _openai(raw: Mapping[str, Any]) -> ProviderCounts:
    counts = _counts(raw, "request_counts")
    found = {
        "requests": _whole(counts.get("total"), "request_counts.total"),
        "failed": _whole(counts.get("failed"), "request_counts.failed"),
    }
    usage = raw.get("usage")
    if isinstance(usage, Mapping):  # absent before 2025 and on batches still running
        found["input_tokens"] = _whole(usage.get("input_tokens"), "usage.input_tokens")
        found["output_tokens"] = _whole(usage.get("output_tokens"), "usage.output_tokens")
    status = raw.get("status")
    return ProviderCounts("openai", status if isinstance(status, str) else None, found)


def _anthropic(raw: Mapping[str, Any]) -> ProviderCounts:
    counts = _counts(raw, "request_counts")
    parts = {
        name: _whole(counts.get(name), f"request_counts.{name}")
        for name in ("processing", "succeeded", *ANTHROPIC_FAILED)
    }
    found = {
        "requests": sum(parts.values()),
        "failed": sum(parts[name] for name in ANTHROPIC_FAILED),
    }
    status = raw.get("processing_status")
    return ProviderCounts("anthropic", status if isinstance(status, str) else None, found)


@dataclass(frozen=True)
class Status:
    """The status objects of a dataset read: their paths, and their counts summed."""

    source: str  # the path in the dataset folder (several: joined by ", ")
    counts: ProviderCounts


def summed(found: list[tuple[str, ProviderCounts]]) -> Status | None:
    """One status of a dataset's status objects (a run split into several batches): the
    pairs every one of them reports, summed; None without any."""
    if not found:
        return None
    shared = set(PAIRS).intersection(*(set(c.counts) for _, c in found))
    first = found[0][1]
    counts = {name: sum(c.counts[name] for _, c in found) for name in PAIRS if name in shared}
    status = first.status if len(found) == 1 else None
    source = ", ".join(path for path, _ in found)
    return Status(source, ProviderCounts(first.provider, status, counts))


def ours(block: Mapping[str, Any], pair: str) -> int:
    """genledger's side of a pair, from a dataset's counted sections (null sums count 0)."""
    value = block.get(OURS[pair])
    if isinstance(value, Mapping):
        return sum(value.values())
    return int(value or 0)


def provider_books(status: Status, sections: Mapping[str, Any]) -> dict[str, Any]:
    """The `provider_books` block: the pairs the provider reports, and whether all agree."""
    counts = status.counts
    pairs = {
        name: [counts.counts[name], ours(sections, name)] for name in PAIRS if name in counts.counts
    }
    return {
        "source": status.source,
        "provider": counts.provider,
        "status": counts.status,
        "agree": all(theirs == mine for theirs, mine in pairs.values()),
        **pairs,
    }


def provider_rows(books: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The rows of the `provider_mismatch` rule's table: one per pair of the books."""
    if books is None:
        return []
    return [
        {
            "file": books["source"],
            "measure": name,
            "provider": books[name][0],
            "genledger": books[name][1],
        }
        for name in PAIRS
        if name in books
    ]
