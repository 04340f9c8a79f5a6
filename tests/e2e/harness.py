"""The e2e harness: `dagster dev` in its own process group, a webhook receiver, a writer.

Plain helpers (no fixtures): conftest.py wires them into session fixtures.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil

from genledger.synth.records import flat, line
from genledger.synth.tree import write_sample_tree

PROJECT = Path(__file__).resolve().parents[2]
ARTIFACTS = PROJECT / "test-artifacts"
ASSET_JOB = "__ASSET_JOB"  # Dagster's implicit job holding every asset
DATASET_TAG = "genledger/dataset"
SCOPE_TAG = "genledger/scope"
REFRESH_JOB = "genledger_refresh"  # what the file sensor and the schedule run
SENSOR_TAG = "dagster/sensor_name"
STARTUP_TIMEOUT_S = 240.0
RUN_TIMEOUT_S = 300.0
SENSOR_TIMEOUT_S = 180.0
STOP_GRACE_S = 20.0
# A dataset whose name needs sanitising and that stays broken for the whole session (the
# browser test shows its failed check even after the other error dataset is fixed).
ODD_ERROR_DATASET = "zero-tokens v2.run"
CLEAN_DATASET = "clean_chat_then_flat"
FIXABLE_DATASET = "error_missing_tokens"
# The URL path stands in for a webhook secret: it must never show up anywhere we can read.
WEBHOOK_SECRET = "s3cr3t-e2e-token-8f2a"
# Knobs read by the code location through GENLEDGER_CONFIG. A yearly cron keeps the
# schedule registered and running without it launching runs that race the assertions.
SCHEDULE_CRON = "0 0 1 1 *"
SENSOR_INTERVAL_S = 10


def ds_key(name: str) -> str:
    """The asset-key prefix the contract gives a dataset name (no collisions in our tree)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


