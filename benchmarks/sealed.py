"""Benchmark sealed shards (issue 13): gzip and zstd against their decompressors, tokenized
Parquet in GB/s, memory flat in file size. Ratios measured in one run, alternating rounds.

    python benchmarks/sealed.py [--mb 400] [--parquet-mb 1000] [--repeats 3] [--dir /tmp/gl-sealed]

- gzip / zstd: the benchmark corpus (`corpus.py`), every data file compressed (`gzip -6`,
  `zstd -3`), nested one folder deep; `genledger collect --full` against `zcat FILES | wc -l`
  and `zstdcat FILES | wc -l` on the same files (target: >= 80 % of their speed).
- Parquet: tokenized shards (`input_ids` list<int64> of 1-8k ids, `loss_mask` list<int8>),
  counted at `--parquet-mb` and at half of it (target: >= 1 GB/s of Parquet bytes on 2 cores;
  peak RSS flat in size).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from corpus import write_corpus  # noqa: E402
from run import GENLEDGER, Sample, measure  # noqa: E402

COMPRESSORS = {
    "gz": (["gzip", "-6", "-k", "-f", "-q"], "zcat"),
    "zst": (["zstd", "-3", "-q", "-f"], "zstdcat"),
}


def compressed_root(plain: Path, out: Path, suffix: str) -> list[Path]:
    """The corpus's data files compressed under `out/DATASET/part-00000/`; returns them."""
    command, _ = COMPRESSORS[suffix]
    shutil.rmtree(out, ignore_errors=True)
    files = []
    for source in sorted(plain.glob("*/*.jsonl")):
        if source.name.startswith("prompts"):
            continue
        subprocess.run([*command, str(source)], check=True)
        target = out / source.parent.name / "part-00000" / f"{source.name}.{suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(f"{source}.{suffix}", target)
        files.append(target)
    return files


def parquet_root(out: Path, mb: float, files: int = 4, seed: int = 3) -> int:
    """Tokenized Parquet shards of about `mb` MB in all; returns their bytes."""
    shutil.rmtree(out, ignore_errors=True)
    rng = np.random.default_rng(seed)
    total = 0
    for index in range(files):
        path = out / f"tok{index % 2}" / f"part-{index:05d}" / "tokenized_data.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = None
        written = 0
        while written < mb * 1e6 / files:
            rows = 2000
            lengths = rng.integers(1000, 8000, rows)
            offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
            ids = pa.array(rng.integers(0, 163_840, int(offsets[-1])), pa.int64())
            mask = pa.array((rng.random(int(offsets[-1])) > 0.3).astype(np.int8))
            table = pa.table(
                {
                    "input_ids": pa.ListArray.from_arrays(pa.array(offsets), ids),
                    "loss_mask": pa.ListArray.from_arrays(pa.array(offsets), mask),
                }
            )
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            written += int(offsets[-1]) * 3  # roughly: ids compress poorly, masks well
        assert writer is not None
        writer.close()
        total += path.stat().st_size
    return total


def collect(root: Path, scratch: Path) -> Sample:
    """`genledger collect --full` of `root`, as a subprocess (start-up included)."""
    command = [*GENLEDGER, "collect", str(root), "-o", str(scratch / "s.json")]
    return measure([*command, "--state", str(scratch / "state"), "--full", "-q"])


def decompress(tool: str, files: list[Path]) -> Sample:
    """The reference: `zcat FILES | wc -l`."""
    quoted = " ".join(f"'{f}'" for f in files)
    return measure(["bash", "-c", f"{tool} {quoted} | wc -l"])


READ_PARQUET = """
import sys, pyarrow.parquet as pq
from concurrent.futures import ProcessPoolExecutor
def read(path):
    f = pq.ParquetFile(path, memory_map=True)
    return sum(f.read_row_group(i, columns=["input_ids", "loss_mask"]).num_rows
               for i in range(f.num_row_groups))
with ProcessPoolExecutor(2) as pool:
    print(sum(pool.map(read, sys.argv[1:])))
"""


def pyarrow_read(root: Path) -> Sample:
    """The Parquet reference: pyarrow decoding the same two columns, 2 processes."""
    files = [str(p) for p in sorted(root.glob("**/*.parquet"))]
    return measure([sys.executable, "-c", READ_PARQUET, *files])


def median(samples: list[Sample]) -> float:
    return statistics.median(s.seconds for s in samples)


def main() -> None:
    """Run every measurement, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=400.0, help="plain corpus to compress")
    parser.add_argument("--parquet-mb", type=float, default=1000.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-sealed"))
    args = parser.parse_args()
    base = args.dir
    write_corpus(base / "plain", args.mb)
    roots = {s: compressed_root(base / "plain", base / s, s) for s in COMPRESSORS}
    plain_mb = sum(f.stat().st_size for f in (base / "plain").glob("*/*.jsonl")) / 1e6
    parquet_bytes = {
        "full": parquet_root(base / "pq-full", args.parquet_mb),
        "half": parquet_root(base / "pq-half", args.parquet_mb / 2),
    }
    samples: dict[str, list[Sample]] = {}
    for _ in range(args.repeats):  # alternating rounds: machine load hits every series alike
        for suffix, files in roots.items():
            tool = COMPRESSORS[suffix][1]
            samples.setdefault(f"{tool}", []).append(decompress(tool, files))
            samples.setdefault(f"ours-{suffix}", []).append(collect(base / suffix, base / "run"))
        for size in parquet_bytes:
            samples.setdefault(f"pq-{size}", []).append(collect(base / f"pq-{size}", base / "run"))
        samples.setdefault("pyarrow", []).append(pyarrow_read(base / "pq-full"))
    report(samples, roots, plain_mb, parquet_bytes)


def report(
    samples: dict[str, list[Sample]],
    roots: dict[str, list[Path]],
    plain_mb: float,
    parquet_bytes: dict[str, int],
) -> None:
    """Medians, throughput and the targets."""
    print(f"plain corpus {plain_mb:.0f} MB; {len(samples['zcat'])} rounds; medians")
    for suffix, files in roots.items():
        tool = COMPRESSORS[suffix][1]
        stored = sum(f.stat().st_size for f in files) / 1e6
        ref, ours = median(samples[tool]), median(samples[f"ours-{suffix}"])
        rss = max(s.tree_rss for s in samples[f"ours-{suffix}"]) / 1e6
        print(
            f"{suffix}: {stored:.0f} MB stored; {tool}|wc -l {ref:.2f} s, collect {ours:.2f} s "
            f"({plain_mb / ours:.0f} MB/s decoded), speed ratio {ref / ours:.2f} (target >= 0.80), "
            f"peak RSS {rss:.0f} MB"
        )
    rates: dict[str, Any] = {}
    for size, stored in parquet_bytes.items():
        seconds = median(samples[f"pq-{size}"])
        rss = max(s.tree_rss for s in samples[f"pq-{size}"]) / 1e6
        rates[size] = (stored / seconds / 1e9, rss)
        print(
            f"parquet {size}: {stored / 1e6:.0f} MB in {seconds:.2f} s = "
            f"{stored / seconds / 1e9:.2f} GB/s (target >= 1.0), peak RSS {rss:.0f} MB"
        )
    reference = parquet_bytes["full"] / median(samples["pyarrow"]) / 1e9
    print(
        f"pyarrow reading the same columns (2 processes): {reference:.2f} GB/s; "
        f"collect at {rates['full'][0] / reference:.0%} of it"
    )
    print(f"parquet RSS half -> full: {rates['half'][1]:.0f} -> {rates['full'][1]:.0f} MB")


if __name__ == "__main__":
    main()
