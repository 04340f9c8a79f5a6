"""numpy and pyarrow for big scans: imported once, only when a scan is big enough to repay it.

Importing them costs ~0.2-0.3 s, more than a small refresh takes, so they are loaded for scans
of `BULK_BYTES` or more (and before forking workers, which then share them); everything that
uses them has a `bytes`-method stand-in for when they are not loaded.
"""

from __future__ import annotations

import os
import sys
from typing import Any

BULK_BYTES = 32 << 20  # new bytes of a scan from which loading them pays

_modules: tuple[Any, Any] | None = None
COMMA = ord(",")


def load() -> bool:
    """Import numpy and pyarrow (once); False when unavailable."""
    global _modules
    if _modules is None:
        # One BLAS thread: none is used here, and idle ones spin on the cores the scan needs.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            import numpy
            import pyarrow
        except ImportError:  # pragma: no cover - both are dependencies
            return False
        _modules = (numpy, pyarrow)
    return True


def loaded() -> bool:
    """Loaded here, or both imported by someone else already."""
    return _modules is not None or ("pyarrow" in sys.modules and "numpy" in sys.modules and load())


def modules() -> tuple[Any, Any]:
    """(numpy, pyarrow); `load()` first."""
    assert _modules is not None, "vector.load() first"
    return _modules


def count_commas(data: bytes) -> int:
    """`data.count(b",")`, vectorised when numpy is loaded (~2.5x faster on a 1,000-id array;
    below ~2 kB numpy's call overhead outweighs it)."""
    if _modules is None or len(data) < 2048:
        return data.count(b",")
    np = _modules[0]
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == COMMA))
