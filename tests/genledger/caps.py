"""Root without its power over file modes: how the tests make permissions bite.

The tests run as root, whose CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH read any file and list
any folder whatever their mode. `drop_in_child` (a `preexec_fn`) drops them from the bounding
set of a child process before it execs (so the collect it runs really meets EACCES);
`without_file_override` lowers them in this thread's effective set for a block, restoring them
after (capabilities are per thread on Linux; threads and forks started inside inherit them).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
FILE_CAPS = (1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_LIBC = ctypes.CDLL(None, use_errno=True)


def drop_in_child() -> None:
    """In a child before exec: root loses its power to read files whatever their mode."""
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if _LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _caps() -> tuple[_Header, ctypes.Array[_Data]]:
    header, data = _Header(_LINUX_CAPABILITY_VERSION_3, 0), (_Data * 2)()
    if _LIBC.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    return header, data


def _set(header: _Header, data: ctypes.Array[_Data]) -> None:
    if _LIBC.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def permissions_bite() -> bool:
    """Whether this process can make a mode-000 file unreadable to itself for a while."""
    return os.geteuid() != 0 or bool(_caps()[1][0].permitted & FILE_CAPS)


@contextmanager
def without_file_override() -> Iterator[None]:
    """This thread (and what it starts) obeys file modes, as any user does, for the block."""
    if os.geteuid() != 0:
        yield
        return
    header, data = _caps()
    before = data[0].effective
    data[0].effective = before & ~FILE_CAPS
    _set(header, data)
    try:
        yield
    finally:
        header, data = _caps()
        data[0].effective = before
        _set(header, data)
