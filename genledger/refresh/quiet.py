"""Quiet datasets: none of whose files moved since a refresh after which a later one would
count each of them as it is. Their block's sections, output-length summary and cost are the
ones that refresh kept (the record's quiet block), so a no-op refresh of 50,000 unchanged
shards decodes, merges and re-encodes none of their counts.

`quiet_block` keeps the block only when it has run the per-file path itself
(`refresh.dataset.refresh_file` on each file as the walk listed it) and every file's state
came out as it is; the block holds until the first of its unsettled files settles (then the
dataset is counted, and its rules see the file settled). The listing key covers what that
path reads besides the states: each file's name, role, size, mtime, inode, raw name and
aliases, the dataset's kind, expected total and folder aliases, the health and reading
settings, and the costing (`ledger.cost.costing_key`). A file named like no pattern, a batch
status object, a remote root or a file that cannot be read rules the quiet path out.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from genledger.config import HealthSettings
from genledger.ledger import jsonio
from genledger.ledger.cost import DatasetCost
from genledger.ledger.quantiles import Quantiles
from genledger.ledger.records import DatasetRecord
from genledger.refresh.dataset import as_listed, record_quantiles, refresh_file
from genledger.refresh.reading import Reading
from genledger.tail.discovery import Dataset
from genledger.tail.roots import RemoteFile

QUIET_VERSION = 1  # the layout of a quiet block


@dataclass
class Quiet:
    """What a quiet dataset's refresh reuses: its sections, output lengths and cost."""

    sections: dict[str, Any]
    quantiles: Quantiles
    cost: DatasetCost


def listing_key(ds: Dataset, reading: Reading, health: HealthSettings, costing: str) -> str | None:
    """A digest of what the walk saw of the dataset and the settings its block is counted
    with; None when some file is not a local file listed whole (no quiet path then)."""
    if ds.statuses or ds.unrecognised:
        return None
    rows = []
    for f in ds.files:
        info = f.listed
        if f.error is not None or info is None or info.node is None:
            return None
        if isinstance(f.path, RemoteFile):
            return None
        raw = None if info.raw is None else info.raw.encode("utf-8", "surrogateescape").hex()
        rows.append((f.name, f.role, info.size, info.mtime_ns, info.node, raw, f.aliases))
    settings = (ds.name, ds.kind, ds.n_prompts_config, ds.aliases, health, reading.settle_seconds,
                reading.prompt_key, reading.params, costing)  # fmt: skip
    digest = hashlib.blake2b(repr(settings).encode(), digest_size=16)
    digest.update(orjson.dumps(rows))
    return digest.hexdigest()


def quiet_block(
    ds: Dataset,
    record: DatasetRecord,
    sections: dict[str, Any],
    cost: dict[str, Any],
    key: str | None,
    reading: Reading,
    now: float,
) -> bytes | None:
    """The quiet block to keep with `record` (the dataset's new record, counted at `now`
    from `ds` under listing `key`; `cost`: its `DatasetCost.to_dict`), or None when a later
    refresh could count otherwise."""
    if key is None or record.files_only_named or len(record.files) != len(ds.files):
        return None
    waits = []  # when the unsettled files settle by their mtime or first sight
    for f in ds.files:
        state = record.files.get(f.name)
        scan = None if state is None else as_listed(f, state)
        if state is None or scan is None or state.mtime is None:
            return None
        if not state.settled:
            waits.append(min(state.mtime, state.checkpoint.since))
        again, counted = refresh_file(f, state, {f.key: scan}, reading, now)
        # why the file was read last only restarts the rate history, and an unchanged file
        # never does: the quiet refresh leaves it as it was
        if counted.trail.head or replace(again, last_read=state.last_read) != state:
            return None
    block = {
        "version": QUIET_VERSION,
        "listing": key,
        "now": now,
        "settles_from": min(waits, default=None),
        "sections": sections,
        "quantiles": record_quantiles(record).to_dict(),
        "cost": cost,
    }
    return jsonio.dumps(block)


def reuse(
    record: DatasetRecord, ds: Dataset, key: str | None, now: float, settle_seconds: float
) -> Quiet | None:
    """The kept block of a dataset whose listing is `key` as when the block was made, at a
    `now` no earlier than then and before any of its unsettled files settles, each file
    still readable; None when the dataset must be counted."""
    if record.quiet is None or key is None:
        return None
    try:
        data = jsonio.loads(record.quiet)
        if data.get("version") != QUIET_VERSION or data.get("listing") != key:
            return None
        if now < data["now"]:
            return None  # the clock went back: settling is judged again
        settles = data["settles_from"]
        if settles is not None and settles <= now - settle_seconds:
            return None  # a file settles now (`refresh.dataset._merge`'s test): counted
        # a chmod moves no mtime: a file this process cannot read is counted (an error)
        if not all(_readable(f.path) for f in ds.files):
            return None
        quantiles = Quantiles.from_dict(data["quantiles"])
        return Quiet(data["sections"], quantiles, DatasetCost.from_dict(data["cost"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # a damaged block only costs counting the dataset


def _readable(path: Path | RemoteFile) -> bool:
    """A local file this process may read."""
    return not isinstance(path, RemoteFile) and os.access(path, os.R_OK, effective_ids=True)
