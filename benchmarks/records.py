"""What reading a response record costs, in process: the general path against the compiled reader.

    python benchmarks/records.py [--root ../shared] [--repeats 5] [--streams]

Reads every JSONL file of `<root>/realworld*/data` (the recorded responses; stream datasets
left out unless `--streams`), decodes its records once, then times, best of `--repeats`,
`parse.formats.response_facts` (the definition) and `fast.records.RecordReader.facts` (what
the stand-in tier reads a record with) over all of them, each file's records in order, and
checks the two give equal facts. Each dataset's records are repeated whole to `--least`
records (as `benchmarks/run.py --shape real` repeats files). Prints the CPU µs a record of
each, per dataset and in all.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from genledger.fast.records import RecordReader
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.formats import response_facts
from genledger.parse.jsonline import Malformed, records_of

HERE = Path(__file__).resolve().parent
STREAMED = ("stream", "chunk")  # dataset folders saved event by event


def datasets(root: Path, streams: bool) -> dict[str, list[dict[str, Any]]]:
    """Each dataset's records, in file order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(root.glob("realworld*/data/*/*.jsonl")):
        name = f"{path.parents[2].name}/{path.parent.name}"
        if not streams and any(word in name for word in STREAMED):
            continue
        found = out.setdefault(name, [])
        for line in path.read_bytes().splitlines():
            try:
                found += records_of(line) if line.strip() else []
            except Malformed:
                continue
    return out


def best(repeats: int, run: Callable[[], object]) -> float:
    """The least CPU seconds of `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def measure(records: list[dict[str, Any]], repeats: int) -> tuple[float, float]:
    """CPU seconds of the general path and of one reader over `records` (checked equal)."""
    reader = RecordReader(BUILT_IN_ONLY)
    if [reader.facts(r) for r in records] != [response_facts(r) for r in records]:
        raise SystemExit("the reader's facts differ from response_facts'")
    general = best(repeats, lambda: [response_facts(r) for r in records])
    return general, best(repeats, lambda: [reader.facts(r) for r in records])


def main() -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent.parent / "shared")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--streams", action="store_true", help="stream datasets too")
    parser.add_argument("--least", type=int, default=2000, help="records a dataset is read as")
    args = parser.parse_args()
    total_general = total_reader = 0.0
    count = 0
    for name, records in datasets(args.root, args.streams).items():
        # each dataset's records repeated whole, as the real corpus repeats its files
        records = records * -(-args.least // max(len(records), 1))
        general, compiled = measure(records, args.repeats)
        n = max(len(records), 1)
        print(f"{name:45s} {len(records):6d} records {general / n * 1e6:6.1f} -> "
              f"{compiled / n * 1e6:5.1f} µs")  # fmt: skip
        total_general += general
        total_reader += compiled
        count += len(records)
    n = max(count, 1)
    print(f"all {count} records: response_facts {total_general / n * 1e6:.1f} µs, the reader "
          f"{total_reader / n * 1e6:.1f} µs ({total_general / total_reader:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
