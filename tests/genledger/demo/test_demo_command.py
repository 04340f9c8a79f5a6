"""`genledger demo` as a user runs it: a real process with `dagster dev`, stopped by Ctrl-C.

The terminal must show only genledger's lines, Dagster's output must land in the log file the
demo names, and SIGINT (sent to the demo's process group, as a terminal's Ctrl-C is) must end
everything -- webserver, daemon, code server and any run in progress -- with one goodbye line,
exit code 0 and no traceback anywhere, the log included.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

import psutil
import pytest

from genledger.demo.writer import demo_plan

PREFIX = "genledger demo:"
PROJECT = Path(__file__).resolve().parents[3]
REFRESH = f"{PREFIX} refresh "
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 90.0
DAGSTER_LOG_LINE = re.compile(r" - dagster(\.[\w.]+)? - (DEBUG|INFO|WARNING|ERROR)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def genledger_exe() -> list[str]:
    """The `genledger` console script of this interpreter (its module if not installed)."""
    script = Path(sys.executable).with_name("genledger")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "genledger.cli"]


class Output:
    """Collects the lines of one pipe in a thread, so the test can wait for them."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        for raw in pipe:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def text(self) -> str:
        """Everything read so far."""
        return "\n".join(self.lines)


def after(lines: Iterable[str], label: str) -> str:
    """The value printed after `label` on the first line holding it."""
    for line in lines:
        if label in line:
            return line.split(label, 1)[1].strip()
    raise AssertionError(f"no line with {label!r}")


def live(pids: Iterable[int] = (), groups: Iterable[int] = (), home: str = "") -> list[int]:
    """Live (not zombie) processes: among `pids`, in `groups`, or with DAGSTER_HOME=`home`."""
    pids, groups, found = set(pids), set(groups), []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if (
                proc.pid in pids
                or os.getpgid(proc.pid) in groups
                or (home and proc.environ().get("DAGSTER_HOME") == home)
            ):
                found.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def run_in_progress(log: Path) -> bool:
    """The log shows a run that started and has not finished yet."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    ends = text.count(" - RUN_SUCCESS - ") + text.count(" - RUN_FAILURE - ")
    return text.count(" - RUN_START - ") > ends


def wait_for(
    condition: Callable[[], bool], timeout_s: float, proc: subprocess.Popen[bytes], what: str
) -> None:
    """Poll `condition` until true; fail early if the demo exits."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, f"demo exited ({proc.returncode}) while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_demo_shows_only_its_own_lines_and_ctrl_c_stops_everything_cleanly(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    env["TMPDIR"] = str(tmp_path)  # the demo's temp run (and the log beside it) land here
    port = free_port()
    command = [*genledger_exe(), "demo", "--port", str(port), "--refresh", "2"]
    command += ["--rate", "60", "--records", "5000"]
    # run elsewhere than the checkout: the code location must come from the workspace given
    command += ["--workspace", str(PROJECT / "workspace.yaml")]
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group, as a shell gives a foreground job
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Output(proc.stdout), Output(proc.stderr)
    seen: set[int] = set()
    try:
        wait_for(
            lambda: sum(line.startswith(REFRESH) for line in out.lines) >= 2,
            START_TIMEOUT_S,
            proc,
            "two refresh lines",
        )
        log = Path(after(out.lines, "Dagster's log (webserver, daemon, runs) goes to"))
        home = after(out.lines, "DAGSTER_HOME=")
        data_root = Path(after(out.lines, "simulated run in"))
        assert f"Dagster UI at http://127.0.0.1:{port}" in out.text()
        assert after(out.lines, "Dagster workspace") == str(PROJECT / "workspace.yaml")
        assert Path(home, "dagster.yaml").read_bytes() == (PROJECT / "dagster.yaml").read_bytes()
        assert data_root.is_dir() and data_root.is_relative_to(tmp_path)

        log_text = log.read_text(errors="replace")
        assert " - RUN_START - " in log_text and " - ASSET_CHECK_EVALUATION - " in log_text
        for text in (out.text(), err.text()):
            assert not DAGSTER_LOG_LINE.search(text) and "Traceback" not in text
        refresh = next(line for line in out.lines if line.startswith(REFRESH))
        progress = rf"{len(demo_plan())} datasets, [\d,]+/[\d,]+ done \([\d.]+%\), [\d,]+ comp"
        assert re.search(progress, refresh)
        assert "failing: missing_tokens ERROR" in refresh  # the planted seed bug

        seen = {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
        assert len(seen) >= 4  # dagster dev, webserver, daemon, code server (and more)
        groups = {os.getpgid(pid) for pid in seen} | {proc.pid}
        # Ctrl-C while a run is going: the case that used to end in a traceback (a SIGTERM to
        # the whole group interrupted the run worker mid-step).
        wait_for(lambda: run_in_progress(log), 60.0, proc, "a run in progress")
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=STOP_TIMEOUT_S)
        out.thread.join(timeout=5)
        err.thread.join(timeout=5)

        assert code == 0, err.text()
        assert err.lines == []
        goodbye = [line for line in out.lines if line.startswith(f"{PREFIX} stopped")]
        assert goodbye == [out.lines[-1]] == [f"{PREFIX} stopped; Dagster's log is kept in {log}"]
        assert "Traceback" not in out.text() and not DAGSTER_LOG_LINE.search(out.text())
        assert live(seen, groups, home) == []
        assert not data_root.exists()  # the temp run is removed, its log kept beside it
        log_text = log.read_text(errors="replace")
        assert "Dagster services shut down." in log_text
        assert "Traceback" not in log_text and "DagsterExecutionInterruptedError" not in log_text
        assert " - RUN_FAILURE - " not in log_text
        assert not run_in_progress(log)  # the run going at Ctrl-C finished instead of dying
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for pid in live(seen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(60)
def test_no_ui_demo_prints_summaries_and_sigterm_ends_it_with_the_goodbye(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    env["TMPDIR"] = str(tmp_path)
    command = [*genledger_exe(), "demo", "--no-ui", "--collect-interval", "0.2", "--rate", "50"]
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Output(proc.stdout), Output(proc.stderr)
    try:
        wait_for(
            lambda: sum(line.startswith("total: ") for line in out.lines) >= 2,
            40.0,
            proc,
            "two summaries",
        )
        data_root = Path(after(out.lines, "simulated run in"))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        out.thread.join(timeout=5)
        err.thread.join(timeout=5)
        assert err.lines == []
        assert out.lines[-1] == f"{PREFIX} stopped"
        assert "Traceback" not in out.text() and "Dagster's log" not in out.text()
        assert not data_root.exists()
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.timeout(60)
def test_a_demo_started_outside_a_checkout_says_so_in_one_line_and_starts_nothing(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(
        [*genledger_exe(), "demo", "--port", str(free_port())],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"{PREFIX} no Dagster workspace at {tmp_path / 'workspace.yaml'}")
    assert "--workspace" in line
    assert list(tmp_path.iterdir()) == []  # no temp run, no log
