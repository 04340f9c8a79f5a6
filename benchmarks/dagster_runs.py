"""Benchmark: a scheduled Dagster run costs what changed, not how many datasets there are.

    python benchmarks/dagster_runs.py [--datasets 150] [--changed 10] [--records 50]
        [--repeats 5] [--executor in_process|multiprocess] [--dir /tmp/genledger-dagster-bench]
    DAGSTER_PG_URL=postgresql://... python benchmarks/dagster_runs.py --datasets 300 \
        --changed 300 --repeats 1 --executor multiprocess     # every dataset changed

For each tree (`--datasets` datasets, and only `--changed` datasets), materialise everything
once, then per round append records to `--changed` datasets and time the schedule's tick plus
the run it requests (a refresh run of `stats_json`, which records the changed datasets; here
with `dagster.record_seconds` long enough to record them all), executed in process against a
Dagster instance (SQLite in a temp DAGSTER_HOME; PostgreSQL when DAGSTER_PG_URL is set, through
deploy/dagster.yaml's storage). Prints seconds (median of rounds), Dagster events per recorded
dataset by type, the ratio of the two trees (target <= 2x) and, for comparison, a run of
everything (every dataset's own step, what a "Materialize all" does).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the Dagster layer is loaded from the checkout

import dagster as dg  # noqa: E402
from dagster._core.definitions.reconstruct import ReconstructableRepository  # noqa: E402

from assets.refresh_job import REFRESH_JOB  # noqa: E402
from assets.spec import load_location  # noqa: E402
from automation.schedule import build_refresh_schedule  # noqa: E402
from genledger.synth.records import flat, line  # noqa: E402

STATS = dg.AssetKey("stats_json")
ASSET_JOB = "__ASSET_JOB"
ENV_EXECUTOR = "GENLEDGER_BENCH_EXECUTOR"
# Events still go to the event log; only the console copy (slow, noisy) is silenced.
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@dataclass
class Round:
    """One measured run: seconds (tick + run), datasets refreshed, events by type."""

    seconds: float
    datasets: int
    events: Counter[str]


def write_tree(root: Path, datasets: int, records: int, rng: random.Random) -> list[str]:
    """`datasets` folders of `records` clean flat records each; returns their names."""
    names = [f"ds_{i:03d}" for i in range(datasets)]
    for name in names:
        folder = root / name
        folder.mkdir(parents=True)
        append(folder, records, rng)
    return names


def append(folder: Path, records: int, rng: random.Random) -> None:
    """Append clean records to a dataset's responses file."""
    lines = [
        line(flat(f"{folder.name}-{rng.random()}", 20, rng.randint(5, 60), rng))
        for _ in range(records)
    ]
    with (folder / "raw_responses.jsonl").open("ab") as handle:
        handle.write(b"".join(lines))


def instance_for(home: Path) -> dg.DagsterInstance:
    """A Dagster instance in `home`: deploy/dagster.yaml's PostgreSQL if DAGSTER_PG_URL is set."""
    home.mkdir(parents=True, exist_ok=True)
    if os.environ.get("DAGSTER_PG_URL"):
        (home / "dagster.yaml").write_text((ROOT / "deploy" / "dagster.yaml").read_text())
    else:
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def run_schedule_tick(defs: dg.Definitions, location: Any, instance: dg.DagsterInstance) -> Round:
    """Evaluate the schedule once and execute the run it requests, in process."""
    started = time.perf_counter()
    schedule = build_refresh_schedule(location)
    data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
    (request,) = data.run_requests or []
    return execute(defs, instance, None, request.tags, started)


def execute(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    selection: list[dg.AssetKey] | None,
    tags: dict[str, str],
    started: float,
) -> Round:
    """Run the refresh job (`selection` None) or the asset job over `selection`, and count
    what it wrote to the event log."""
    name = REFRESH_JOB if selection is None else ASSET_JOB
    if os.environ.get(ENV_EXECUTOR) == "multiprocess":
        # Out of process, so the location's executor (genledger.toml) runs the steps.
        job = ReconstructableRepository.for_module(
            "definitions", "defs", working_directory=str(ROOT)
        ).get_reconstructable_job(name)
        with dg.execute_job(
            job, instance, run_config=QUIET, tags=tags, asset_selection=selection
        ) as result:
            success, run_id = result.success, result.run_id
    else:
        in_process = defs.resolve_job_def(name).execute_in_process(
            run_config=QUIET, instance=instance, asset_selection=selection, tags=tags
        )
        success, run_id = in_process.success, in_process.run_id
    seconds = time.perf_counter() - started
    assert success
    records = instance.get_records_for_run(run_id, limit=1_000_000).records
    events = Counter(
        r.event_log_entry.dagster_event_type.value
        if r.event_log_entry.dagster_event_type
        else "LOG_MESSAGE"
        for r in records
    )
    recorded = {
        r.event_log_entry.dagster_event.asset_key
        for r in records
        if r.event_log_entry.dagster_event is not None
        and r.event_log_entry.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
    }
    datasets = len({key.path[0] for key in recorded if key is not None and key != STATS})
    return Round(seconds, datasets, events)


