"""Asset names: dataset names (any characters) made into valid, stable Dagster keys."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

import dagster as dg

INVALID = re.compile(r"[^A-Za-z0-9_]")
ROLE_ASSETS = {"responses": "raw_responses", "tokenized": "tokenized_data"}
STATS_KEY = dg.AssetKey(["stats_json"])
DATASET_TAG = "genledger/dataset"
SCOPE_TAG = "genledger/scope"


def _short_hash(name: str) -> str:
    return hashlib.blake2b(name.encode(), digest_size=3).hexdigest()


def sanitize(name: str) -> str:
    """`name` with every character outside [A-Za-z0-9_] replaced by `_`."""
    return INVALID.sub("_", name) or "_"


def dataset_key(name: str, others: Iterable[str] = ()) -> str:
    """The key of dataset `name`; a short hash is appended when another name sanitises alike.

    A name that is already a valid key keeps it unchanged, whatever else is in the data root.
    """
    key = sanitize(name)
    if key != name and any(other != name and sanitize(other) == key for other in others):
        return f"{key}_{_short_hash(name)}"
    return key


def dataset_keys(names: Iterable[str]) -> dict[str, str]:
    """Each dataset name's key, collisions resolved among `names`."""
    all_names = list(names)
    return {name: dataset_key(name, all_names) for name in all_names}


def file_asset_key(ds_key: str, role: str) -> dg.AssetKey:
    """The asset of one role's files: `[ds_key, "raw_responses"]` or `[.., "tokenized_data"]`."""
    return dg.AssetKey([ds_key, ROLE_ASSETS[role]])
