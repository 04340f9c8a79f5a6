"""A throwaway PostgreSQL server for the e2e suite: PostgreSQL's own initdb and pg_ctl.

The server runs as the `postgres` user (initdb refuses root) on 127.0.0.1 at a free port, from
a fresh folder under the system temp dir, with password authentication over TCP so the plain
`postgresql://user:password@host:port/db` URL is what the Dagster processes get.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

PG_USER = "genledger"
PG_DB = "dagster"
SERVICE_ACCOUNT = "postgres"
START_TIMEOUT_S = 60


def pg_bin_dir() -> Path | None:
    """The newest `/usr/lib/postgresql/*/bin` holding initdb (Debian's layout), else PATH's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def why_unavailable() -> str | None:
    """Why a server cannot be started here (for a skip), or None."""
    if pg_bin_dir() is None:
        return "PostgreSQL binaries not found (./dev setup installs the postgresql package)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVICE_ACCOUNT)
        except KeyError:
            return f"running as root without a '{SERVICE_ACCOUNT}' user to run the server"
    return None


@dataclass
class PgServer:
    """A running server: its data folder, port, password and postmaster pid."""

    bin_dir: Path
    data_dir: Path
    port: int
    password: str
    pid: int

    @property
    def url(self) -> str:
        """The plain URL form, as a user would set DAGSTER_PG_URL."""
        return f"postgresql://{PG_USER}:{self.password}@127.0.0.1:{self.port}/{PG_DB}"

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Rows of one read-only query, through psycopg2."""
        import psycopg2

        conn = psycopg2.connect(
            host="127.0.0.1", port=self.port, user=PG_USER, password=self.password, dbname=PG_DB
        )
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        finally:
            conn.close()


def _as_service(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", SERVICE_ACCOUNT, "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], **kwargs: object) -> None:
    result = subprocess.run(
        _as_service(cmd), capture_output=True, text=True, timeout=START_TIMEOUT_S, **kwargs
    )
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed: {result.stderr.strip() or result.stdout}")


def start_postgres(port: int) -> PgServer:
    """initdb a fresh cluster in a temp folder and start it on 127.0.0.1:`port`."""
    bin_dir = pg_bin_dir()
    assert bin_dir is not None, why_unavailable()
    base = Path(tempfile.mkdtemp(prefix="genledger-pg-"))
    data_dir = base / "data"
    password = secrets.token_hex(12)
    pwfile = base / "pw"
    pwfile.write_text(password + "\n")
    if os.geteuid() == 0:
        account = pwd.getpwnam(SERVICE_ACCOUNT)
        os.chown(base, account.pw_uid, account.pw_gid)
        os.chown(pwfile, account.pw_uid, account.pw_gid)
    _run(
        [
            str(bin_dir / "initdb"),
            "-D", str(data_dir),
            "-U", PG_USER,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "-E", "UTF8",
            "--no-sync",
        ]
    )  # fmt: skip
    pwfile.unlink()
    options = f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off -c full_page_writes=off"
    _run(
        [
            str(bin_dir / "pg_ctl"),
            "-D", str(data_dir),
            "-l", str(base / "server.log"),
            "-o", options,
            "-w", "-t", str(START_TIMEOUT_S),
            "start",
        ]
    )  # fmt: skip
    pid = int((data_dir / "postmaster.pid").read_text().split()[0])
    _run([str(bin_dir / "createdb"), "-h", str(base), "-p", str(port), "-U", PG_USER, PG_DB])
    return PgServer(bin_dir, data_dir, port, password, pid)


def stop_postgres(server: PgServer) -> bool:
    """Stop the server (fast shutdown), remove its folder; True if its processes are gone."""
    with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
        pg_ctl = str(server.bin_dir / "pg_ctl")
        _run([pg_ctl, "-D", str(server.data_dir), "-m", "fast", "-w", "stop"])
    gone = _wait_gone(server.pid, START_TIMEOUT_S)
    if not gone:  # never leave a server running on a shared machine
        with contextlib.suppress(psutil.Error):
            psutil.Process(server.pid).kill()
    shutil.rmtree(server.data_dir.parent, ignore_errors=True)
    return gone


def _wait_gone(pid: int, timeout: float) -> bool:
    """True once `pid` has exited (a zombie awaiting its reaper counts as gone)."""
    try:
        proc = psutil.Process(pid)
        proc.wait(timeout=timeout)
    except psutil.TimeoutExpired:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass
    return True
