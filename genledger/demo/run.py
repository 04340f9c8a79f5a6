"""`genledger demo`: lay out a simulated run, keep it growing, serve the Dagster UI on it.

The terminal shows only genledger's lines (paths, the UI address, one summary per rewrite of
the stats JSON); Dagster's own output goes to a log file. Everything started here (the writer
thread, `dagster dev` in its own session) is stopped on Ctrl-C (SIGINT) or SIGTERM, and the
demo then says goodbye in one line and exits 0: stopping is how a demo ends, not a failure.
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

from genledger.config import (
    ENV_CONFIG,
    ENV_DATA_ROOT,
    ENV_STATE_DIR,
    ENV_STATS_PATH,
    Config,
    HealthSettings,
)
from genledger.demo.watch import StatsWatch
from genledger.demo.workspace import Workspace, WorkspaceError, find_workspace
from genledger.demo.writer import DEMO_WINDOW, DemoWriter, demo_plan

EXIT_USAGE = 2
STOP_GRACE_S = 20.0
DRAIN_S = 15.0  # a run in progress takes seconds: let it finish rather than interrupt it
POLL_S = 0.5
PREFIX = "genledger demo:"
# SIGHUP too: a closed terminal must not leave `dagster dev` (another session) running.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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
        """DAGSTER_HOME, with the workspace's dagster.yaml."""
        return self.base / "dagster_home"

    @property
    def config(self) -> Path:
        """The genledger.toml written for `--refresh`."""
        return self.base / "genledger.toml"

    def env(self) -> dict[str, str]:
        """The environment variables that point genledger and Dagster here."""
        return {
            ENV_DATA_ROOT: str(self.data),
            ENV_STATS_PATH: str(self.stats),
            ENV_STATE_DIR: str(self.state),
            "DAGSTER_HOME": str(self.dagster_home),
        }


def default_log(base: Path, created: bool) -> Path:
    """Dagster's log: beside a temp run (so it outlives the run's removal), else inside it."""
    return base.with_name(f"{base.name}-dagster.log") if created else base / "dagster.log"


def prepare(
    paths: DemoPaths,
    writer: DemoWriter,
    refresh_s: int | None = None,
    instance: Path | None = None,
) -> None:
    """Create the data root with its first records and a DAGSTER_HOME (with a copy of the
    `instance` settings, the workspace's dagster.yaml, if given).

    With `refresh_s`, also a genledger.toml setting the sensor's interval to it.
    """
    paths.data.mkdir(parents=True, exist_ok=True)
    writer.setup()
    paths.dagster_home.mkdir(parents=True, exist_ok=True)
    if instance is not None:
        shutil.copy(instance, paths.dagster_home / "dagster.yaml")
    settings = f"[health]\nwindow = {DEMO_WINDOW}\n"  # drift shows within the demo's run
    if refresh_s is not None:
        settings += f"[dagster]\nsensor_interval_s = {refresh_s}\n"
        paths.config.write_text(settings)
    else:
        paths.config.with_name(OWN_CONFIG).write_text(settings)


OWN_CONFIG = "genledger.demo.toml"  # the demo's settings, used when the user has none


def dagster_env(paths: DemoPaths) -> dict[str, str]:
    """The environment of `dagster dev`: ours, pointed at the demo (and its config: the
    `--refresh` one, else the user's `GENLEDGER_CONFIG`, else the demo's own settings)."""
    env = {**os.environ, **paths.env()}
    own = paths.config.with_name(OWN_CONFIG)
    if paths.config.is_file():
        env[ENV_CONFIG] = str(paths.config)
    elif not env.get(ENV_CONFIG) and own.is_file():
        env[ENV_CONFIG] = str(own)
    return env


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def start_dagster(
    paths: DemoPaths, port: int, log: Path, workspace: Workspace
) -> subprocess.Popen[bytes]:
    """`dagster dev` of `workspace` on 127.0.0.1:port in its own session, from its folder.

    Its own session keeps the terminal's Ctrl-C away from Dagster's processes (run workers
    would die mid-run with a traceback): the demo alone gets it and stops them in order.
    Everything they print (webserver, daemon, code server, runs) is appended to `log`.
    """
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-w", str(workspace.path), "-h", "127.0.0.1", "-p", str(port)]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        return subprocess.Popen(
            command,
            cwd=workspace.folder,
            env=dagster_env(paths),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
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


