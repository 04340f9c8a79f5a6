"""What the e2e suites expect: the engine's own numbers for the live tree, and run overlaps.

Shared by the `dagster dev` suite and the production-topology suite.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from genledger.config import Config
from genledger.refresh.collect import refresh
from genledger.rules.catalogue import RULES_BY_NAME

from .dagster_api import CheckResult, DagsterApi
from .harness import Received, read_stats

STATS_KEY: tuple[str, ...] = ("stats_json",)


def engine_stats(data_root: Path, scratch: Path) -> dict[str, Any]:
    """The stats `genledger collect` computes for the same tree (our expectation)."""
    config = Config(data_root=data_root, stats_path=scratch / "stats.json", state_dir=scratch)
    return refresh(config, full=True).stats


def expected_failures(dataset_stats: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """Check family -> (severity, failure count) the engine's failures imply for a dataset."""
    families: dict[str, tuple[str, int]] = {}
    for failure in dataset_stats["quality"]["failures"]:
        family = RULES_BY_NAME[failure["check"]].family
        severity, count = families.get(family, ("WARN", 0))
        if failure["severity"] == "error":
            severity = "ERROR"
        families[family] = (severity, count + failure["count"])
    return families


def by_dataset(results: list[CheckResult]) -> dict[str, list[CheckResult]]:
    """File-asset check results grouped by the dataset key (the asset key's first part)."""
    grouped: dict[str, list[CheckResult]] = defaultdict(list)
    for result in results:
        if result.asset != STATS_KEY:
            grouped[result.asset[0]].append(result)
    return grouped


def stats_now(api: DagsterApi) -> dict[str, Any]:
    """The stats JSON the code location wrote (it must exist by now)."""
    stats = read_stats(api.dev.stats_path)
    assert stats is not None, f"no stats JSON at {api.dev.stats_path}"
    return stats


def names(dataset: str, post: Received) -> bool:
    """Whether a webhook POST names the dataset."""
    return dataset in post.text()


def overlapping_runs(api: DagsterApi) -> list[str]:
    """Pairs of runs that overlapped on a dataset, described; fails if too few runs to tell."""
    datasets = {k[0] for k in api.asset_groups() if k != STATS_KEY}
    spans: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for run in api.runs():
        if not run["startTime"]:
            continue
        # A run of stats_json refreshes the whole root and may record any dataset.
        everything = not run["keys"] or STATS_KEY in run["keys"]
        covered = datasets if everything else {k[0] for k in run["keys"]}
        for dataset in covered:
            spans[dataset].append((run["startTime"], run["endTime"] or time.time(), run["runId"]))
    assert len(spans) >= 2, "too few dataset runs to compare"
    overlaps = []
    for dataset, intervals in sorted(spans.items()):
        intervals.sort()
        for (_, end, run_a), (start, _, run_b) in itertools.pairwise(intervals):
            if start < end:
                overlaps.append(f"{dataset}: run {run_b[:8]} started before {run_a[:8]} ended")
    return overlaps
