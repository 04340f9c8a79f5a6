"""What a dataset's files look like without reading them: size, mtime, inode, head checksum.

The file sensor keeps these in its cursor; each file asset's materialization records the token
of the signature it started from (`genledger/files_signature`), so the schedule can tell which
datasets changed since their last materialization by stat-ing files, not by reading them.
"""

from __future__ import annotations

import json
from typing import Any

from genledger.tail.discovery import Dataset
from genledger.tail.fingerprint import checksum
from genledger.tail.roots import Source, open_source

HEAD_BYTES = 256
SIGNATURE_KEY = "genledger/files_signature"

FileSig = list[Any]  # [size, mtime_ns, inode, head checksum]
UNRECOGNISED = "[unrecognised]"  # the entry listing a dataset's unrecognised files


def file_signature(path: Source | str) -> FileSig | None:
    """What is remembered of one file; None if it cannot be read. A sealed shard rewritten
    whole changes its size, mtime or head; a remote file has no inode (0)."""
    try:
        handle = open_source(path)
    except OSError:
        return None
    try:
        head = handle.read_at(0, min(handle.size, HEAD_BYTES))
    except OSError:
        return None
    finally:
        handle.close()
    inode = handle.identity[1] if handle.identity is not None else 0
    return [handle.size, handle.mtime_ns, inode, checksum(head)]


def dataset_signature(dataset: Dataset) -> dict[str, Any]:
    """Each file of a dataset (all roles) by its path in the dataset folder, and the names of
    its unrecognised files (a new one is news for the dataset's checks)."""
    signature: dict[str, Any] = {f.name: file_signature(f.path) for f in dataset.files}
    if dataset.unrecognised:
        signature[UNRECOGNISED] = list(dataset.unrecognised)
    return signature


def signature_token(signature: dict[str, Any]) -> str:
    """A short stable token of a dataset signature (equal signatures, equal tokens)."""
    return checksum(json.dumps(signature, sort_keys=True).encode())
