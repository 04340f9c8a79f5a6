"""Free heap memory is given back where the C library can (glibc's `malloc_trim`)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from genledger.ledger import heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_to_the_system() -> None:
    # 150 MB of blocks freed below ones still held stay in the heap, resident, until given
    # back (the heap's top is held: an ordinary trim of its end frees nothing)
    code = (
        "import resource\n"
        "from genledger.ledger import heap\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize()\n"
        "blocks = [bytes(1000) for _ in range(200_000)]\n"
        "del blocks[:150_000]\n"
        "freed = rss()\n"
        "heap.give_back()\n"
        "print(freed, rss())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    freed, back = map(int, out.stdout.split())
    assert freed - back > 100_000_000


def test_giving_back_is_harmless_anywhere() -> None:
    heap.give_back()
    heap.give_back()
