"""simdjson's UTF-8 check (and numpy, for the Parquet counts) for big scans: imported once,
only when a scan is big enough to repay it.

Importing them costs ~0.05-0.1 s, more than a small refresh takes, so they are loaded for
scans of `BULK_BYTES` or more (and before forking workers, which then share them); everything
that uses them has a stand-in for when they are not loaded. JSONL scans need no numpy (its
36 ms import was serial start-up): the lifted arrays are counted by stringzilla, and pyarrow
is imported by the Parquet readers alone.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from genledger.fast import utf8

BULK_BYTES = 32 << 20  # new bytes of a scan from which loading them pays

_numpy: Any = None
_loaded = False
COMMA = ord(",")


def load(numpy: bool = False) -> bool:
    """Load simdjson's UTF-8 check, and numpy when asked (once); False when numpy was asked
    for and is unavailable."""
    global _numpy, _loaded
    if not _loaded:
        utf8.warm()
        _loaded = True
    if numpy and _numpy is None:
        # One BLAS thread: none is used here, and idle ones spin on the cores the scan needs.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            import numpy as module
        except ImportError:  # pragma: no cover - a dependency
            return False
        _numpy = module
    return True


def loaded() -> bool:
    """Loaded here, or numpy imported by someone else already (then simdjson's check pays)."""
    return _loaded or ("numpy" in sys.modules and load())


def numpy_loaded() -> bool:
    """numpy is imported already (for Parquet, by the quantile sketches of a big scan, or by
    anyone): a lever may use it without paying its import (`load(numpy=True)` done here)."""
    return _numpy is not None or ("numpy" in sys.modules and load(numpy=True))


def numpy() -> Any:
    """The numpy module; `load(numpy=True)` first."""
    assert _numpy is not None, "vector.load(numpy=True) first"
    return _numpy


def count_commas(data: bytes) -> int:
    """`data.count(b",")`, vectorised when numpy is loaded (~2.5x faster on a 1,000-id array;
    below ~2 kB numpy's call overhead outweighs it)."""
    np = _numpy
    if np is None or len(data) < 2048:
        return data.count(b",")
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == COMMA))
