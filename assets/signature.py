"""What a dataset's files look like without reading them: size, mtime, inode, head checksum.

The file sensor keeps these (of the batch status objects too) in its cursor; each file
asset's materialization records the token of the signature it started from
(`genledger/files_signature`), so the schedule can tell which datasets changed since their
last materialization by stat-ing files, not by reading them.
"""

from __future__ import annotations

import json
from typing import Any

from genledger.tail.discovery import Dataset
from genledger.tail.fingerprint import checksum, fingerprint
from genledger.tail.roots import Source, open_source

HEAD_BYTES = 256
SIGNATURE_KEY = "genledger/files_signature"

FileSig = list[Any]  # a file's fingerprint as a list (genledger.tail.fingerprint)
UNRECOGNISED = "[unrecognised]"  # the entry listing a dataset's unrecognised files


def file_signature(path: Source | str) -> FileSig | None:
    """What is remembered of one file: its fingerprint, the type the tailer and the sealed
    files identify files by; None if it cannot be read. A sealed shard rewritten whole
    changes its size, mtime or head; a remote file has no inode (0)."""
    try:
        handle = open_source(path)
    except OSError:
        return None
    try:
        return fingerprint(handle, HEAD_BYTES).as_list()
    except OSError:
        return None
    finally:
        handle.close()


def dataset_signature(dataset: Dataset) -> dict[str, Any]:
    """Each file of a dataset (all roles) and each batch status object beside them by its
    path in the dataset folder (a status object rewritten alone changes the provider's
    books), and the names of its unrecognised files (a new one is news for its checks)."""
    signature: dict[str, Any] = {f.name: file_signature(f.path) for f in dataset.files}
    signature.update((name, file_signature(source)) for name, source in dataset.statuses)
    if dataset.unrecognised:
        signature[UNRECOGNISED] = list(dataset.unrecognised)
    return signature


def signature_token(signature: dict[str, Any]) -> str:
    """A short stable token of a dataset signature (equal signatures, equal tokens)."""
    return checksum(json.dumps(signature, sort_keys=True).encode())
