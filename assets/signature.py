"""What a dataset's files look like without reading them: size, mtime, inode, head checksum.

The file sensor keeps these in its cursor; each file asset's materialization records the token
of the signature it started from (`genledger/files_signature`), so the schedule can tell which
datasets changed since their last materialization by stat-ing files, not by reading them.
"""

from __future__ import annotations

import json
import os
from typing import Any

from genledger.tail.discovery import Dataset
from genledger.tail.fingerprint import checksum, opened, read_at

HEAD_BYTES = 256
SIGNATURE_KEY = "genledger/files_signature"

FileSig = list[Any]  # [size, mtime_ns, inode, head checksum]


def file_signature(path: str) -> FileSig | None:
    """What is remembered of one file; None if it cannot be read."""
    try:
        with opened(path) as fd:
            st = os.fstat(fd)
            head = read_at(fd, 0, min(st.st_size, HEAD_BYTES))
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, checksum(head)]


def dataset_signature(dataset: Dataset) -> dict[str, FileSig | None]:
    """Each file of a dataset (all roles) by name."""
    return {f.name: file_signature(str(f.path)) for f in dataset.files}


def signature_token(signature: dict[str, Any]) -> str:
    """A short stable token of a dataset signature (equal signatures, equal tokens)."""
    return checksum(json.dumps(signature, sort_keys=True).encode())
