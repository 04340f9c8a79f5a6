"""Per-line speed of the hosted APIs' typed shapes vs the stand-in tier, on the SDK-built lines.

    PYTHONPATH=$PWD python benchmarks/shapes.py [REPEATS]

For each SDK dump of tests/genledger/parse/sdk_records.py whose requests succeeded, ~300 lines
are decoded by each tier alone (`genledger.fast.lines`); prints the median µs a line and MB/s
of each, and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from genledger.fast import lines as fastparse
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.line import facts_of_line
from tests.genledger.parse.test_sdk_formats import DATASETS

NAMES = (
    "anthropic-by_alias", "anthropic_batch-by_alias", "anthropic_batch-exclude_none",
    "gemini-by_alias", "gemini-model_dump_json", "gemini-to_json_dict",
    "gemini_batch-by_alias", "gemini_batch-model_dump_json", "gemini_batch-to_json_dict",
)  # fmt: skip
LINES = 300


def _lines(name: str) -> list[bytes]:
    good = [
        line
        for line in DATASETS[name]().lines
        if not any(f.failed_request for f in facts_of_line(line, "responses"))
    ]
    return (good * (LINES // len(good) + 1))[:LINES]


def _median(decode: Callable[[bytes], Any], lines: list[bytes], repeats: int) -> float:
    """Median seconds a line over `repeats` passes (each line must be answered)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for line in lines:
            decode(line)
        times.append((time.perf_counter() - start) / len(lines))
    assert all(decode(line) is not None for line in lines)
    return statistics.median(times)


def main(repeats: int) -> None:
    """Print one row per SDK dump: µs a line and MB/s of each tier, and the ratio."""
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    stand_in = fastparse._Decoder("responses", BUILT_IN_ONLY)
    head = f"{'dump':32} {'bytes':>6} {'typed µs':>9} {'MB/s':>6} {'stand-in µs':>12} {'MB/s':>6}"
    print(head, "ratio")
    for name in NAMES:
        lines = _lines(name)
        size = statistics.mean(len(line) for line in lines)
        fast = _median(lambda line: typed.decode(line, NOTHING_PLAIN), lines, repeats)
        slow = _median(stand_in.decode, lines, repeats)
        print(
            f"{name:32} {size:6.0f} {fast * 1e6:9.2f} {size / fast / 1e6:6.0f} "
            f"{slow * 1e6:12.2f} {size / slow / 1e6:6.0f} {slow / fast:5.1f}x"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