# --- processes -------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class DagsterDev:
    """A running `dagster dev` and the paths it was pointed at."""

    proc: subprocess.Popen[bytes]
    url: str
    port: int
    home: Path
    data_root: Path
    stats_path: Path
    state_dir: Path
    log_path: Path
    pids: set[int] = field(default_factory=set)

    def log_text(self) -> str:
        """Everything dagster dev (and its children) printed so far."""
        return self.log_path.read_text(errors="replace")

    def remember_children(self) -> None:
        """Record every descendant pid, so leftovers can be found after the group is gone."""
        try:
            parent = psutil.Process(self.proc.pid)
            self.pids.update(p.pid for p in parent.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
        self.pids.add(self.proc.pid)


def start_dagster_dev(
    port: int, env: dict[str, str], log_path: Path, project: Path = PROJECT
) -> DagsterDev:
    """Start `dagster dev -w workspace.yaml` on a loopback port in its own process group."""
    cmd = ["dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    return start_dagster_process(["dagster", *cmd], port, env, log_path, project)


def start_dagster_process(
    cmd: list[str], port: int, env: dict[str, str], log_path: Path, project: Path = PROJECT
) -> DagsterDev:
    """Start one Dagster command (`cmd[0]` from the venv) from `project`, in its own group."""
    exe = Path(sys.executable).with_name(cmd[0])
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(exe), *cmd[1:]],
            cwd=project,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return DagsterDev(
        proc=proc,
        url=f"http://127.0.0.1:{port}",
        port=port,
        home=Path(env["DAGSTER_HOME"]),
        data_root=Path(env["GENLEDGER_DATA_ROOT"]),
        stats_path=Path(env["GENLEDGER_STATS_PATH"]),
        state_dir=Path(env["GENLEDGER_STATE_DIR"]),
        log_path=log_path,
    )


def stop_dagster_dev(dev: DagsterDev) -> list[int]:
    """SIGTERM the group, SIGKILL it after a grace period; return pids that outlived it."""
    return stop_groups([dev])


def stop_groups(devs: list[DagsterDev]) -> list[int]:
    """Stop the process groups together (they may share a DAGSTER_HOME); return leftovers."""
    ours: set[int] = set()
    for dev in devs:
        dev.remember_children()
        ours |= dev.pids | pids_using_home(dev.home)
        _signal_group(dev.proc.pid, signal.SIGTERM)  # start_new_session: pid is the group id
    for dev in devs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            dev.proc.wait(timeout=STOP_GRACE_S)
        deadline = time.monotonic() + STOP_GRACE_S
        while _group_alive(dev.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if _group_alive(dev.proc.pid):
            _signal_group(dev.proc.pid, signal.SIGKILL)
            time.sleep(1.0)
        if dev.proc.poll() is None:
            dev.proc.wait(timeout=5)
    homes = {dev.home for dev in devs}
    for home in homes:
        ours |= pids_using_home(home)
    leftovers = sorted(pid for pid in ours if _alive(pid))
    for pid in leftovers:  # reported as a failure, but not left running on a shared box
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return leftovers


def pids_using_home(home: Path) -> set[int]:
    """Live processes whose environment points DAGSTER_HOME at `home` (ours, wherever they are)."""
    found = set()
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("DAGSTER_HOME") == str(home):
                found.add(proc.pid)
    return found


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # Zombies still count for killpg; only live members matter.
    return any(
        p.info["status"] != psutil.STATUS_ZOMBIE
        for p in psutil.process_iter(["status"])
        if _pgid(p.pid) == pgid
    )


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# --- webhook receiver -----------------------------------------------------------------


@dataclass
class Received:
    """One POST the receiver got."""

    path: str
    body: bytes
    at: float = field(default_factory=time.monotonic)  # when it arrived (monotonic clock)

    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", errors="replace")


class WebhookReceiver:
    """An HTTP server on 127.0.0.1 in a thread that answers 200 and records every POST."""

    def __init__(self) -> None:
        self.posts: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.posts.append(Received(self.path, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}')

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output (and the secret path) out of stderr

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        """The URL to hand to GENLEDGER_WEBHOOK_URL (its path plays the secret)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook/{WEBHOOK_SECRET}"

    def snapshot(self) -> list[Received]:
        """The POSTs received so far."""
        with self._lock:
            return list(self.posts)

    def wait_for(self, pred: Callable[[Received], bool], timeout: float) -> Received:
        """The first POST matching `pred`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for post in self.snapshot():
                if pred(post):
                    return post
            time.sleep(1.0)
        bodies = "\n".join(p.text()[:400] for p in self.snapshot())
        raise AssertionError(f"no matching webhook POST within {timeout:.0f}s; got:\n{bodies}")


# --- simulated writer -----------------------------------------------------------------


@dataclass(frozen=True)
class Appended:
    """What a writer burst added: records and their completion tokens."""

    records: int
    completion_tokens: int


class SimulatedWriter:
    """Writes like a generation run: clean `/generate`-flat records in bursts, lines torn."""

    def __init__(self, root: Path, seed: int = 11) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.serial = 0

    def _records(self, prefix: str, count: int) -> tuple[list[bytes], int]:
        lines, tokens = [], 0
        for _ in range(count):
            self.serial += 1
            completion = self.rng.randint(5, 60)
            record = flat(f"{prefix}-w{self.serial}", self.rng.randint(5, 40), completion, self.rng)
            lines.append(line(record))
            tokens += completion
        return lines, tokens

    def append(self, dataset: str, count: int, pause_s: float = 0.05) -> Appended:
        """Append `count` records to the dataset's responses file, each line in two writes."""
        lines, tokens = self._records(dataset, count)
        path = self.root / dataset / "raw_responses.jsonl"
        with path.open("ab") as handle:
            for data in lines:
                cut = self.rng.randint(1, len(data) - 1)
                handle.write(data[:cut])
                handle.flush()  # a reader may see the torn half: it must wait for the "\n"
                time.sleep(pause_s)
                handle.write(data[cut:])
                handle.flush()
        return Appended(count, tokens)

    def replace_with_clean(self, dataset: str, count: int) -> Appended:
        """Replace the dataset's responses file by a clean one, atomically (a rewrite)."""
        lines, tokens = self._records(dataset, count)
        path = self.root / dataset / "raw_responses.jsonl"
        tmp = path.with_name(".raw_responses.rewrite")
        tmp.write_bytes(b"".join(lines))
        os.replace(tmp, path)
        return Appended(count, tokens)


# A dataset the budget test adds while dagster dev runs: every record priced alike by
# genai-prices' table, a prompts file of BUDGET_PROMPTS lines, a budget of 5.5 records' cost.
BUDGET_DATASET = "budget_api_run"
BUDGET_PROMPTS = 10
BUDGET_RECORDS = 5.5


def budget_record(i: int) -> dict[str, Any]:
    """One Anthropic message of the budget dataset (each costs the same)."""
    return {
        "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 20_000, "output_tokens": 4_000},
    }  # fmt: skip


def write_budget_records(root: Path, first: int, count: int) -> Path:
    """Append records `first`.. of the budget dataset (its prompts file written once)."""
    folder = root / BUDGET_DATASET
    folder.mkdir(parents=True, exist_ok=True)
    prompts = folder / "prompts.jsonl"
    if not prompts.exists():
        prompts.write_bytes(b"".join(line({"p": i}) for i in range(BUDGET_PROMPTS)))
    with (folder / "raw_responses.jsonl").open("ab") as out:
        out.write(b"".join(line(budget_record(i)) for i in range(first, first + count)))
    return folder


def budget_usd(workdir: Path) -> float:
    """The budget dataset's budget: `BUDGET_RECORDS` records' cost, as the engine prices one."""
    from genledger.config import Config
    from genledger.refresh.collect import refresh

    root = workdir / "budget_probe"
    write_budget_records(root, 0, 1)
    config = Config(data_root=root, stats_path=workdir / "budget_probe.json",
                    state_dir=workdir / "budget_probe_state")  # fmt: skip
    cost = refresh(config).stats["datasets"][BUDGET_DATASET]["cost_usd"]
    assert cost, "the budget record must be priced"
    return float(cost) * BUDGET_RECORDS


def write_e2e_tree(root: Path) -> Path:
    """The sample tree plus a dataset with an awkward name whose counts are all zero."""
    write_sample_tree(root)
    rng = random.Random(5)
    folder = root / ODD_ERROR_DATASET
    folder.mkdir(parents=True)
    records = [flat(f"z{i}", rng.randint(5, 40), 0, rng) for i in range(12)]
    (folder / "raw_responses.jsonl").write_bytes(b"".join(line(r) for r in records))
    return root


def read_stats(path: Path) -> dict[str, Any] | None:
    """The stats JSON, or None while it does not exist yet."""
    try:
        return dict(json.loads(path.read_bytes()))
    except FileNotFoundError:
        return None


def wait_for(pred: Callable[[], Any], timeout: float, what: str, every: float = 2.0) -> Any:
    """Poll `pred` until it returns something truthy; fail naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


# --- many datasets growing at once ------------------------------------------------------


def write_growing_tree(root: Path, count: int, records: int = 10, seed: int = 5) -> list[str]:
    """`count` dataset folders of clean `/generate`-flat records; returns their names."""
    names = [f"ds_{i:03d}" for i in range(count)]
    rng = random.Random(seed)
    for name in names:
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "raw_responses.jsonl").write_bytes(clean_lines(name, records, rng))
    return names


def clean_lines(dataset: str, count: int, rng: random.Random) -> bytes:
    """`count` clean records for one dataset, as JSONL."""
    return b"".join(
        line(flat(f"{dataset}-{rng.random()}", 20, rng.randint(5, 60), rng)) for _ in range(count)
    )


def bad_lines(dataset: str, count: int) -> bytes:
    """Responses with no token count at all: `missing_tokens`, an ERROR check."""
    return b"".join(
        json.dumps({"id": f"{dataset}-bad-{i}", "text": "usage dropped"}).encode() + b"\n"
        for i in range(count)
    )


class GrowingWriter(threading.Thread):
    """Every dataset gains `records` clean records every `every` seconds, spread evenly."""

    def __init__(self, root: Path, names: list[str], records: int = 5, every: float = 3.0):
        super().__init__(daemon=True)
        self.root, self.names, self.records, self.every = root, names, records, every
        self.halt = threading.Event()
        self._lock = threading.Lock()  # a bad append never interleaves with a clean one
        self._rng = random.Random(3)

    def run(self) -> None:
        gap = self.every / len(self.names)
        while not self.halt.is_set():
            for name in self.names:
                self._append(name, clean_lines(name, self.records, self._rng))
                if self.halt.wait(gap):
                    return

    def break_dataset(self, dataset: str, count: int = 20) -> float:
        """Append `count` records without token counts; return when (monotonic clock)."""
        self._append(dataset, bad_lines(dataset, count))
        return time.monotonic()

    def _append(self, dataset: str, data: bytes) -> None:
        with self._lock, (self.root / dataset / "raw_responses.jsonl").open("ab") as handle:
            handle.write(data)


@dataclass
class Growing:
    """A live instance over a data root whose every dataset grows."""

    dev: DagsterDev
    writer: GrowingWriter
    names: list[str]
