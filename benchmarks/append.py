"""What a small refresh costs beyond a no-op, this tree against another, in paired rounds.

    python benchmarks/append.py --baseline TREE [--shape second] [--mb 200] [--rounds 9]
                                [--share 0.01] [--dir /tmp/genledger-append]

One corpus as `benchmarks/run.py` makes it (`--shape`, `--mb`), and a state dir for each
tree. Each round appends `--share` of every data file (`1e-7`: one batch of lines, the fixed
cost alone), refreshes with both trees in alternating order, then runs a no-op of each; the
first three rounds also time a cold collect of each. Printed per tree: medians of the wall
and CPU seconds of the cold collect, the no-op and the append, and the append beyond the
no-op in ms and as a share of the cold collect (the issue-32 target: at most 5 %). The
rounds alternate so that a busy machine weighs on both trees alike.
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
import time
from pathlib import Path

from realcorpus import append_real, write_real

from genledger.synth.corpus import SHAPES, append_share, write_corpus

HERE = Path(__file__).resolve().parent
REAL_SHAPES = ("real", "real-openai")
COLD_ROUNDS = 3
Sample = tuple[float, float]  # wall seconds, CPU seconds (user + system)


def collect(tree: Path, root: Path, out: Path, full: bool = False) -> Sample:
    """One `genledger collect` run by `tree` (its package first on the path), timed."""
    cmd = [sys.executable, "-m", "genledger.cli", "collect", str(root), "-q"]
    cmd += ["-o", str(out / "stats.json"), "--state", str(out / "state")]
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    # `python -m` puts the working folder first on the path: the tree's package is imported
    done = subprocess.run([*cmd, *(["--full"] if full else [])], cwd=tree, check=False)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: a dataset has an error-severity failure
        raise SystemExit(f"{tree}: collect exited {done.returncode}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def append(root: Path, shape: str, share: float, seed: int) -> int:
    """Append `share` of every data file of the corpus; the bytes added."""
    if shape in REAL_SHAPES:
        return append_real(root, share, seed, shape)
    return append_share(root, share, seed=seed, shape=shape)


def ms(samples: list[Sample], which: int) -> float:
    """The median of the samples' wall (0) or CPU (1) seconds, in ms."""
    return statistics.median(s[which] for s in samples) * 1000


def report(name: str, runs: dict[str, list[Sample]]) -> str:
    """One tree's line: cold, no-op and append medians, and the append beyond the no-op."""
    parts = [f"{name:8s}"]
    for kind in ("cold", "noop", "append"):
        parts.append(f"{kind} {ms(runs[kind], 0):.0f} / {ms(runs[kind], 1):.0f} ms")
    for which, label in ((0, "wall"), (1, "CPU")):
        beyond = ms(runs["append"], which) - ms(runs["noop"], which)
        share = beyond / ms(runs["cold"], which)
        parts.append(f"beyond no-op {label} {beyond:.0f} ms ({share:.1%})")
    return " | ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other tree's root")
    parser.add_argument("--shape", default="second", choices=[*SHAPES, *REAL_SHAPES])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-append"))
    args = parser.parse_args()
    root = args.dir / f"corpus_{args.shape}"
    if args.shape in REAL_SHAPES:
        shutil.rmtree(root, ignore_errors=True)
        write_real(root, args.mb, args.shape)
    else:
        write_corpus(root, args.mb, seed=1, shape=args.shape)
    trees = {"this": HERE.parent, "baseline": args.baseline.resolve()}
    runs: dict[str, dict[str, list[Sample]]] = {
        name: {"cold": [], "noop": [], "append": []} for name in trees
    }
    outs = {name: args.dir / f"out_{args.shape}_{name}" for name in trees}
    for name, tree in trees.items():  # a committed state to refresh from
        collect(tree, root, outs[name], full=True)
        collect(tree, root, outs[name])
    rng = random.Random(os.getpid())
    for rnd in range(args.rounds):
        order = list(trees) if rnd % 2 == 0 else list(trees)[::-1]
        added = append(root, args.shape, args.share, rng.randrange(1 << 30))
        for name in order:
            runs[name]["append"].append(collect(trees[name], root, outs[name]))
        for name in order:
            runs[name]["noop"].append(collect(trees[name], root, outs[name]))
        if rnd < COLD_ROUNDS:
            for name in order:
                runs[name]["cold"].append(collect(trees[name], root, outs[name], full=True))
                collect(trees[name], root, outs[name])  # its state again, for the next round
        print(f"round {rnd + 1}: +{added / 1e6:.2f} MB", flush=True)
    for name in trees:
        print(report(name, runs[name]))


if __name__ == "__main__":
    main()
