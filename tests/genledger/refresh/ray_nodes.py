"""A real Ray cluster on loopback for the tests: a head and more nodes, each `ray start
--block` in its own process group (so every Ray process of a node is in it), stopped by pid."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..tail.servers import free_port

RAY = str(Path(sys.executable).with_name("ray"))
NODE = [
    *("--node-ip-address", "127.0.0.1", "--num-cpus", "1"),
    *("--object-store-memory", str(80 << 20), "--disable-usage-stats", "--block"),
]
# A node killed by SIGKILL is found dead in about three seconds instead of half a minute (not
# faster: on a loaded machine a live node can miss a second of heartbeats).
HEALTH = '{"health_check_period_ms": 500, "health_check_failure_threshold": 6}'


@dataclass
class Cluster:
    """A running cluster: its address (and its Ray Client port) and the `ray start` process
    of each live node."""

    address: str
    client: str  # ray://127.0.0.1:PORT, the head's Ray Client server
    base: Path
    env: dict[str, str]
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def add_node(self) -> subprocess.Popen[bytes]:
        """Start one more node joining the head; returns its `ray start` process."""
        proc = _start([RAY, "start", "--address", self.address, *NODE], self.base, self.env)
        self.nodes.append(proc)
        wait_nodes(self.address, len(self.nodes), self.env)
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL a node's whole process group (its raylet, its workers): a machine lost."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        self.nodes.remove(proc)  # the live nodes are the others
        wait_nodes(self.address, len(self.nodes), self.env)  # once the head knows it dead


def stop(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """Stop a node by its process group: SIGTERM, then SIGKILL after `grace` seconds (a
    `ray start --block` shutting its node down slowly is not worth waiting for in tests)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is still there
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def _start(command: list[str], base: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = open(base / "nodes.log", "ab")  # noqa: SIM115 - kept by the process
    return subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


def wait_nodes(address: str, count: int, env: dict[str, str], timeout: float = 90) -> None:
    """Block until the cluster has exactly `count` live nodes (asked from another process, so
    this one never holds a Ray connection)."""
    script = (
        "import ray, sys, time\n"
        f"ray.init(address={address!r}, logging_level='ERROR', log_to_driver=False)\n"
        f"end = time.monotonic() + {timeout}\n"
        f"while sum(n['Alive'] for n in ray.nodes()) != {count}:\n"
        "    if time.monotonic() > end: sys.exit(1)\n"
        "    time.sleep(0.1)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=timeout + 30)
    assert done.returncode == 0, f"the cluster at {address} did not reach {count} nodes"


def wait_head(port: int, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    """Block until the head's GCS accepts connections."""
    from ..tail.servers import wait_for_port

    wait_for_port(port, proc, "ray head", timeout)


@contextlib.contextmanager
def ray_cluster(extra_env: dict[str, str] | None = None, workers: int = 1) -> Iterator[Cluster]:
    """A head and `workers` more nodes on 127.0.0.1, one CPU each, with `extra_env` in every
    node's environment (an S3 endpoint's credentials: a worker reads its own)."""
    # Ray's sockets live under the temp dir: a short path keeps them under the 107 bytes allowed.
    base = Path(tempfile.mkdtemp(prefix="glray-", dir="/tmp"))
    env = {**os.environ, **(extra_env or {}), "RAY_USAGE_STATS_ENABLED": "0"}
    port, client = free_port(), free_port()
    head = _start(
        [
            *(RAY, "start", "--head", "--port", str(port), "--temp-dir", str(base / "t")),
            *("--include-dashboard", "false", "--system-config", HEALTH, *NODE),
            *("--ray-client-server-port", str(client)),
        ],
        base,
        env,
    )
    cluster = Cluster(f"127.0.0.1:{port}", f"ray://127.0.0.1:{client}", base, env, [head])
    try:
        wait_head(port, head)
        for _ in range(workers):
            cluster.add_node()
        yield cluster
    finally:
        for proc in reversed(cluster.nodes):
            stop(proc)
        shutil.rmtree(base, ignore_errors=True)
