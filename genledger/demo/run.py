"""`genledger demo`: lay out a simulated run, keep it growing, serve the Dagster UI on it.

Everything started here (the writer thread, `dagster dev` in its own process group) is stopped
on Ctrl-C (SIGINT) or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from genledger.config import ENV_DATA_ROOT, ENV_STATE_DIR, ENV_STATS_PATH, Config
from genledger.demo.writer import DemoWriter, demo_plan

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STOP_GRACE_S = 20.0


@dataclass(frozen=True)
class DemoPaths:
    """Where the demo keeps its data, stats, state and Dagster instance."""

    base: Path

    @property
    def data(self) -> Path:
        """The data root the writer fills."""
        return self.base / "data"

    @property
    def stats(self) -> Path:
        """The stats JSON."""
        return self.base / "stats.json"

    @property
    def state(self) -> Path:
        """genledger's checkpoints."""
        return self.base / "state"

    @property
    def dagster_home(self) -> Path:
        """DAGSTER_HOME, with the project's dagster.yaml."""
        return self.base / "dagster_home"

    def env(self) -> dict[str, str]:
        """The environment variables that point genledger and Dagster here."""
        return {
            ENV_DATA_ROOT: str(self.data),
            ENV_STATS_PATH: str(self.stats),
            ENV_STATE_DIR: str(self.state),
            "DAGSTER_HOME": str(self.dagster_home),
        }


def prepare(paths: DemoPaths, writer: DemoWriter) -> None:
    """Create the data root with its first records and a DAGSTER_HOME with dagster.yaml."""
    paths.data.mkdir(parents=True, exist_ok=True)
    writer.setup()
    paths.dagster_home.mkdir(parents=True, exist_ok=True)
    instance_yaml = PROJECT_ROOT / "dagster.yaml"
    if instance_yaml.is_file():
        shutil.copy(instance_yaml, paths.dagster_home / "dagster.yaml")


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def start_dagster(paths: DemoPaths, port: int) -> subprocess.Popen[bytes]:
    """`dagster dev` on 127.0.0.1:port in its own process group, from the project root."""
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    return subprocess.Popen(
        command, cwd=PROJECT_ROOT, env={**os.environ, **paths.env()}, start_new_session=True
    )


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`."""
    import psutil

    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the process group of `proc` (run workers too), SIGKILL what outlives `grace_s`."""
    pgid = proc.pid  # start_new_session made it the group leader
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    # dagster dev may exit before the runs it launched: they share its group.
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    _signal_group(pgid, signal.SIGKILL)
    proc.wait()


def collect_loop(paths: DemoPaths, stop: threading.Event, interval_s: float) -> None:
    """`--no-ui`: refresh the stats JSON every `interval_s` and print the summary."""
    from genledger.ledger.summary import render
    from genledger.refresh.collect import refresh

    config = Config(data_root=paths.data, stats_path=paths.stats, state_dir=paths.state)
    while not stop.is_set():
        print(render(refresh(config).stats), flush=True)
        stop.wait(interval_s)


def demo_command(args: argparse.Namespace) -> int:
    """Run the demo until Ctrl-C; 0 on a clean stop, 2 if `dagster dev` could not run."""
    created = args.dir is None
    base = Path(tempfile.mkdtemp(prefix="genledger-demo-")) if created else args.dir
    paths = DemoPaths(base)
    writer = DemoWriter(paths.data, demo_plan(args.records), seed=args.seed)
    prepare(paths, writer)
    stop = threading.Event()
    thread = threading.Thread(target=writer.run, args=(stop, args.rate), daemon=True)
    print(f"genledger demo: simulated run in {paths.data}", flush=True)
    for name, value in paths.env().items():
        print(f"  {name}={value}", flush=True)
    status = 0
    with _stop_on_signals(stop):
        thread.start()
        try:
            if args.no_ui:
                collect_loop(paths, stop, args.collect_interval)
            else:
                status = _serve(paths, args.port, stop)
        finally:
            stop.set()
            thread.join(timeout=5)
            if created and not args.keep:
                shutil.rmtree(base, ignore_errors=True)
    return status


def _serve(paths: DemoPaths, port: int, stop: threading.Event) -> int:
    proc = start_dagster(paths, port)
    print(f"genledger demo: Dagster UI at http://127.0.0.1:{port} (Ctrl-C stops)", flush=True)
    try:
        while not stop.wait(0.5):
            if proc.poll() is not None:
                print(f"genledger demo: dagster dev exited ({proc.returncode})", file=sys.stderr)
                return 2
        return 0
    finally:
        stop_group(proc)
