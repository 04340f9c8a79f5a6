"""Benchmark `genledger collect` against its peers on one generated corpus, in one run.

    python benchmarks/run.py [--shape reference|second|tokens|variants|real|real-openai]
        [--mb 800] [--scales 1,2] [--repeats 3] [--dir /tmp/genledger-bench]

Per scale: generate the corpus (`genledger.synth.corpus`), then in each round (alternating, so
machine load hits all alike) time as subprocesses, start-up included: `genledger collect
--full` (cold), DuckDB `read_json` with explicit columns, an `orjson.loads` line loop, a
`json.loads` line loop; when the corpus has tokenized files, the tokenized lines alone
(`collect --full` of a root holding only them, hard-linked, against DuckDB's tokenized query on
the same files); then a no-op refresh, and a refresh after appending 1 % to every data file
(a real corpus: whole copies of its recorded files adding up to 1 %).
The `real` shapes are built from the recorded responses of `../shared/realworld*/data`
(`benchmarks/realcorpus.py`): `real` against the orjson loop (no one DuckDB query reads its
70 formats), `real-openai` against DuckDB as well.
Peak RSS is sampled over the whole process tree (workers included) and also taken from wait4
(largest single process); CPU seconds are user + system of the process and its reaped
children. Prints medians, MB/s, wall and CPU ratios and the targets (docs/performance.md);
checks our totals equal DuckDB's.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from genledger.synth.corpus import SHAPES, append_share, write_corpus

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realcorpus import append_real, write_real

HERE = Path(__file__).resolve().parent

PY = sys.executable
GENLEDGER = [PY, "-m", "genledger.cli"]
PEERS = ("duckdb", "orjson", "json")
Commands = dict[str, list[str]]
# Targets (docs/performance.md, issue 25): throughput over DuckDB's, in wall time and in CPU.
VS_DUCKDB, TOKENIZED_VS_DUCKDB = 2.0, 3.0
# Issue 32: on real records, cold collect costs at most the orjson loop's CPU (goal: half);
# a no-op refresh at most 0.2 s.
VS_ORJSON_CPU, NOOP_SECONDS = 1.0, 0.2
REAL_SHAPES = {"real": ["orjson"], "real-openai": ["duckdb", "orjson"]}  # shape: default peers


@dataclass
class Sample:
    """One timed subprocess."""

    seconds: float
    tree_rss: int  # peak sum of RSS over the process tree, bytes (sampled)
    max_rss: int  # peak RSS of the largest single process, bytes (wait4)
    stdout: str
    cpu: float = 0.0  # user + system CPU seconds of the process and its reaped children


def measure(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Sample:
    """Run `cmd` (in `cwd`) and time it; sample the tree's RSS every 10 ms; wait4 gives the
    max RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        peak = [0]
        done = threading.Event()
        sampler = threading.Thread(target=_sample_tree, args=(proc.pid, peak, done), daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{cmd} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        cpu = usage.ru_utime + usage.ru_stime  # wait4: the child and its reaped workers
        return Sample(seconds, peak[0], usage.ru_maxrss * 1024, out.read().decode(), cpu)


def _sample_tree(pid: int, peak: list[int], done: threading.Event) -> None:
    """Sum the RSS of `pid` and its descendants every 20 ms; list the descendants every 0.2 s
    (listing scans /proc and would cost the measured run a core if done every time)."""
    try:
        parent = psutil.Process(pid)
    except psutil.Error:
        return
    procs, tick = [parent], 0
    while not done.is_set():
        if tick % 10 == 0:
            with contextlib.suppress(psutil.Error):
                procs = [parent, *parent.children(recursive=True)]
        total = 0
        for p in procs:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        peak[0] = max(peak[0], total)
        tick += 1
        done.wait(0.02)


@dataclass
class Series:
    """All samples of one measurement."""

    name: str
    samples: list[Sample] = field(default_factory=list)
    mb: list[float] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def cpu_seconds(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def mb_per_cpu_s(self) -> float:
        return statistics.median(
            mb / max(s.cpu, 1e-9) for mb, s in zip(self.mb, self.samples, strict=True)
        )

    @property
    def tree_rss_mb(self) -> float:
        return max(s.tree_rss for s in self.samples) / 1e6

    @property
    def mb_per_s(self) -> float:
        return statistics.median(
            mb / s.seconds for mb, s in zip(self.mb, self.samples, strict=True)
        )


def corpus_mb(root: Path) -> float:
    """Size of every JSONL file (prompts included) in MB."""
    return sum(p.stat().st_size for p in root.glob("*/*.jsonl")) / 1e6


def tokenized_root(root: Path, out: Path) -> Path | None:
    """A data root holding only `root`'s tokenized files, hard-linked (the same files: an
    append shows in both); None if the corpus has none."""
    shutil.rmtree(out, ignore_errors=True)
    files = sorted(p for p in root.glob("*/*.jsonl") if p.name.startswith("tokenized"))
    for path in files:
        link = out / path.parent.name / path.name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, link)
    return out if files else None


def our_totals(stats_path: Path) -> dict[str, Any]:
    """The stats JSON's totals in the peers' terms."""
    totals = json.loads(stats_path.read_text())["totals"]
    formats: dict[str, int] = {}
    for fmt, n in totals["formats"].items():
        key = "openai" if fmt in ("openai_chat", "openai_completion") else fmt
        formats[key] = formats.get(key, 0) + n
    return {
        "records": totals["n_done"],
        "total_comp": totals["total_comp"],
        "tokenized": totals["n_tokenized"],
        "total_tokens": totals["total_tokens"],
        "total_loss_tokens": totals["total_loss_tokens"],
        "formats": dict(sorted(formats.items())),
    }


def tokenized_totals(stats_path: Path) -> dict[str, Any]:
    """The stats JSON's tokenized totals, as `peers.py duckdb-tokenized` prints them."""
    ours = our_totals(stats_path)
    return {k: ours[k] for k in ("tokenized", "total_tokens", "total_loss_tokens")}


def scratch(args: argparse.Namespace, scale: float, what: str, tok: bool = False) -> Path:
    """Where a collect of this scale keeps its `stats` JSON or `state` (`tok`: the tokenized
    files' alone)."""
    suffix = ".json" if what == "stats" else ""
    return args.dir / f"{what}{'_tok' if tok else ''}_x{scale:g}{suffix}"


def commands(root: Path, tok: Path | None, args: argparse.Namespace, scale: float) -> Commands:
    """What each series runs: collect (cold and incremental), the peers, the tokenized alone;
    with `--baseline`, that tree's cold collects too (`base-*`, their own stats and state)."""
    collect = [*GENLEDGER, "collect", str(root), "-o", str(scratch(args, scale, "stats"))]
    collect += ["--state", str(scratch(args, scale, "state")), "-q"]
    runs = {"cold": [*collect, "--full"], "noop": collect}
    if args.baseline:
        runs["base-cold"] = [*GENLEDGER, "collect", str(root), "--full", "-q"]
        runs["base-cold"] += ["-o", str(args.dir / "stats_base.json")]
        runs["base-cold"] += ["--state", str(args.dir / "state_base")]
    runs |= {peer: [PY, str(HERE / "peers.py"), peer, str(root)] for peer in args.peers}
    if tok is not None:
        stats, state = scratch(args, scale, "stats", True), scratch(args, scale, "state", True)
        runs["tok-cold"] = [*GENLEDGER, "collect", str(tok), "-o", str(stats)]
        runs["tok-cold"] += ["--state", str(state), "-q", "--full"]
        if args.baseline:
            runs["base-tok-cold"] = [*GENLEDGER, "collect", str(tok), "--full", "-q"]
            runs["base-tok-cold"] += ["-o", str(args.dir / "stats_tok_base.json")]
            runs["base-tok-cold"] += ["--state", str(args.dir / "state_tok_base")]
        runs["tok-duckdb"] = [PY, str(HERE / "peers.py"), "duckdb-tokenized", str(tok)]
    return runs


def environment(name: str, args: argparse.Namespace) -> dict[str, str]:
    """The environment of one series: the baseline tree first on the path for `base-*`."""
    env = dict(os.environ)
    if name.startswith("base-"):
        paths = [str(args.baseline), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def mismatch(
    name: str, sample: Sample, args: argparse.Namespace, scale: float
) -> dict[str, Any] | None:
    """DuckDB's totals (or the baseline tree's) where they differ from those of our collect
    run before it in the round."""
    if name in ("base-cold", "base-tok-cold"):
        tok = name == "base-tok-cold"
        base = args.dir / ("stats_tok_base.json" if tok else "stats_base.json")
        ours, theirs = (
            (tokenized_totals(p) if tok else our_totals(p))
            for p in (scratch(args, scale, "stats", tok), base)
        )
        return None if ours == theirs else {name: theirs, "ours": ours}
    if name not in ("duckdb", "tok-duckdb"):
        return None
    tok = name == "tok-duckdb"
    stats = scratch(args, scale, "stats", tok)
    ours = tokenized_totals(stats) if tok else our_totals(stats)
    theirs = json.loads(sample.stdout)
    return None if ours == theirs else {name: theirs, "ours": ours}


def run_scale(args: argparse.Namespace, scale: float) -> dict[str, Any]:
    """Generate one corpus and measure every series on it."""
    root = args.dir / f"corpus_{args.shape}_x{scale:g}"
    print(f"\n== scale x{scale:g}: generating {args.mb * scale:.0f} MB in {root}", flush=True)
    if args.shape in REAL_SHAPES:
        shutil.rmtree(root, ignore_errors=True)
        write_real(root, args.mb * scale, args.shape, only=args.datasets)
    else:
        write_corpus(root, args.mb * scale, seed=1, shape=args.shape)
    tok = tokenized_root(root, args.dir / f"tokenized_{args.shape}_x{scale:g}")
    runs, env = commands(root, tok, args, scale), dict(os.environ)
    cold = [name for name in runs if name != "noop"]  # in order: each collect before its peer
    series = {n: Series(n) for n in (*cold, "noop", "append")}
    mismatches = []
    for rnd in range(args.repeats):
        mb = corpus_mb(root)
        for name in cold:
            # `python -m` puts the working folder first on the path: the baseline's runs start
            # in its tree, so its package is the one imported
            where = args.baseline if name.startswith("base-") else None
            sample = measure(runs[name], environment(name, args), where)
            series[name].samples.append(sample)
            tokenized = tok is not None and name.startswith(("tok-", "base-tok-"))
            series[name].mb.append(corpus_mb(tok) if tok is not None and tokenized else mb)
            print(f"  round {rnd + 1} {name:10s} {sample.seconds:6.2f} s", flush=True)
            if (found := mismatch(name, sample, args, scale)) is not None:
                mismatches.append({"round": rnd + 1, **found})
        series["noop"].samples.append(measure(runs["noop"], env))
        series["noop"].mb.append(mb)
        if args.shape in REAL_SHAPES:
            added = append_real(root, 0.01, 100 + rnd, args.shape, only=args.datasets) / 1e6
        else:
            added = append_share(root, 0.01, seed=100 + rnd, shape=args.shape) / 1e6
        series["append"].samples.append(measure(runs["noop"], env))
        series["append"].mb.append(added)
        noop, append = series["noop"].samples[-1], series["append"].samples[-1]
        print(
            f"  round {rnd + 1} noop {noop.seconds:.2f} s, +{added:.1f} MB {append.seconds:.2f} s"
        )
    real = args.shape in REAL_SHAPES
    return {
        "scale": scale,
        "mb": corpus_mb(root),
        "series": series,
        "mismatches": mismatches,
        "real": real,
    }


LABELS = {
    "cold": "genledger collect --full (cold)",
    "base-cold": "baseline tree: collect --full",
    "duckdb": "DuckDB read_json (explicit cols)",
    "orjson": "orjson.loads line loop",
    "json": "json.loads line loop",
    "tok-cold": "tokenized alone: collect --full",
    "base-tok-cold": "tokenized alone: baseline tree",
    "tok-duckdb": "tokenized alone: DuckDB query",
    "noop": "genledger collect (no-op)",
    "append": "genledger collect (+1 % appended)",
}


def ratio(peer: Series, ours: Series) -> tuple[float, float]:
    """How much faster ours is than `peer`: in wall time and in CPU seconds (medians)."""
    return peer.seconds / ours.seconds, peer.cpu_seconds / ours.cpu_seconds


def report(result: dict[str, Any]) -> list[str]:
    """The table and the targets of one scale, as lines."""
    s = result["series"]
    cold = s["cold"]
    lines = [
        f"corpus x{result['scale']:g}: {result['mb']:.0f} MB (after appends)",
        f"{'measurement':34s} {'median s':>9s} {'CPU s':>7s} {'MB/s':>8s} {'MB/CPU s':>9s} "
        f"{'peak RSS MB':>12s}",
    ]
    for key, label in LABELS.items():
        if key not in s:
            continue
        x = s[key]
        lines.append(
            f"{label:34s} {x.seconds:9.2f} {x.cpu_seconds:7.2f} {x.mb_per_s:8.0f} "
            f"{x.mb_per_cpu_s:9.0f} {x.tree_rss_mb:12.0f}"
        )
    for peer in PEERS:
        if peer not in s:
            continue
        wall, cpu = ratio(s[peer], cold)
        lines.append(f"cold collect vs {peer}: {wall:.2f}x throughput, {cpu:.2f}x in CPU s.")
        if "base-cold" in s:
            wall, cpu = ratio(s[peer], s["base-cold"])
            lines.append(f"  (baseline tree vs {peer}: {wall:.2f}x, {cpu:.2f}x in CPU s.)")
    checks = []
    if "orjson" in s and result["real"]:
        cpu = cold.cpu_seconds / s["orjson"].cpu_seconds
        checks.append(
            (f"cold CPU <= {VS_ORJSON_CPU:g}x the orjson loop's ({cpu:.2f}x; goal 0.5x)",
             cpu <= VS_ORJSON_CPU)
        )  # fmt: skip
    if "duckdb" in s:
        wall, cpu = ratio(s["duckdb"], cold)
        checks += [
            (f"cold >= {VS_DUCKDB:g}x DuckDB in wall time ({wall:.2f}x)", wall >= VS_DUCKDB),
            (f"cold >= {VS_DUCKDB:g}x DuckDB in CPU seconds ({cpu:.2f}x)", cpu >= VS_DUCKDB),
        ]
    if "tok-cold" in s:
        wall, cpu = ratio(s["tok-duckdb"], s["tok-cold"])
        lines.append(f"tokenized alone vs DuckDB: {wall:.2f}x throughput, {cpu:.2f}x in CPU s.")
        if "base-tok-cold" in s:
            bw, bc = ratio(s["tok-duckdb"], s["base-tok-cold"])
            lines.append(f"  (baseline tree: {bw:.2f}x throughput, {bc:.2f}x in CPU s.)")
        checks += [
            (f"tokenized >= {TOKENIZED_VS_DUCKDB:g}x DuckDB in wall time ({wall:.2f}x)",
             wall >= TOKENIZED_VS_DUCKDB),
            (f"tokenized >= {TOKENIZED_VS_DUCKDB:g}x DuckDB in CPU seconds ({cpu:.2f}x)",
             cpu >= TOKENIZED_VS_DUCKDB),
        ]  # fmt: skip
    beyond = (s["append"].seconds - s["noop"].seconds) / cold.seconds
    checks += [
        (f"1% append costs {beyond:.1%} of cold beyond no-op (<= 5%)", beyond <= 0.05),
        (
            f"no-op {s['noop'].seconds:.2f} s (<= {NOOP_SECONDS:g} s)",
            s["noop"].seconds <= NOOP_SECONDS,
        ),
        (f"cold peak RSS {cold.tree_rss_mb:.0f} MB (<= 300 MB)", cold.tree_rss_mb <= 300),
        ("totals equal DuckDB's (and the baseline tree's ours)", not result["mismatches"]),
    ]
    lines += [f"[{'PASS' if ok else 'FAIL'}] {text}" for text, ok in checks]
    for m in result["mismatches"]:
        lines.append(f"  mismatch: {json.dumps(m)}")
    return lines


def machine() -> str:
    """CPU model, usable cores, Python, load average."""
    model = ""
    with contextlib.suppress(OSError, StopIteration):
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    cores = len(os.sched_getaffinity(0))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    memory = psutil.virtual_memory().total / 2**30
    return (
        f"{model or platform.processor()}, {cores} cores, {memory:.0f} GiB, "
        f"Python {platform.python_version()}, load avg at start {load}"
    )


# The code a refresh generates, compiled once as an install's first runs would
# (`genledger.codecache`; a tree without it, or PYTHONDONTWRITEBYTECODE set, keeps none).
WARM = (
    "import genledger.refresh.collect, genledger.refresh.parallel, genledger.refresh.count\n"
    "from genledger import codecache\n"
    "from genledger.ledger.books import account\n"
    "account('responses'); account('tokenized'); codecache.save()"
)


def warm_code_cache() -> None:
    """Fill this tree's cache of generated code before anything is timed."""
    subprocess.run([PY, "-c", WARM], check=False, capture_output=True)


def main() -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=800.0, help="corpus size at scale 1")
    parser.add_argument("--scales", default="1", help="comma-separated, e.g. 1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-bench"))
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another genledger tree (a checkout's root) whose cold collects run in the same "
        "rounds, for before/after tables",
    )
    parser.add_argument(
        "--peers",
        type=lambda text: [p for p in text.split(",") if p],
        default=None,
        help=f"comma-separated, of {','.join(PEERS)} (DuckDB's needed for its targets); "
        "default: all, or for a real shape those that read it",
    )
    parser.add_argument(
        "--shape",
        choices=sorted([*SHAPES, *REAL_SHAPES]),
        default="reference",
        help="second: a distillation run's responses (wrapped chat, SGLang meta_info, flat "
        "/generate, Batch lines; ~1,000 completion tokens; ensure_ascii=False); tokens: three "
        "quarters tokenized samples of 2-8k ids, the rest second's responses; real: every "
        "recorded dataset of ../shared/realworld*/data, each file repeated whole; real-openai: "
        "the OpenAI chat records, ids and texts made unique (benchmarks/realcorpus.py)",
    )
    parser.add_argument(
        "--datasets",
        type=lambda text: tuple(n for n in text.split(",") if n),
        default=(),
        help="real: only these dataset folders of ../shared/realworld*/data (comma-separated)",
    )
    args = parser.parse_args()
    if args.peers is None:
        args.peers = REAL_SHAPES.get(args.shape, list(PEERS))
    args.dir.mkdir(parents=True, exist_ok=True)
    # As an installed package would be: compiled once (PYTHONDONTWRITEBYTECODE would otherwise
    # make every measured start recompile the modules).
    for tree in (HERE.parent, *([args.baseline] if args.baseline else [])):
        for package in ("genledger", "checks"):
            compileall.compile_dir(str(tree / package), quiet=1)
    warm_code_cache()
    header = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine()}"
    results = [run_scale(args, float(x)) for x in args.scales.split(",")]
    print("\n" + header)
    for result in results:
        print("\n".join(["", *report(result)]))
    if len(results) > 1:
        print("\n" + scaling(results[0], results[-1]))
    if args.json:
        args.json.write_text(
            json.dumps({"header": header, "results": [medians(r) for r in results]})
        )


