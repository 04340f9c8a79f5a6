"""The production topology of `deploy/`: PostgreSQL, a gRPC code server, webserver and daemon.

Each Dagster process runs in its own process group from the project root, all three with the
same environment (DAGSTER_HOME holding a copy of deploy/dagster.yaml, DAGSTER_PG_URL in its
plain form). The workspace is deploy/workspace.yaml with the code server's port made free.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from genledger.notify.store import STORE_NAME

from .harness import (
    PROJECT,
    STARTUP_TIMEOUT_S,
    DagsterDev,
    free_port,
    start_dagster_process,
    stop_groups,
)
from .postgres import PgServer

DEPLOY = PROJECT / "deploy"


@dataclass
class Topology:
    """The three Dagster processes of one deployment and the server they store into."""

    pg: PgServer
    code_server: DagsterDev
    webserver: DagsterDev
    daemon: DagsterDev

    @property
    def groups(self) -> list[DagsterDev]:
        """Every Dagster process group, webserver first."""
        return [self.webserver, self.daemon, self.code_server]

    def log_text(self) -> str:
        """What all three processes printed so far."""
        return "\n".join(g.log_text() for g in self.groups)


def deploy_workspace(target: Path, code_port: int) -> Path:
    """deploy/workspace.yaml with the code server's port replaced by `code_port`."""
    text = (DEPLOY / "workspace.yaml").read_text()
    text, count = re.subn(r"(?m)^(\s*port:\s*)\d+\s*$", rf"\g<1>{code_port}", text)
    assert count == 1, "deploy/workspace.yaml must name exactly one code server port"
    target.write_text(text)
    return target


def deploy_home(home: Path) -> Path:
    """A DAGSTER_HOME holding deploy/dagster.yaml, as the deployment docs say."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    return home


def start_topology(pg: PgServer, env: dict[str, str], workdir: Path, web_port: int) -> Topology:
    """Start the code server, then the webserver and the daemon against it."""
    code_port = free_port()
    workspace = str(deploy_workspace(workdir / "workspace.yaml", code_port))
    env = {**env, "DAGSTER_PG_URL": pg.url}
    serve = ["code-server", "start", "-m", "definitions", "-h", "127.0.0.1", "-p", str(code_port)]
    code = start_dagster_process(["dagster", *serve], code_port, env, workdir / "code-server.log")
    wait_for_code_server(code)  # a webserver that finds no server shows a load error until told
    web = start_dagster_process(
        ["dagster-webserver", "-w", workspace, "-h", "127.0.0.1", "-p", str(web_port)],
        web_port,
        env,
        workdir / "webserver.log",
    )
    daemon = start_dagster_process(
        ["dagster-daemon", "run", "-w", workspace], 0, env, workdir / "daemon.log"
    )
    return Topology(pg, code, web, daemon)


def wait_for_code_server(code: DagsterDev, timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Until the code server says it serves the location on its port (or fail with its log)."""
    ready = f"Started Dagster code proxy server for module definitions on port {code.port}"
    deadline = time.monotonic() + timeout
    while ready not in code.log_text():
        if code.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"code server not ready:\n{code.log_text()[-3000:]}")
        time.sleep(0.5)


def stop_topology(topology: Topology) -> list[int]:
    """Stop the three process groups; return the pids that outlived them."""
    return stop_groups(topology.groups)


def sqlite_files(*roots: Path) -> list[str]:
    """Dagster's SQLite databases under the roots (there must be none with PostgreSQL
    storage); genledger's own notification outbox in its state dir is not Dagster's storage
    (`genledger.notify.store`, docs/notifications.md)."""
    found = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            found += [
                os.path.join(dirpath, f)
                for f in files
                if f.endswith((".db", ".sqlite")) and f != STORE_NAME
            ]
    return sorted(found)
