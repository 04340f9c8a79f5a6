"""What writing the metrics costs: a no-op refresh with and without `--metrics`, in one run.

    python benchmarks/metrics.py [--shape reference] [--mb 200] [--repeats 9]
        [--dir /tmp/genledger-bench-metrics]

Generates a corpus (`genledger.synth.corpus`) or takes `--root` (e.g. ../shared/realworld/
data), collects it once cold, then times `genledger collect` no-op refreshes as subprocesses
(start-up included, as cron runs them), alternating three kinds so machine load hits them
alike: without `--metrics`; with `--metrics FILE` (a no-op changes no number: the text
written last is kept, `genledger.refresh.metrics`); and with `--metrics FILE` after deleting
the memo, as when some number changed (prometheus_client imported, the text rendered). Also
times the exposition alone in process on the written stats. Prints medians and the share
the metrics add (target: < 5 % of a no-op refresh).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from genledger.ledger.openmetrics import exposition
from genledger.refresh.metrics import memo_path, metrics_files
from genledger.synth.corpus import SHAPES, write_corpus

KINDS = ("plain", "kept", "rendered")  # no metrics; metrics kept; metrics rendered again


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one subprocess run (exit 0 or 1: failures
    found are still a run)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    """Run the measurement and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="reference")
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--root", type=Path, help="an existing data root instead of a corpus")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="genledger-bench-metrics-"))
    work.mkdir(parents=True, exist_ok=True)
    root = args.root
    if root is None:
        root = work / "data"
        if root.exists():
            shutil.rmtree(root)
        write_corpus(root, args.mb, shape=args.shape)
    stats, metrics = work / "stats.json", work / "genledger.prom"
    base = [sys.executable, "-m", "genledger.cli", "collect", str(root), "-o", str(stats)]
    base += ["--state", str(work / "state"), "-q"]
    timed([*base, "--full"])
    memo = memo_path(work / "state", metrics)
    runs: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    for _ in range(args.repeats):
        runs["plain"].append(timed(base))
        runs["kept"].append(timed([*base, "--metrics", str(metrics)]))
        memo.unlink(missing_ok=True)  # as if a number had changed: rendered again
        runs["rendered"].append(timed([*base, "--metrics", str(metrics)]))
    document = orjson.loads(stats.read_bytes())
    inside = []
    for _ in range(max(args.repeats, 20)):
        start = time.process_time()
        exposition(document)
        inside.append(time.process_time() - start)
    e = statistics.median(inside)
    kept = []
    for _ in range(max(args.repeats, 20)):  # the memo of the last rendered run is there
        start = time.process_time()
        assert not metrics_files(document, 20, metrics, work / "state"), "the text is kept"
        kept.append(time.process_time() - start)
    k = statistics.median(kept)
    print(f"root {root}: {len(document['datasets'])} datasets, {metrics.stat().st_size} B metrics")
    for i, what in enumerate(("wall", "CPU")):
        p = statistics.median(t[i] for t in runs["plain"])
        print(f"no-op refresh, {what:4}   {p * 1000:7.1f} ms (median of {args.repeats})")
        for kind in ("kept", "rendered"):
            m = statistics.median(t[i] for t in runs[kind])
            print(f"  --metrics, {kind:9} {m * 1000:7.1f} ms ({(m - p) / p * 100:+.1f} %)")
    print(f"exposition in process  {e * 1000:7.2f} ms CPU (its import not counted)")
    print(f"kept text in process   {k * 1000:7.2f} ms CPU (numbers compared, file touched)")


if __name__ == "__main__":
    main()
