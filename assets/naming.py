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


def _short_hash(name: str, size: int = 3) -> str:
    return hashlib.blake2b(name.encode(), digest_size=size).hexdigest()


def sanitize(name: str) -> str:
    """`name` with every character outside [A-Za-z0-9_] replaced by `_`."""
    return INVALID.sub("_", name) or "_"


def dataset_key(name: str, others: Iterable[str] = ()) -> str:
    """The key of dataset `name` among `others` (the other datasets of the data root)."""
    return dataset_keys([name, *others])[name]


def dataset_keys(names: Iterable[str]) -> dict[str, str]:
    """Each dataset name's key, distinct from every other one.

    A name that is already a valid key keeps it, whatever else is in the data root. Another
    name becomes its sanitised form, with a short hash of the name when that form is taken or
    shared; a folder literally named like such a hashed key (`a_b_<hash of "a-b">` beside
    `a-b` and `a_b`) keeps its own name, and the hash grows until the key is free.
    """
    all_names = list(dict.fromkeys(names))
    keys = {name: name for name in all_names if sanitize(name) == name}
    taken = set(keys.values())
    renamed = [name for name in all_names if name not in keys]
    crowded = {sanitize(n) for n in renamed if sum(sanitize(m) == sanitize(n) for m in renamed) > 1}
    for name in sorted(renamed):
        key, size = sanitize(name), 3
        if key in taken or key in crowded:
            key = f"{sanitize(name)}_{_short_hash(name, size)}"
        while key in taken:
            size += 1  # only a folder named after a hashed key gets here: a longer hash is free
            key = f"{sanitize(name)}_{_short_hash(name, size)}"
        keys[name] = key
        taken.add(key)
    return {name: keys[name] for name in all_names}


def file_asset_key(ds_key: str, role: str) -> dg.AssetKey:
    """The asset of one role's files: `[ds_key, "raw_responses"]` or `[.., "tokenized_data"]`."""
    return dg.AssetKey([ds_key, ROLE_ASSETS[role]])