def _wait_group(pgid: int, seconds: float) -> bool:
    """Wait up to `seconds` for group `pgid` to empty; True if it did."""
    deadline = time.monotonic() + seconds
    while group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def stop_group(
    proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S, drain_s: float = DRAIN_S
) -> None:
    """Stop `proc` and its process group in order, leaving nothing behind.

    1. SIGTERM the leader alone: `dagster dev` shuts its webserver, daemon and code server down.
    2. Let the runs already going (same group, orphaned now) finish, up to `drain_s`: a SIGTERM
       would interrupt them mid-step (DagsterExecutionInterruptedError, run marked failed).
    3. SIGTERM the group, then SIGKILL whatever outlives `grace_s`.
    """
    pgid = proc.pid  # start_new_session made it the group leader
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    if not _wait_group(pgid, drain_s):
        _signal_group(pgid, signal.SIGTERM)
        if not _wait_group(pgid, grace_s):
            _signal_group(pgid, signal.SIGKILL)
            _wait_group(pgid, grace_s)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)


def say(text: str) -> None:
    """One line of the demo's own on stdout."""
    # After a SIGHUP or a closed pipe there is no one to tell, but everything must still stop.
    with contextlib.suppress(OSError):
        print(f"{PREFIX} {text}", flush=True)


def collect_loop(paths: DemoPaths, stop: threading.Event, interval_s: float) -> None:
    """`--no-ui`: refresh the stats JSON every `interval_s` and print the summary."""
    from genledger.ledger.summary import render
    from genledger.refresh.collect import refresh

    config = Config(
        data_root=paths.data,
        stats_path=paths.stats,
        state_dir=paths.state,
        health=HealthSettings(window=DEMO_WINDOW),
    )
    while not stop.is_set():
        print(render(refresh(config).stats), flush=True)
        stop.wait(interval_s)


def demo_command(args: argparse.Namespace) -> int:
    """Run the demo until Ctrl-C or SIGTERM; 0 on a clean stop, 2 if no workspace was found
    or `dagster dev` failed."""
    try:
        workspace = None if args.no_ui else find_workspace(args.workspace)
    except WorkspaceError as exc:
        print(f"{PREFIX} {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    stop = threading.Event()
    # Installed first, so a Ctrl-C at any moment (start-up, shutdown) ends in the goodbye.
    with _stop_on_signals(stop):
        created = args.dir is None
        base = Path(tempfile.mkdtemp(prefix="genledger-demo-")) if created else args.dir
        log = None if args.no_ui else (args.log or default_log(base, created))
        try:
            status = _run(args, DemoPaths(base), log, stop, workspace)
        finally:
            if created and not args.keep:
                shutil.rmtree(base, ignore_errors=True)
        say(f"stopped; Dagster's log is kept in {log}" if log else "stopped")
    return status


def _run(
    args: argparse.Namespace,
    paths: DemoPaths,
    log: Path | None,
    stop: threading.Event,
    workspace: Workspace | None,
) -> int:
    writer = DemoWriter(paths.data, demo_plan(args.records), seed=args.seed)
    prepare(paths, writer, args.refresh, workspace.instance if workspace else None)
    thread = threading.Thread(target=writer.run, args=(stop, args.rate), daemon=True)
    say(f"simulated run in {paths.data}")
    for name, value in paths.env().items():
        print(f"  {name}={value}", flush=True)
    thread.start()
    try:
        if stop.is_set():  # Ctrl-C during the set-up: start nothing more
            return 0
        if log is None or workspace is None:
            collect_loop(paths, stop, args.collect_interval)
            return 0
        return _serve(paths, args.port, log, stop, workspace)
    finally:
        stop.set()
        thread.join(timeout=5)


def _serve(
    paths: DemoPaths, port: int, log: Path, stop: threading.Event, workspace: Workspace
) -> int:
    from genledger.ledger.summary import refresh_line

    say(f"Dagster workspace {workspace.path}")
    say(f"Dagster's log (webserver, daemon, runs) goes to {log}")
    proc = start_dagster(paths, port, log, workspace)
    say(f"Dagster UI at http://127.0.0.1:{port} (Ctrl-C stops)")
    watch = StatsWatch(paths.stats)
    try:
        while not stop.wait(POLL_S):
            stats = watch.poll()
            if stats is not None:
                say(f"refresh {time.strftime('%H:%M:%S')}: {refresh_line(stats)}")
            if proc.poll() is not None:
                print(
                    f"{PREFIX} dagster dev exited ({proc.returncode}); see {log}",
                    file=sys.stderr,
                    flush=True,
                )
                return 2
        return 0
    finally:
        stop_group(proc)
