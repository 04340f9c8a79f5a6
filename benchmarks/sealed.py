"""Benchmark sealed shards (issue 13): gzip and zstd against their decompressors, tokenized
Parquet in GB/s, memory flat in file size. Ratios measured in one run, alternating rounds.

    python benchmarks/sealed.py [--mb 400] [--parquet-mb 1000] [--repeats 3] [--only parquet]

- gzip / zstd: the reference benchmark corpus (`genledger.synth.corpus`), every data file
  compressed (`gzip -6`, `zstd -3`), nested one folder deep; `genledger collect --full`
  against `zcat FILES | wc -l` and `zstdcat FILES | wc -l` on the same files (target: >= 80 %
  of their speed).
- Parquet: tokenized shards, one `tokenized_data.parquet` in each of 2 datasets
  (`genledger.synth.parquet`: rows of 1-8k Zipf-distributed int64 ids over a 151,936-token
  vocabulary and an int64 0/1 `loss_mask`, 1,000-row row groups: what HF `datasets` writes),
  the same rows written three ways: pyarrow's defaults (snappy, dictionary: as `datasets`
  writes), zstd, and plain (uncompressed, no dictionary). `--parquet-mb` is their decoded
  (Arrow) size; the defaults again at half of it. Each next to pyarrow reading the same two
  columns in 2 processes, in the same run: its plain read (`read_row_group`) and a decode-only
  loop as collect decodes (4 MB batches). Target: >= 1 GB/s of Parquet bytes on 2 cores; peak
  RSS flat in size.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import GENLEDGER, Sample, measure  # noqa: E402

from genledger.synth.corpus import write_corpus  # noqa: E402
from genledger.synth.parquet import write_tokenized_parquet  # noqa: E402

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


WRITERS: dict[str, dict[str, Any]] = {
    "default": {},  # pyarrow's defaults, as HF `datasets` writes: snappy, dictionary pages
    "zstd": {"compression": "zstd"},
    "plain": {"compression": "none", "use_dictionary": False},  # uncompressed, no dictionary
}


def parquet_root(out: Path, mb: float, writer: str) -> int:
    """Tokenized shards of about `mb` MB decoded, written with `WRITERS[writer]`; returns
    their decoded bytes (the same rows whatever the writer)."""
    return write_tokenized_parquet(out, mb, **WRITERS[writer])


def stored(root: Path) -> int:
    """Bytes of the Parquet files under `root`."""
    return sum(p.stat().st_size for p in root.glob("**/*.parquet"))


def collect(root: Path, scratch: Path) -> Sample:
    """`genledger collect --full` of `root`, as a subprocess (start-up included)."""
    command = [*GENLEDGER, "collect", str(root), "-o", str(scratch / "s.json")]
    return measure([*command, "--state", str(scratch / "state"), "--full", "-q"])


def decompress(tool: str, files: list[Path]) -> Sample:
    """The reference: `zcat FILES | wc -l`."""
    quoted = " ".join(f"'{f}'" for f in files)
    return measure(["bash", "-c", f"{tool} {quoted} | wc -l"])


READ_PARQUET = """
import sys, pyarrow as pa, pyarrow.parquet as pq
from concurrent.futures import ProcessPoolExecutor
COLUMNS = ["input_ids", "loss_mask"]
def read(job):
    mode, path, group = job
    f = pq.ParquetFile(path)
    if mode == "groups":  # pyarrow's own read: a row group at a time, its default pool
        return f.read_row_group(group, columns=COLUMNS, use_threads=False).num_rows
    # decode only, as collect decodes: batches of ~4 MB, jemalloc, nothing counted
    pa.set_memory_pool(pa.jemalloc_memory_pool())
    meta = f.metadata.row_group(group)
    size = sum(meta.column(c).total_uncompressed_size + 8 * meta.column(c).num_values
               for c in range(meta.num_columns))
    rows = max(1, meta.num_rows * (4 << 20) // size)
    return sum(b.num_rows for b in f.iter_batches(rows, row_groups=[group], columns=COLUMNS,
                                                  use_threads=False))
mode, paths = sys.argv[1], sys.argv[2:]
jobs = [(mode, p, g) for p in paths for g in range(pq.ParquetFile(p).num_row_groups)]
with ProcessPoolExecutor(2) as pool:
    print(sum(pool.map(read, jobs)))
"""


def pyarrow_read(root: Path, mode: str) -> Sample:
    """The Parquet references: pyarrow decoding the same two columns in 2 processes, row
    groups spread over them (`groups`: its plain read; `batches`: decoding as collect does)."""
    files = [str(p) for p in sorted(root.glob("**/*.parquet"))]
    return measure([sys.executable, "-c", READ_PARQUET, mode, *files])


def median(samples: list[Sample]) -> float:
    return statistics.median(s.seconds for s in samples)


def main() -> None:
    """Run every measurement, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=400.0, help="plain corpus to compress")
    parser.add_argument("--parquet-mb", type=float, default=1000.0, help="decoded (Arrow) MB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("streams", "parquet"), help="one half of the run")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-sealed"))
    args = parser.parse_args()
    base = args.dir
    roots: dict[str, list[Path]] = {}
    plain_mb = 0.0
    if args.only != "parquet":
        write_corpus(base / "plain", args.mb)
        roots = {s: compressed_root(base / "plain", base / s, s) for s in COMPRESSORS}
        plain_mb = sum(f.stat().st_size for f in (base / "plain").glob("*/*.jsonl")) / 1e6
    decoded: dict[str, int] = {}
    if args.only != "streams":
        for writer in WRITERS:
            decoded[writer] = parquet_root(base / f"pq-{writer}", args.parquet_mb, writer)
        decoded["half"] = parquet_root(base / "pq-half", args.parquet_mb / 2, "default")
    samples: dict[str, list[Sample]] = {}
    for _ in range(args.repeats):  # alternating rounds: machine load hits every series alike
        if roots:  # the same records uncompressed: what parsing alone costs
            samples.setdefault("ours-plain", []).append(collect(base / "plain", base / "run"))
        for suffix, files in roots.items():
            tool = COMPRESSORS[suffix][1]
            samples.setdefault(f"{tool}", []).append(decompress(tool, files))
            samples.setdefault(f"ours-{suffix}", []).append(collect(base / suffix, base / "run"))
        for name in decoded:
            root = base / f"pq-{name}"
            samples.setdefault(f"pq-{name}", []).append(collect(root, base / "run"))
            if name in WRITERS:
                for mode in ("groups", "batches"):
                    samples.setdefault(f"{mode}-{name}", []).append(pyarrow_read(root, mode))
    if roots:
        report_streams(samples, roots, plain_mb)
    if decoded:
        report_parquet(samples, base, decoded)


