"""Benchmark a cold scan on a Ray cluster against the local pool, on one corpus, in one run.

    python benchmarks/ray_scan.py [--mb 200] [--tiny 2000] [--repeats 3]
                                  [--dir /tmp/genledger-ray]

Starts a Ray cluster of two nodes on 127.0.0.1 (one CPU each, as the tests do:
tests/genledger/refresh/ray_nodes.py), writes the reference corpus (`genledger.synth.corpus`)
and a tree of `--tiny` one-record shards, then in each round (alternating, so machine load
hits all alike) times as subprocesses, start-up included:
- `genledger collect --full` of the corpus on one core (`GENLEDGER_WORKERS=1`): the per-core
  rate, and on the local pool (every core);
- `genledger collect --full --ray ADDRESS` of the corpus: the same cores through Ray;
- both again on the tiny shards: there the scan is nothing and Ray's cost per task shows.
Prints medians, MB/s, the Ray overhead (seconds, and per task), and checks every stats JSON
equals the local one but for its times (and the totals' approximate quantiles: `exact`).
docs/performance.md ("Beyond one machine") takes the expected time of 10 TB in 100k shards
on N nodes from these numbers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from genledger.synth.corpus import write_corpus  # noqa: E402
from genledger.synth.records import line  # noqa: E402
from tests.genledger.refresh.ray_nodes import ray_cluster  # noqa: E402
from tests.genledger.refresh.test_ray_engine import without_timing  # noqa: E402

GENLEDGER = [sys.executable, "-m", "genledger.cli", "collect"]


def timed(root: Path, out: Path, env: dict[str, str], *extra: str) -> tuple[float, Any]:
    """Wall seconds of one cold `collect` of `root` (a fresh state dir), and its stats."""
    shutil.rmtree(out, ignore_errors=True)
    command = [*GENLEDGER, str(root), "-o", str(out / "s.json"), "--state", str(out / "st")]
    start = time.perf_counter()
    done = subprocess.run([*command, "--full", "-q", *extra], env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-2000:]}")
    return seconds, orjson.loads((out / "s.json").read_bytes())


def exact(stats: Any) -> Any:
    """The stats less their times and the totals' output-length quantiles: those merge the
    datasets' KLL sketches, approximate and randomised (two local collects of this corpus
    differ there too), so they are printed, not compared."""
    out = without_timing(stats)
    out["totals"]["health"].pop("output_tokens", None)
    return out


def tiny_tree(root: Path, shards: int) -> Path:
    """`shards` files of one record each, in 10 datasets."""
    shutil.rmtree(root, ignore_errors=True)
    for i in range(shards):
        folder = root / f"ds{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        record = {"id": f"r{i}", "prompt_tokens": 3, "completion_tokens": 5 + i % 7}
        (folder / f"raw_responses_{i:05d}.jsonl").write_bytes(line(record))
    return root


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--tiny", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-ray"))
    args = parser.parse_args()
    corpus, tiny = args.dir / "corpus", args.dir / "tiny"
    write_corpus(corpus, args.mb)
    tiny_tree(tiny, args.tiny)
    size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    env = {**os.environ}
    one_core = {**env, "GENLEDGER_WORKERS": "1"}
    times: dict[str, list[float]] = {}
    with ray_cluster(workers=1) as cluster:
        runs = {
            "corpus, one core": (corpus, one_core, ()),
            "corpus, local pool": (corpus, env, ()),
            "corpus, Ray (2 nodes x 1 CPU)": (corpus, env, ("--ray", cluster.address)),
            "tiny shards, local pool": (tiny, env, ()),
            "tiny shards, Ray (2 nodes x 1 CPU)": (tiny, env, ("--ray", cluster.address)),
        }
        stats: dict[str, Any] = {}
        for _ in range(args.repeats):
            for name, (root, run_env, extra) in runs.items():
                seconds, stats[name] = timed(root, args.dir / "out", run_env, *extra)
                times.setdefault(name, []).append(seconds)
    for shape in ("corpus", "tiny shards"):
        a, b = f"{shape}, local pool", f"{shape}, Ray (2 nodes x 1 CPU)"
        assert exact(stats[a]) == exact(stats[b]), f"{a} != {b}"
        quantiles = [stats[x]["totals"]["health"]["output_tokens"] for x in (a, b)]
        print(f"{shape}: totals' output-token quantiles, local vs Ray: {quantiles}")
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"corpus {size / 1e6:.0f} MB, {args.tiny} tiny shards, {args.repeats} rounds, medians")
    for name, seconds in median.items():
        rate = f"{size / 1e6 / seconds:7.1f} MB/s" if name.startswith("corpus") else ""
        print(f"  {name:38s} {seconds:7.2f} s  {rate}")
    over = median["corpus, Ray (2 nodes x 1 CPU)"] - median["corpus, local pool"]
    per_task = (
        median["tiny shards, Ray (2 nodes x 1 CPU)"] - median["tiny shards, local pool"]
    ) / args.tiny
    print(f"  Ray overhead on the corpus: {over:+.2f} s; per tiny task: {per_task * 1e3:.2f} ms")
    # The corpus's 21 tasks cost next to nothing: its overhead is the fixed cost of a Ray
    # scan (connecting, a worker on each node importing genledger); the rest is per task.
    marginal = (per_task * args.tiny - over) / args.tiny
    print(f"  fixed cost ~{over:.2f} s; per task beyond it: {marginal * 1e3:.2f} ms")
    print(f"  per-core rate: {size / 1e6 / median['corpus, one core']:.0f} MB/s")


if __name__ == "__main__":
    main()