@dataclass
class Tree:
    """One data root with its location, definitions and instance, materialised once."""

    size: int
    root: Path
    names: list[str]
    location: Any
    defs: dg.Definitions
    instance: dg.DagsterInstance
    first: Round


def set_up(base: Path, datasets: int, records: int, stack: ExitStack) -> Tree:
    """Write the tree, load its location and materialise everything (the first schedule tick)."""
    rng = random.Random(datasets)
    root = base / f"tree_{datasets}"
    names = write_tree(root, datasets, records, rng)
    config = base / f"genledger_{datasets}.toml"
    executor = os.environ.get(ENV_EXECUTOR, "in_process")
    config.write_text(f'[dagster]\nexecutor = "{executor}"\nrecord_seconds = 3600\n')
    os.environ.update(
        GENLEDGER_DATA_ROOT=str(root),
        GENLEDGER_STATS_PATH=str(base / f"stats_{datasets}.json"),
        GENLEDGER_STATE_DIR=str(base / f"state_{datasets}"),
        GENLEDGER_CONFIG=str(config),
    )
    from definitions import build_defs  # after the environment names this tree

    location = load_location()
    defs = build_defs(location)
    instance = stack.enter_context(instance_for(base / f"home_{datasets}"))
    first = run_schedule_tick(defs, location, instance)  # nothing materialised: everything
    return Tree(datasets, root, names, location, defs, instance, first)


def changed_round(tree: Tree, changed: int, rng: random.Random) -> Round:
    """Append to the first `changed` datasets, then time the schedule's tick and run."""
    for name in tree.names[:changed]:
        append(tree.root / name, 5, rng)
    return run_schedule_tick(tree.defs, tree.location, tree.instance)


def everything_round(tree: Tree, changed: int, rng: random.Random) -> Round:
    """The same appends, then a run of every asset (what the schedule requested before)."""
    for name in tree.names[:changed]:
        append(tree.root / name, 5, rng)
    keys = [k for spec in tree.location.specs for k in spec.asset_keys]
    return execute(tree.defs, tree.instance, [*keys, STATS], {}, time.perf_counter())


def per_dataset(round_: Round) -> float:
    """Events per recorded dataset (the run's and the stats_json step's share included)."""
    return sum(round_.events.values()) / max(1, round_.datasets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=150)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--executor", choices=["in_process", "multiprocess"], default="in_process")
    args = parser.parse_args()
    os.environ[ENV_EXECUTOR] = args.executor
    base = Path(args.dir or tempfile.mkdtemp(prefix="genledger-dagster-bench-"))
    os.environ["DAGSTER_HOME"] = str(base)  # nothing of ours lands in a real DAGSTER_HOME
    storage = "PostgreSQL" if os.environ.get("DAGSTER_PG_URL") else "SQLite"
    print(
        f"storage {storage}; executor {args.executor}; {args.records} records a dataset; "
        f"{args.repeats} rounds; {base}"
    )
    rng = random.Random(0)
    with ExitStack() as stack:
        sizes = dict.fromkeys((args.datasets, args.changed))  # one tree when all changed
        trees = [set_up(base, n, args.records, stack) for n in sizes]
        rounds: dict[int, list[Round]] = {tree.size: [] for tree in trees}
        for _ in range(args.repeats):  # alternating, so machine load hits both trees alike
            for tree in trees:
                rounds[tree.size].append(changed_round(tree, args.changed, rng))
        everything = {
            tree.size: everything_round(tree, args.changed, rng)
            for tree in trees
            if tree.size > args.changed  # else the rounds already ran everything
        }
    medians = {size: statistics.median(r.seconds for r in rs) for size, rs in rounds.items()}
    for tree in trees:
        last = rounds[tree.size][-1]
        full = everything.get(tree.size, last)
        print(
            f"{tree.size:4d} datasets, {args.changed} changed: scheduled run "
            f"{medians[tree.size]:6.2f} s median "
            f"({', '.join(f'{r.seconds:.2f}' for r in rounds[tree.size])}), "
            f"{last.datasets} recorded, {per_dataset(last):.1f} events a recorded dataset, "
            f"{sum(last.events.values()) / tree.size:.1f} a dataset of the tree; "
            f"run of everything {full.seconds:.2f} s, {per_dataset(full):.1f} events a dataset"
        )
    if len(trees) > 1:
        ratio = medians[args.datasets] / medians[args.changed]
        print(f"ratio {args.datasets} vs {args.changed} datasets: {ratio:.2f}x (target <= 2x)")
    last = rounds[args.changed][-1]
    print("events of one scheduled run by type:", json.dumps(dict(last.events.most_common())))


if __name__ == "__main__":
    main()
