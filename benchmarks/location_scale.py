"""Benchmark: what one asset per dataset costs the code location at 100, 300 and 1,000 datasets.

    python benchmarks/location_scale.py [--datasets 100 300 1000] [--repeats 3]
        [--dir /tmp/genledger-location]

Per size, on a data root of that many datasets (10 records each), medians of `--repeats`:
- `import definitions` in a fresh interpreter (what every run's process and the code server
  pay before anything else) and `dagster definitions validate -w workspace.yaml`;
- one file-sensor tick (nothing changed; a tenth of the datasets grew), in process;
- one run of the refresh job in process (SQLite), every dataset grown, with the default
  `dagster.record_seconds`;
- the Dagster UI's asset list: the webserver (`dagster-webserver -w workspace.yaml`) answering
  the GraphQL queries the asset catalog page sends (`AssetCatalogTableQuery` for the list,
  `AssetHealthQuery` for the status of every row), read from the installed UI bundle.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the Dagster layer and the e2e harness, from the checkout

import dagster as dg  # noqa: E402
import dagster_webserver  # noqa: E402
import requests  # noqa: E402

from tests.e2e.harness import (  # noqa: E402
    clean_lines,
    free_port,
    start_dagster_process,
    stop_dagster_dev,
    wait_for,
    write_growing_tree,
)

VENV_BIN = Path(sys.executable).parent
UI_QUERIES = ("AssetCatalogTableQuery", "AssetHealthQuery")


def median_of(repeats: int, measure: Callable[[], float]) -> float:
    """The median of `repeats` measurements."""
    return statistics.median(measure() for _ in range(repeats))


def timed_process(cmd: list[str], env: dict[str, str]) -> float:
    """Seconds a command takes from the project root (it must succeed)."""
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def environment(base: Path, root: Path) -> dict[str, str]:
    """The default settings over `root`, with paths under `base`."""
    home = base / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    env.update(
        DAGSTER_HOME=str(home),
        GENLEDGER_DATA_ROOT=str(root),
        GENLEDGER_STATS_PATH=str(base / "stats.json"),
        GENLEDGER_STATE_DIR=str(base / "state"),
    )
    return env


def grow(root: Path, names: list[str], rng: random.Random) -> None:
    """Five clean records more in each named dataset."""
    for name in names:
        with (root / name / "raw_responses.jsonl").open("ab") as handle:
            handle.write(clean_lines(name, 5, rng))


def in_process(env: dict[str, str], root: Path, names: list[str], repeats: int) -> dict[str, float]:
    """A sensor tick and a refresh run, in this process, against the size's instance."""
    os.environ.update(env)
    from assets.refresh_job import REFRESH_JOB
    from assets.spec import load_location
    from automation.sensors import build_file_sensor
    from definitions import build_defs

    rng = random.Random(1)
    location = load_location()
    sensor = build_file_sensor(location)
    job = build_defs(location).resolve_job_def(REFRESH_JOB)
    out: dict[str, float] = {}
    with dg.DagsterInstance.get() as instance:

        def tick(cursor: str | None) -> tuple[float, str | None]:
            started = time.perf_counter()
            result = sensor(dg.build_sensor_context(instance=instance, cursor=cursor))
            assert isinstance(result, dg.SensorResult)
            return time.perf_counter() - started, result.cursor

        _, cursor = tick(None)
        out["sensor tick, nothing changed"] = median_of(repeats, lambda: tick(cursor)[0])

        def grown_tick() -> float:
            grow(root, names[: max(1, len(names) // 10)], rng)
            return tick(cursor)[0]

        out["sensor tick, a tenth grew"] = median_of(repeats, grown_tick)

        def refresh_run() -> float:
            grow(root, names, rng)
            started = time.perf_counter()
            result = job.execute_in_process(
                instance=instance,
                run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
            )
            assert result.success
            return time.perf_counter() - started

        out["refresh run (all grew), in process"] = median_of(repeats, refresh_run)
    return out


def ui_query(name: str) -> str:
    """A query of the installed Dagster UI, with the fragments it uses."""
    chunks = Path(dagster_webserver.__file__).parent / "webapp/build/_next/static/chunks"
    found: dict[str, str] = {}
    head = re.compile(r"(?:query|fragment) (\w+)[^{]*\{")
    for chunk in chunks.glob("*.js"):
        text = chunk.read_text(errors="replace").replace("\\n", "\n")
        for match in head.finditer(text):
            end = _closing_brace(text, match.end())
            if end is not None:
                found.setdefault(match.group(1), text[match.start() : end])
    wanted, parts, seen = [name], [], set()
    while wanted:
        part = wanted.pop()
        if part not in seen:
            seen.add(part)
            parts.append(found[part])
            wanted += re.findall(r"\.\.\.(\w+)", found[part])
    return "\n".join(parts)


def _closing_brace(text: str, start: int) -> int | None:
    depth = 1
    for index in range(start, min(len(text), start + 20_000)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        elif char in '"`':
            return None
    return None


def webserver_queries(env: dict[str, str], base: Path, keys: list[list[str]], repeats: int):
    """Seconds the webserver takes to answer the asset catalog's queries, once loaded."""
    port = free_port()
    cmd = ["dagster-webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    web = start_dagster_process(cmd, port, env, base / "webserver.log")
    out: dict[str, float] = {}
    try:
        url = f"http://127.0.0.1:{port}/graphql"
        started = time.perf_counter()
        wait_for(lambda: _loaded(url), 900, "the webserver to load the location", every=1.0)
        out["webserver start until the location is loaded"] = time.perf_counter() - started
        variables: dict[str, dict[str, Any]] = {
            "AssetCatalogTableQuery": {"limit": 100_000},
            "AssetHealthQuery": {"assetKeys": [{"path": key} for key in keys]},
        }
        for name in UI_QUERIES:
            text = ui_query(name)

            def ask(text: str = text, name: str = name) -> float:
                began = time.perf_counter()
                answer = requests.post(
                    url, json={"query": text, "variables": variables[name]}, timeout=900
                )
                answer.raise_for_status()
                assert not answer.json().get("errors"), answer.json()["errors"][:1]
                return time.perf_counter() - began

            out[f"UI {name} ({len(keys)} assets)"] = median_of(repeats, ask)
    finally:
        stop_dagster_dev(web)
    return out


def _loaded(url: str) -> bool:
    query = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
    try:
        data = requests.post(url, json={"query": query}, timeout=30).json()["data"]
    except (requests.RequestException, ValueError, KeyError, TypeError):
        return False
    entries = data["workspaceOrError"]["locationEntries"]
    return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


def run_size(size: int, base: Path, repeats: int) -> dict[str, float]:
    """Every measurement at one size."""
    root = base / "data"
    names = write_growing_tree(root, size)
    env = environment(base, root)
    python = str(VENV_BIN / "python")
    out = {
        "import definitions (fresh interpreter)": median_of(
            repeats, lambda: timed_process([python, "-c", "import definitions"], env)
        ),
        "dagster definitions validate": median_of(
            repeats,
            lambda: timed_process(
                [str(VENV_BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
                env,
            ),
        ),
    }
    keys = [[name, "raw_responses"] for name in names] + [["stats_json"]]
    out.update(webserver_queries(env, base, keys, repeats))
    out.update(in_process(env, root, names, repeats))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="genledger-location-"))
    print(f"medians of {args.repeats}; SQLite; {base}")
    results = {}
    for size in args.datasets:
        folder = base / f"n{size}"
        folder.mkdir(parents=True)
        # Each size in its own process: the location is loaded once per interpreter.
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(size), str(folder), str(args.repeats)],
            capture_output=True,
            text=True,
            check=True,
        )
        results[size] = done.stdout.strip().splitlines()[-1]
        print(f"{size} datasets: {results[size]}", flush=True)


def one(size: int, folder: Path, repeats: int) -> None:
    """Measure one size and print one line of `name: seconds` pairs."""
    out = run_size(size, folder, repeats)
    print("; ".join(f"{name} {seconds:.2f} s" for name, seconds in out.items()))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        one(int(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
