"""Benchmark: time to signal and Dagster's work per minute while many datasets grow at once.

    python benchmarks/live_scale.py [--datasets 10 100 300] [--trials 5] [--warmup 60]
        [--every 3] [--records 5] [--postgres] [--dir /tmp/genledger-live]

For each size, a live `dagster dev` (the project's dagster.yaml, default genledger settings,
SQLite under a temp DAGSTER_HOME; with `--postgres`, deploy/dagster.yaml against a throwaway
PostgreSQL server started for the size, as tests/e2e/postgres.py does) watches a data root
whose datasets ALL grow, each by `--records` clean records every `--every` seconds, with a
loopback webhook receiving the notifications. After `--warmup` seconds, each trial waits a
random phase (0-5 s, the file sensor's interval), appends 20 records without token counts to a
dataset not broken before and times the first webhook POST naming it. Prints the median and
worst time to signal, runs and Dagster events per minute over the trials, events per refreshed
dataset (a run's events over the datasets it refreshed: every one grows), the seconds between
refresh runs, and how long ago each growing dataset's file assets were last recorded (the
record lag).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the Dagster layer and the e2e harness, from the checkout

import dagster as dg  # noqa: E402
from dagster._core.definitions.run_request import InstigatorType  # noqa: E402

from tests.e2e.dagster_api import DagsterApi  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    GrowingWriter,
    Received,
    WebhookReceiver,
    free_port,
    start_dagster_dev,
    stop_dagster_dev,
    write_growing_tree,
)
from tests.e2e.postgres import start_postgres, stop_postgres  # noqa: E402

SENSOR_PHASE_S = 5.0  # the file sensor's default interval
BAD_RECORDS = 20
SIGNAL_TIMEOUT_S = 240.0


@dataclass
class Trial:
    """One bad append and when the webhook named its dataset."""

    dataset: str
    seconds: float


@dataclass
class Result:
    """One size's measurements."""

    datasets: int
    trials: list[Trial]
    runs_per_minute: float
    events_per_minute: float
    events_per_run: float
    events_per_dataset: float  # a run's events over the datasets it refreshed
    cycle_s: float
    sensor_ticks_s: dict[str, float]  # median seconds between ticks, by sensor
    record_lag_s: list[float]