def report_streams(
    samples: dict[str, list[Sample]], roots: dict[str, list[Path]], plain_mb: float
) -> None:
    """gzip and zstd against their decompressors."""
    print(f"plain corpus {plain_mb:.0f} MB; {len(samples['zcat'])} rounds; medians")
    for suffix, files in roots.items():
        tool = COMPRESSORS[suffix][1]
        size = sum(f.stat().st_size for f in files) / 1e6
        ref, ours = median(samples[tool]), median(samples[f"ours-{suffix}"])
        rss = max(s.tree_rss for s in samples[f"ours-{suffix}"]) / 1e6
        plain = median(samples["ours-plain"])
        print(
            f"{suffix}: {size:.0f} MB stored; {tool}|wc -l {ref:.2f} s, collect {ours:.2f} s "
            f"({plain_mb / ours:.0f} MB/s decoded), speed ratio {ref / ours:.2f} (target >= 0.80), "
            f"peak RSS {rss:.0f} MB; collect of the plain files {plain:.2f} s "
            f"(compressed at {plain / ours:.0%} of its speed)"
        )


REFERENCES = {"pyarrow read_row_group": "groups", "pyarrow 4 MB batches": "batches"}


def report_parquet(samples: dict[str, list[Sample]], base: Path, decoded: dict[str, int]) -> None:
    """Per writer: GB/s of file bytes and of decoded bytes, collect next to pyarrow."""
    rounds = len(samples["pq-default"])
    print(f"tokenized Parquet, {rounds} rounds, medians; GB/s of file bytes / of decoded bytes")
    for name in decoded:
        size, arrow = stored(base / f"pq-{name}"), decoded[name]
        ours = median(samples[f"pq-{name}"])
        runs = {"collect": ours}
        if name in WRITERS:
            runs |= {label: median(samples[f"{k}-{name}"]) for label, k in REFERENCES.items()}
        cells = [
            f"{k} {t:.2f} s = {size / t / 1e9:.2f} / {arrow / t / 1e9:.2f}" for k, t in runs.items()
        ]
        cpu = {"collect": statistics.median(s.cpu for s in samples[f"pq-{name}"])}
        if name in WRITERS:
            for label, k in REFERENCES.items():
                cpu[label] = statistics.median(s.cpu for s in samples[f"{k}-{name}"])
        ratios = [f"collect at {t / ours:.0%} of {k}" for k, t in runs.items() if k != "collect"]
        # The tree's sampled RSS (workers included); wait4's max RSS would include this
        # process's own, inherited across exec, after it generated the files.
        tree = max(s.tree_rss for s in samples[f"pq-{name}"]) / 1e6
        print(f"{name}: {size / 1e6:.0f} MB stored, {arrow / 1e6:.0f} MB decoded")
        print("    " + "; ".join(cells))
        print("    CPU s (workers included): " + ", ".join(f"{k} {t:.2f}" for k, t in cpu.items()))
        print("    " + "; ".join([*ratios, f"collect peak RSS {tree:.0f} MB (process tree)"]))
    print("target: >= 1 GB/s of file bytes on 2 cores; RSS flat from half to full size")


if __name__ == "__main__":
    main()