def scaling(a: dict[str, Any], b: dict[str, Any]) -> str:
    """How the cold scan's time and peak RSS grow with the corpus."""
    ca, cb = a["series"]["cold"], b["series"]["cold"]
    flat = cb.tree_rss_mb <= 1.2 * ca.tree_rss_mb
    return (
        f"scaling x{a['scale']:g} -> x{b['scale']:g}: corpus {b['mb'] / a['mb']:.2f}x, "
        f"cold time {cb.seconds / ca.seconds:.2f}x, cold peak RSS "
        f"{cb.tree_rss_mb / ca.tree_rss_mb:.2f}x ({'PASS' if flat else 'FAIL'}: flat within 20 %)"
    )


def medians(result: dict[str, Any]) -> dict[str, Any]:
    """JSON-able medians of one scale."""
    series = {
        name: {
            "seconds": x.seconds,
            "cpu_seconds": x.cpu_seconds,
            "mb_per_s": x.mb_per_s,
            "tree_rss_mb": x.tree_rss_mb,
            "max_rss_mb": max(s.max_rss for s in x.samples) / 1e6,
        }
        for name, x in result["series"].items()
    }
    return {k: result[k] for k in ("scale", "mb", "mismatches")} | {"series": series}


if __name__ == "__main__":
    main()