def environment(
    base: Path, root: Path, webhook: WebhookReceiver, port: int, pg_url: str | None
) -> dict[str, str]:
    """The default settings: no genledger.toml, the project's dagster.yaml (deploy/'s with
    `pg_url`), temp paths."""
    home = base / "dagster_home"
    home.mkdir()
    instance = ROOT / "deploy" / "dagster.yaml" if pg_url else ROOT / "dagster.yaml"
    shutil.copy(instance, home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    if pg_url:
        env["DAGSTER_PG_URL"] = os.environ["DAGSTER_PG_URL"] = pg_url  # this process reads it too
    env.update(
        DAGSTER_HOME=str(home),
        GENLEDGER_DATA_ROOT=str(root),
        GENLEDGER_STATS_PATH=str(base / "out" / "stats.json"),
        GENLEDGER_STATE_DIR=str(base / "state"),
        GENLEDGER_WEBHOOK_URL=webhook.url,
        PYTHONUNBUFFERED="1",
    )
    return env


def first_alert(webhook: WebhookReceiver, dataset: str, since: float) -> Received:
    """The first webhook POST after `since` naming `dataset` (not a "resolved" one)."""
    return webhook.wait_for(
        lambda p: p.at >= since and f'"{dataset}"' in p.text() and '"alert"' in p.text(),
        SIGNAL_TIMEOUT_S,
    )


def run_size(args: argparse.Namespace, size: int, base: Path) -> Result:
    """One live instance with `size` growing datasets: warm up, then the trials."""
    rng = random.Random(size)
    root = base / "data"
    names = write_growing_tree(root, size)
    with ExitStack() as stack:
        webhook = WebhookReceiver()
        webhook.thread.start()
        stack.callback(webhook.server.shutdown)
        port = free_port()
        pg_url = None
        if args.postgres:
            server = start_postgres(free_port())
            stack.callback(stop_postgres, server)
            pg_url = server.url
        env = environment(base, root, webhook, port, pg_url)
        dev = start_dagster_dev(port, env, base / "dagster-dev.log")
        stack.callback(stop_dagster_dev, dev)
        DagsterApi(dev).wait_until_loaded()
        writer = GrowingWriter(root, names, args.records, args.every)
        writer.start()
        stack.callback(writer.halt.set)
        time.sleep(args.warmup)
        window_start = time.time()
        trials = []
        for dataset in rng.sample(names, args.trials):
            time.sleep(rng.uniform(0, SENSOR_PHASE_S))
            appended = writer.break_dataset(dataset, BAD_RECORDS)
            alert = first_alert(webhook, dataset, appended)
            trials.append(Trial(dataset, alert.at - appended))
            print(f"  {size} datasets: {dataset} signalled in {trials[-1].seconds:.1f} s")
        window_end = time.time()
        with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
            return measure(instance, size, trials, window_start, window_end, names)


def measure(
    instance: dg.DagsterInstance,
    size: int,
    trials: list[Trial],
    start: float,
    end: float,
    names: list[str],
) -> Result:
    """Runs and events created within [start, end], the refresh cycle, the record lag."""
    runs = [
        r
        for r in instance.get_runs(filters=dg.RunsFilter(created_after=_utc(start)))
        if r.job_name and _created(instance, r.run_id) <= end
    ]
    events = sum(len(instance.get_records_for_run(r.run_id, limit=10**6).records) for r in runs)
    minutes = (end - start) / 60
    starts = sorted(_created(instance, r.run_id) for r in runs)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    now = time.time()
    lag = dict.fromkeys(names, float("inf"))  # never recorded
    keys = [dg.AssetKey([name, "raw_responses"]) for name in names]
    for record in instance.get_asset_records(keys):
        latest = record.asset_entry.last_materialization_record
        if latest is not None:
            lag[record.asset_entry.asset_key.path[0]] = now - latest.timestamp
    return Result(
        datasets=size,
        trials=trials,
        runs_per_minute=len(runs) / minutes,
        events_per_minute=events / minutes,
        events_per_run=events / max(1, len(runs)),
        events_per_dataset=events / max(1, len(runs)) / size,
        cycle_s=statistics.median(gaps) if gaps else float("nan"),
        sensor_ticks_s=tick_spacing(instance, start, end),
        record_lag_s=sorted(lag.values()),
    )


def tick_spacing(instance: dg.DagsterInstance, start: float, end: float) -> dict[str, float]:
    """Median seconds between the ticks of each sensor within [start, end] (the daemon
    evaluates them one after another, so one slow sensor spaces the others)."""
    spacing = {}
    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, end, start)
        times = sorted(t.timestamp for t in ticks)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        if gaps:
            spacing[state.instigator_name] = statistics.median(gaps)
    return spacing


def _utc(ts: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC)


def _created(instance: dg.DagsterInstance, run_id: str) -> float:
    record = instance.get_run_record_by_id(run_id)
    assert record is not None
    return record.create_timestamp.timestamp()


def report(result: Result) -> str:
    """One line of results for a size."""
    seconds = [t.seconds for t in result.trials]
    lag = [s for s in result.record_lag_s if s != float("inf")]
    never = len(result.record_lag_s) - len(lag)
    return (
        f"{result.datasets:4d} growing datasets: time to signal median "
        f"{statistics.median(seconds):5.1f} s, worst {max(seconds):5.1f} s "
        f"({', '.join(f'{s:.1f}' for s in seconds)}); {result.runs_per_minute:4.1f} runs/min, "
        f"{result.events_per_minute:6.0f} events/min ({result.events_per_run:.0f} a run, "
        f"{result.events_per_dataset:.2f} a refreshed dataset), "
        f"a refresh run every {result.cycle_s:.1f} s; record lag median "
        f"{statistics.median(lag or [0]):.0f} s, max {max(lag or [0]):.0f} s, "
        f"{never} never recorded; sensors tick every "
        + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(result.sensor_ticks_s.items()))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--warmup", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=3.0)
    parser.add_argument("--records", type=int, default=5)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL, not SQLite")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="genledger-live-"))
    print(
        f"default settings, {'PostgreSQL' if args.postgres else 'SQLite'}; every dataset gains "
        f"{args.records} records every {args.every} s; {args.trials} trials a size; {base}"
    )
    results = []
    for size in args.datasets:
        folder = base / f"n{size}"
        folder.mkdir(parents=True)
        results.append(run_size(args, size, folder))
        print(report(results[-1]), flush=True)
    print("\n".join(report(r) for r in results))


if __name__ == "__main__":
    main()
