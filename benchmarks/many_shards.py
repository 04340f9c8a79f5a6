"""Benchmark many small shards (issue 33): a cold collect, a no-op collect, and the state's size.

    python benchmarks/many_shards.py [--shards 50000] [--datasets 1] [--repeats 3] [--out DIR]

One-record `raw_responses_NNNNN.jsonl` shards (chat completions of `genledger.synth.records`),
spread over `--datasets` dataset folders, 1,000 to a `part-NNN/` folder. Each round runs
`genledger collect` in a fresh process: first cold (an empty state dir), then again with
nothing changed (the no-op refresh: target <= 2 s at 50,000 shards), then after one record
appended to one shard. Prints the wall and CPU seconds of each (CPU: the child's user +
system time), the state dir's bytes and bytes per shard, and the peak RSS of the no-op run.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from genledger.synth.records import line, openai_chat

GENLEDGER = [sys.executable, "-m", "genledger.cli"]


def write_shards(root: Path, shards: int, datasets: int) -> None:
    """`shards` one-record shards over `datasets` dataset folders, last written an hour ago:
    settled, as most shards of a long run are (a refresh in which one settles counts its
    dataset again, once: docs/performance.md)."""
    rng = random.Random(7)
    then = time.time_ns() - 3600 * 10**9
    for i in range(shards):
        folder = root / f"ds{i % datasets:02d}" / f"part-{i // datasets // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        record = openai_chat(f"r{i}", 20, 30 + i % 50, rng, content=f"answer {i}")
        path = folder / f"raw_responses_{i:05d}.jsonl"
        path.write_bytes(line(record))
        os.utime(path, ns=(then, then))


def collect(root: Path, work: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds of one `genledger collect`, and the peak RSS (KiB) so far."""
    cmd = [*GENLEDGER, "collect", str(root), "-o", str(work / "stats.json")]
    cmd += ["--state", str(work / "state"), "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"collect failed ({done.returncode}): {done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, max(before.ru_maxrss, after.ru_maxrss)


def append_one(root: Path, shards: int, datasets: int, n: int) -> None:
    """One more record at the end of one shard (the middle one)."""
    i = shards // 2
    path = root / f"ds{i % datasets:02d}" / f"part-{i // datasets // 1000:03d}"
    record = openai_chat(f"extra{n}", 20, 30, random.Random(n), content="appended")
    with (path / f"raw_responses_{i:05d}.jsonl").open("ab") as fh:
        fh.write(line(record))


def show(what: str, runs: list[tuple[float, float, int]]) -> str:
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    return f"{what:<18}{wall:.2f} s wall, {cpu:.2f} s CPU (median of {len(runs)})"


def state_bytes(state: Path) -> int:
    return sum(p.stat().st_size for p in state.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=50_000)
    parser.add_argument("--datasets", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="genledger-shards-"))
    root = base / "data"
    shutil.rmtree(root, ignore_errors=True)
    write_shards(root, args.shards, args.datasets)
    cold, noop, grown = [], [], []
    for n in range(args.repeats):
        work = base / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        cold.append(collect(root, work))
        noop.append(collect(root, work))
        append_one(root, args.shards, args.datasets, n)
        grown.append(collect(root, work))
    size = state_bytes(work / "state")
    print(f"shards            {args.shards:,} in {args.datasets} dataset(s)")
    print(show("cold collect", cold))
    met = "met" if statistics.median(r[0] for r in noop) <= 2.0 else "NOT met"
    print(show("no-op collect", noop) + f" (target <= 2 s: {met})")
    print(show("one append", grown))
    print(f"state dir         {size:,} bytes, {size / args.shards:,.0f} bytes per shard")
    print(f"no-op peak RSS    {noop[-1][2] / 1024:.0f} MB (largest child so far)")
    if args.out is None:
        shutil.rmtree(base, ignore_errors=True)
    os.sync()


if __name__ == "__main__":
    main()
