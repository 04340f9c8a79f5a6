"""Give the process's free heap memory back to the system.

glibc's allocator keeps memory a program freed inside its heap for later use, resident, and
an array grown piece by piece among other objects (a file's id list, joined from its pieces)
is moved to the heap's end again and again, leaving the places it outgrew behind:
`malloc_trim` returns those free pages to the system (Dask's workers call it for the same
reason). Elsewhere (another C library, another system) nothing is done.
"""

from __future__ import annotations

from functools import cache
from typing import Any

TRIM_BYTES = 8 << 20  # a join of lists gives the heap back every this many bytes copied


@cache
def _trim() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none (imported here: a small
    refresh never joins enough to call it)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim  # the symbols the process has loaded: libc's
    except (OSError, AttributeError):
        return None


def give_back() -> None:
    """Return the heap's free pages to the system, where the C library can."""
    trim = _trim()
    if trim is not None:
        trim(0)
