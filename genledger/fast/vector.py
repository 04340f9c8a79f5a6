"""numpy (and simdjson's UTF-8 check) for big scans: imported once, only when a scan is big
enough to repay it.

Importing them costs ~0.05-0.1 s, more than a small refresh takes, so they are loaded for
scans of `BULK_BYTES` or more (and before forking workers, which then share them); everything
that uses them has a `bytes`-method stand-in for when they are not loaded. pyarrow is imported
by the Parquet readers alone: JSONL scans do not need it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from genledger.fast import utf8

BULK_BYTES = 32 << 20  # new bytes of a scan from which loading them pays

_numpy: Any = None
COMMA = ord(",")


def load() -> bool:
    """Import numpy and simdjson's UTF-8 check (once); False when numpy is unavailable."""
    global _numpy
    if _numpy is None:
        # One BLAS thread: none is used here, and idle ones spin on the cores the scan needs.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            import numpy
        except ImportError:  # pragma: no cover - a dependency
            return False
        utf8.warm()
        _numpy = numpy
    return True


def loaded() -> bool:
    """Loaded here, or numpy imported by someone else already."""
    return _numpy is not None or ("numpy" in sys.modules and load())


def numpy() -> Any:
    """The numpy module; `load()` first."""
    assert _numpy is not None, "vector.load() first"
    return _numpy


def count_commas(data: bytes) -> int:
    """`data.count(b",")`, vectorised when numpy is loaded (~2.5x faster on a 1,000-id array;
    below ~2 kB numpy's call overhead outweighs it)."""
    np = _numpy
    if np is None or len(data) < 2048:
        return data.count(b",")
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == COMMA))
