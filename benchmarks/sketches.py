"""Compare mergeable quantile sketches for the output-length quantiles (docs/performance.md).

    python benchmarks/sketches.py [--n 1000000] [--parts 64] [--repeats 5]

Candidates: Apache DataSketches' KLL (`datasketches`, ints and floats), and the t-digests of
`fastdigest` (Rust) and `pytdigest` (C). For each: the time to build a sketch of `n` output
lengths (a long-tailed mix like a reasoning run's: most answers a few hundred tokens, some at
the cap) fed in batches as a refresh feeds them, the time to merge `parts` sketches of its
pieces (files and forked workers), the serialised size, and the accuracy of p50/p90/p99/max
against the exact values, as the rank error (how far the reported value's rank is from the
asked one) — the measure KLL states a bound for. Medians of `--repeats` runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

QUANTILES = (0.5, 0.9, 0.99)


def lengths(n: int, seed: int = 1) -> np.ndarray:
    """Output lengths: log-normal around 600 tokens, 8 % stopped at a 4,096 cap."""
    rng = np.random.default_rng(seed)
    values = np.minimum(rng.lognormal(6.4, 0.8, n).astype(np.int64) + 1, 4096)
    capped = rng.random(n) < 0.08
    values[capped] = 4096
    return values


class Candidate:
    """One library behind a common face: build from batches, merge, serialise, query."""

    name = ""

    def build(self, values: np.ndarray, batch: int) -> Any:
        raise NotImplementedError

    def merge(self, sketches: list[Any]) -> Any:
        raise NotImplementedError

    def size(self, sketch: Any) -> int:
        raise NotImplementedError

    def quantile(self, sketch: Any, q: float) -> float:
        raise NotImplementedError

    def maximum(self, sketch: Any) -> float:
        raise NotImplementedError


class Kll(Candidate):
    def __init__(self, kind: str, k: int = 200) -> None:
        import datasketches

        self.make = getattr(datasketches, f"kll_{kind}_sketch")
        self.k = k
        self.name = f"datasketches kll_{kind} k={k}"

    def build(self, values: np.ndarray, batch: int) -> Any:
        sketch = self.make(self.k)
        for start in range(0, len(values), batch):
            sketch.update(values[start : start + batch])
        return sketch

    def merge(self, sketches: list[Any]) -> Any:
        out = self.make(self.k)
        for s in sketches:
            out.merge(s)
        return out

    def size(self, sketch: Any) -> int:
        return len(sketch.serialize())

    def quantile(self, sketch: Any, q: float) -> float:
        return float(sketch.get_quantile(q))

    def maximum(self, sketch: Any) -> float:
        return float(sketch.get_max_value())


class FastDigest(Candidate):
    name = "fastdigest (t-digest, Rust)"

    def build(self, values: np.ndarray, batch: int) -> Any:
        from fastdigest import TDigest

        digest = TDigest()
        for start in range(0, len(values), batch):
            digest.batch_update(values[start : start + batch].astype(np.float64))
        return digest

    def merge(self, sketches: list[Any]) -> Any:
        from fastdigest import merge_all

        return merge_all(sketches)

    def size(self, sketch: Any) -> int:
        import orjson

        return len(orjson.dumps(sketch.to_dict()))

    def quantile(self, sketch: Any, q: float) -> float:
        return float(sketch.quantile(q))

    def maximum(self, sketch: Any) -> float:
        return float(sketch.max())


class PyTDigest(Candidate):
    name = "pytdigest (t-digest, C)"

    def build(self, values: np.ndarray, batch: int) -> Any:
        from pytdigest import TDigest

        digest = TDigest()
        for start in range(0, len(values), batch):
            digest.update(values[start : start + batch].astype(np.float64))
        return digest

    def merge(self, sketches: list[Any]) -> Any:
        from pytdigest import TDigest

        return TDigest.combine(sketches)

    def size(self, sketch: Any) -> int:
        return int(sketch.get_centroids().nbytes)

    def quantile(self, sketch: Any, q: float) -> float:
        return float(sketch.inverse_cdf(q))

    def maximum(self, sketch: Any) -> float:
        return float(sketch.inverse_cdf(1.0))


def rank_error(sorted_values: np.ndarray, value: float, q: float) -> float:
    """How far `value`'s rank is from `q` (0 when some rank of equal values is q)."""
    n = len(sorted_values)
    low = np.searchsorted(sorted_values, value, "left") / n
    high = np.searchsorted(sorted_values, value, "right") / n
    return 0.0 if low <= q <= high else min(abs(low - q), abs(high - q))


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=64)
    parser.add_argument("--batch", type=int, default=20_000, help="values per update call")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    values = lengths(args.n)
    exact = np.sort(values)
    pieces = np.array_split(values, args.parts)
    candidates: list[Candidate] = [Kll("ints"), Kll("floats"), FastDigest(), PyTDigest()]
    print(f"{args.n:,} output lengths, {args.parts} pieces, batches of {args.batch:,}")
    header = (
        "library | build ns/value | merge ms | bytes | rank err p50/p90/p99 (max %) | max exact"
    )
    print(header)
    for c in candidates:
        try:
            build_s, whole = timed(lambda c=c: c.build(values, args.batch), args.repeats)
        except ImportError as exc:
            print(f"{c.name}: not installed ({exc})")
            continue
        parts = [c.build(p, args.batch) for p in pieces]
        merge_s, merged = timed(lambda c=c, parts=parts: c.merge(parts), args.repeats)
        errors = [
            max(rank_error(exact, c.quantile(s, q), q) for s in (whole, merged)) for q in QUANTILES
        ]
        max_ok = c.maximum(merged) == exact[-1] and c.maximum(whole) == exact[-1]
        print(
            f"{c.name} | {build_s / args.n * 1e9:.1f} | {merge_s * 1e3:.2f} | {c.size(merged):,} | "
            + "/".join(f"{e * 100:.2f}" for e in errors)
            + f" | {max_ok}"
        )


if __name__ == "__main__":
    main()
