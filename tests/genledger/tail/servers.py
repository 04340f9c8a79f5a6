"""Real servers for the remote-root tests, on 127.0.0.1, each in its own process group and
stopped by its pid: OpenSSH's `sshd` (temp host and user keys, a temp known_hosts) and moto's
S3 server."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 20) -> None:
    """Block until something accepts on `port` (or the server died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server we started, by its process group (its children too)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def keygen(path: Path) -> Path:
    """A new ed25519 key pair at `path` (and `path.pub`), replacing an old one."""
    for old in (path, path.with_suffix(".pub")):
        old.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )
    return path


@dataclass
class SSHServer:
    """A running sshd and what a client needs to trust and log in to it."""

    port: int
    user: str
    user_key: Path
    known_hosts: Path
    other_key: Path  # a key the server does not accept
    wrong_known_hosts: Path  # the right host, another host key
    config: Path
    proc: subprocess.Popen[bytes] | None = None
    command: list[str] | None = None  # how to start it (default: sshd listening on `port`)

    def start(self) -> None:
        """Start (or restart) sshd with the same config, port and keys."""
        log = open(self.config.parent / "sshd.log", "ab")  # noqa: SIM115 - kept by the process
        self.proc = subprocess.Popen(
            self.command or [SSHD, "-D", "-e", "-f", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        wait_for_port(self.port, self.proc, "sshd")

    def stop(self) -> None:
        """Stop sshd and every session it serves (sessions run in their own process
        groups: they are found as the listener's children and stopped by pid)."""
        if self.proc is None:
            return
        with contextlib.suppress(psutil.Error):
            sessions = psutil.Process(self.proc.pid).children(recursive=True)
            for session in sessions:
                with contextlib.suppress(psutil.Error):
                    session.kill()
        stop(self.proc)

    def url(self, path: Path | str) -> str:
        """The sftp:// URL of a local path served by this sshd."""
        return f"sftp://{self.user}@127.0.0.1:{self.port}{path}"

    def env(self, **extra: str) -> dict[str, str]:
        """Credentials in the environment, as a user would set them."""
        return {
            "GENLEDGER_SSH_KEY": str(self.user_key),
            "GENLEDGER_SSH_KNOWN_HOSTS": str(self.known_hosts),
            **extra,
        }

    @property
    def log(self) -> str:
        """What sshd logged so far."""
        return (self.config.parent / "sshd.log").read_text(errors="replace")


@contextlib.contextmanager
def sshd(base: Path, extra: str = "", authorized: Path | None = None) -> Iterator[SSHServer]:
    """An OpenSSH server on 127.0.0.1 serving this machine's files over SFTP; `extra`:
    more sshd_config lines; `authorized`: the public key it accepts (else its own user key's)."""
    with _running(_sshd_setup(base, free_port(), extra, authorized)) as server:
        yield server


def _sshd_setup(base: Path, port: int, extra: str, authorized: Path | None) -> SSHServer:
    if not os.path.exists(SSHD):
        raise RuntimeError("sshd is missing: install openssh-server (.ci/run does)")
    base.mkdir(parents=True, exist_ok=True)
    host_key, user_key = keygen(base / "host_key"), keygen(base / "user_key")
    other_host, other_key = keygen(base / "other_host_key"), keygen(base / "other_key")
    accepted = authorized or user_key.with_suffix(".pub")
    (base / "authorized_keys").write_text(accepted.read_text())
    config = base / "sshd_config"
    config.write_text(  # `extra` first: sshd keeps the first value of each keyword
        f"{extra}\nPort {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"PidFile {base}/sshd.pid\n"
        f"AuthorizedKeysFile {base}/authorized_keys\nStrictModes no\nUsePAM no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\nLogLevel ERROR\n"
        "MaxStartups 100\nMaxSessions 100\n"
    )
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation dir
    known = base / "known_hosts"
    known.write_text(known_line(port, host_key))
    wrong = base / "wrong_known_hosts"
    wrong.write_text(known_line(port, other_host))
    return SSHServer(port, getpass.getuser(), user_key, known, other_key, wrong, config)


def known_line(port: int, host_key: Path) -> str:
    """The known_hosts line of a host key served on 127.0.0.1:`port`."""
    key = " ".join(host_key.with_suffix(".pub").read_text().split()[:2])
    return f"[127.0.0.1]:{port} {key}\n"


@contextlib.contextmanager
def _running(server: SSHServer) -> Iterator[SSHServer]:
    try:
        server.start()
        yield server
    finally:
        server.stop()


# The only way in to a host behind a jump host: this gate accepts on 127.0.0.1 and hands a
# connection to `sshd -i` (inetd mode: no sshd listens anywhere) only when the connecting
# socket belongs to the jump sshd or one of its sessions; any other connection is closed.
GATE = """
import socket, subprocess, sys
import psutil
port, jump, sshd, config, log = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:]
server = socket.create_server(("127.0.0.1", port))
def jumps(peer):
    # None: the connecting socket is gone already (its owner closed it), so nobody is let in
    # and nobody is blamed: under load a short-lived session may close before it is looked at.
    for conn in psutil.net_connections("tcp4"):
        if tuple(conn.laddr) == peer and conn.raddr and conn.raddr[1] == port and conn.pid:
            try:
                chain = [conn.pid, *(p.pid for p in psutil.Process(conn.pid).parents())]
            except psutil.NoSuchProcess:
                return None
            return jump in chain
    return None
while True:
    conn, peer = server.accept()
    found = jumps(peer)
    if found:
        with open(log, "ab") as out:
            subprocess.Popen([sshd, "-i", "-e", "-f", config], stdin=conn, stdout=conn, stderr=out)
    else:
        with open(log, "a") as out:
            why = "not from the jump host" if found is False else "its socket was gone"
            out.write(f"gate: {'refused' if found is False else 'closed'} {peer}, {why}\\n")
    conn.close()
"""


@contextlib.contextmanager
def sshd_behind(base: Path, jump: SSHServer, authorized: Path) -> Iterator[SSHServer]:
    """An OpenSSH server on 127.0.0.1 that only `jump`'s sshd can reach (`GATE`), accepting
    the public key `authorized`."""
    server = _sshd_setup(base, free_port(), "", authorized)
    assert jump.proc is not None
    server.command = [
        *(sys.executable, "-c", GATE, str(server.port), str(jump.proc.pid), SSHD),
        *(str(server.config), str(base / "sshd.log")),
    ]
    with _running(server):
        yield server


@contextlib.contextmanager
def ssh_agent(base: Path, *keys: Path) -> Iterator[str]:
    """An ssh-agent of its own (its process group, stopped by pid) holding `keys`, whose files
    are then deleted: the agent alone has them. Yields its SSH_AUTH_SOCK."""
    base.mkdir(parents=True, exist_ok=True)
    sock = base / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ssh-agent did not start")
            time.sleep(0.02)
        for key in keys:
            env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
            subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, timeout=30)
            key.unlink()
        yield str(sock)
    finally:
        stop(proc)


def client_config(path: Path, known_hosts: list[Path], hosts: dict[str, dict[str, str]]) -> Path:
    """An ssh_config at `path`: the known_hosts files for every host, then one `Host` block
    per alias with its settings."""
    trusted = "".join(p.read_text() for p in known_hosts)
    (path.parent / "client_known_hosts").write_text(trusted)
    lines = [f'UserKnownHostsFile "{path.parent / "client_known_hosts"}"']
    for alias, settings in hosts.items():
        lines.append(f"Host {alias}")
        lines += [f"    {key} {value}" for key, value in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


# Accepts every connection and holds it open, saying nothing (or only an SSH banner): a host
# that is up but never answers the handshake.
SILENT = """
import socket, sys, time
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
held = []
while True:
    conn, _ = server.accept()
    if sys.argv[2]:
        conn.sendall(sys.argv[2].encode() + b"\\r\\n")
    held.append(conn)
"""


@contextlib.contextmanager
def silent_host(banner: str = "") -> Iterator[int]:
    """A TCP listener on 127.0.0.1 (its own process) that never completes an SSH handshake;
    yields its port."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SILENT, str(port), banner],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc, "silent host")
        yield port
    finally:
        stop(proc)


@dataclass
class S3Server:
    """A running moto S3 server and the environment that points boto at it."""

    port: int

    def env(self) -> dict[str, str]:
        """The standard AWS variables for this server."""
        return {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing-secret-never-logged",
            "AWS_DEFAULT_REGION": "us-east-1",
        }


@contextlib.contextmanager
def moto_s3(base: Path) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1."""
    port = free_port()
    base.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=open(base / "moto.log", "wb"),  # noqa: SIM115 - closed with the process
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc, "moto_server", timeout=60)
        yield S3Server(port)
    finally:
        stop(proc)
