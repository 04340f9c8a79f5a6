"""OpenSSH's own `ssh` as the transport of `sftp://` roots: the settings every hop gets, the
command line, starting it, and why it failed, in one line.

`ssh -F SETTINGS -s -- HOST sftp` asks for the `sftp` subsystem (no remote shell needed) and
reaches HOST as the user's own `ssh` does: an alias of their config with its `HostName`,
`Port`, `User`, `IdentityFile`, `ProxyJump` and `ControlMaster`, keys from their agent, host
keys from their known_hosts, OpenSSH's ciphers in C. SETTINGS is a file written for the
connection (and removed once it stands): genledger's settings first, since ssh keeps the
first value it reads, then `Include` of the user's config (`~/.ssh/config` and
`/etc/ssh/ssh_config`, or `GENLEDGER_SSH_CONFIG` alone, as `ssh -F` reads it). ssh hands `-F`
on to the `ssh` it starts for each `ProxyJump` hop, so every hop gets them (a `-o` would
reach the first hop only): no prompt ever (`BatchMode`), unknown or changed host keys refused
(`StrictHostKeyChecking yes`), a silent host given up, nothing forwarded, nothing of the
user's written (`UpdateHostKeys no`). `GENLEDGER_SSH_KEY` adds `IdentityFile` with
`IdentitiesOnly`, `GENLEDGER_SSH_KNOWN_HOSTS` replaces the known_hosts files.

ssh runs in its own session (no terminal to prompt on; it and its `ProxyJump` children are
stopped together, by process group); what it says goes to an unnamed temp file, read when it
fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import IO

from genledger.config import ENV_SSH_CONFIG, ENV_SSH_KEY, ENV_SSH_TRANSPORT
from genledger.config import ENV_SSH_KNOWN_HOSTS as ENV_KNOWN_HOSTS
from genledger.tail.sftp import ConnectionLost, Pipe, ProtocolError, SFTPClient

PIPE_BYTES = 1 << 20  # fewer, larger reads of ssh's output (Linux's default limit)
F_SETPIPE_SZ = 1031

SETTINGS = """\
# Written by genledger for one connection; ssh keeps the first value it reads of each.
BatchMode yes
StrictHostKeyChecking yes
UpdateHostKeys no
ConnectTimeout {connect}
ServerAliveInterval 5
ServerAliveCountMax 2
ClearAllForwardings yes
ForwardAgent no
ForwardX11 no
RequestTTY no
RemoteCommand none
PermitLocalCommand no
"""


class SSHFailed(ConnectionLost):
    """ssh could not connect, or the connection ended: `kind` says what happened ("host key",
    "auth", "timeout", "unreachable", "no sftp", "setting", "lost"); the message is one line
    quoting ssh where it said something."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def settings(connect_timeout: int, environ: Mapping[str, str] = os.environ) -> str:
    """The settings file of a connection: genledger's, the overrides, the user's config."""
    lines = [SETTINGS.format(connect=connect_timeout)]
    known = environ.get(ENV_KNOWN_HOSTS, "").strip()
    if known:
        lines += [f"UserKnownHostsFile {_value(known)}", "GlobalKnownHostsFile /dev/null"]
    key = environ.get(ENV_SSH_KEY, "").strip()
    if key:
        if not os.path.isfile(os.path.expanduser(key)):
            raise SSHFailed("setting", f"{ENV_SSH_KEY}={key}: no such file")
        lines += [f"IdentityFile {_value(key)}", "IdentitiesOnly yes"]
    own = environ.get(ENV_SSH_CONFIG, "").strip()
    if own:
        if not os.path.isfile(os.path.expanduser(own)):
            raise SSHFailed("setting", f"{ENV_SSH_CONFIG}={own}: no such file")
        lines.append(f"Include {_value(own, tokens=False)}")
    else:  # what plain `ssh` reads, in its order
        lines += ["Include ~/.ssh/config", "Include /etc/ssh/ssh_config"]
    return "\n".join(lines) + "\n"


def _value(path: str, tokens: bool = True) -> str:
    """A path as an ssh_config value: absolute, quoted, `%` kept literal where ssh expands
    `%` tokens."""
    full = os.path.abspath(os.path.expanduser(path))
    if '"' in full or "\n" in full:
        raise SSHFailed("setting", f"{path!r}: ssh cannot be given a path with quotes or newlines")
    return '"' + (full.replace("%", "%%") if tokens else full) + '"'


def command(ssh: str, config: str, host: str, user: str | None, port: int | None) -> list[str]:
    """The `ssh` command line of an SFTP session with HOST (user and port: the URL's, which
    win over the config's)."""
    who = ["-l", user] if user else []
    where = ["-p", str(port)] if port else []
    return [ssh, "-F", config, "-s", *who, *where, "--", host, "sftp"]


class SSHConnection:
    """A running `ssh` and the SFTP session over its pipes: connected (every hop, the SFTP
    hello) within `connect_timeout` s, given up when the server is silent `idle_timeout` s."""

    def __init__(
        self,
        host: str,
        user: str | None,
        port: int | None,
        connect_timeout: int,
        idle_timeout: float,
        wait: bool = True,
    ) -> None:
        """Start ssh and say hello; `wait`: wait for the answer (else `finish` does)."""
        ssh = shutil.which("ssh")
        if ssh is None:
            raise SSHFailed(
                "setting",
                f"no `ssh` on PATH: install OpenSSH's client, or set {ENV_SSH_TRANSPORT}=asyncssh",
            )
        self.host, self.owner = host, os.getpid()
        # what ssh says, unnamed and never blocking it; closed with the connection
        self.errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.connect_timeout = connect_timeout
        self.settings_file = _write_settings(settings(connect_timeout))
        try:
            self.proc = subprocess.Popen(
                command(ssh, self.settings_file, host, user, port),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.errors,
                start_new_session=True,
            )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            with contextlib.suppress(OSError):  # Linux only, and only up to its limit
                fcntl.fcntl(self.proc.stdout.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
            pipe = Pipe(
                self.proc.stdout.fileno(), self.proc.stdin.fileno(), self.lost, idle_timeout
            )
            self.sftp = SFTPClient(pipe)
            self.sftp.hello()
        except BaseException:
            self.forget_settings()
            raise
        if wait:
            self.finish()

    def finish(self) -> None:
        """Wait for the SFTP session to stand (every hop, the login, the hello)."""
        try:
            self._start()
        finally:
            self.forget_settings()  # read by now by every ssh of the chain

    def forget_settings(self) -> None:
        """Remove the settings file (once every ssh of the chain has read it)."""
        with contextlib.suppress(OSError):
            os.unlink(self.settings_file)

    def _start(self) -> None:
        try:
            self.sftp.start(self.connect_timeout)
        except TimeoutError:
            self.close()
            raise SSHFailed("timeout", f"no answer within {self.connect_timeout} s") from None
        except ProtocolError as exc:
            failed = self.lost()
            self.close()
            if failed.kind != "lost":
                raise failed from None
            raise SSHFailed(
                "no sftp",
                f"the host does not speak SFTP ({exc}; does a login script of the remote "
                "shell print something?)",
            ) from None
        except BaseException:
            self.close()
            raise

    def lost(self) -> SSHFailed:
        """Why the connection ended, from what ssh said (waiting a moment for it to exit)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(2)
        size = self.errors.seek(0, os.SEEK_END)
        self.errors.seek(max(0, size - (64 << 10)))  # the last words are the ones that tell
        said = self.errors.read().decode("utf-8", "replace")
        return reason(said, self.proc.returncode)

    def close(self) -> None:
        """End the session: ssh sees the end of its input and exits; stopped if it lingers
        (with its ProxyJump hops: the process group)."""
        self.sftp.closed = True
        self.forget_settings()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        if os.getpid() != self.owner:
            return  # a forked worker's: ssh is the parent's child, for the parent to stop
        deadline = time.monotonic() + 1
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(1)
        self.errors.close()


class Spares:
    """Connections started beside a process's own, for the scan workers it forks to take, one
    each (a byte each from a pipe they all inherit): a worker's handshake then runs while the
    parent signs in and lists the root, not after the fork (~0.35 s a worker at load 5). One
    that nobody took waits for the next refresh; one that was taken is the worker's, and is
    closed and replaced at the parent's next refill."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.started: list[SSHConnection] = []
        self.reading, self.writing = os.pipe()
        os.set_blocking(self.reading, False)

    def refill(self, count: int, start: Callable[[], SSHConnection]) -> None:
        """(The parent) Offer `count` started connections."""
        left = self._untaken()
        for index, connection in enumerate(self.started):
            if index not in left:
                connection.close()
        self.started = [self.started[i] for i in sorted(left)]
        while len(self.started) < min(count, 255):
            try:
                self.started.append(start())
            except Exception:
                break  # the parent's own connection will say what is wrong
        os.write(self.writing, bytes(range(len(self.started))))

    def _untaken(self) -> set[int]:
        found: set[int] = set()
        while True:
            try:
                found.update(os.read(self.reading, 256))
            except BlockingIOError:
                return found

    def settle(self) -> None:
        """(The parent, once they have been running a while) Remove their settings files."""
        for connection in self.started:
            connection.forget_settings()

    def take(self) -> SSHConnection | None:
        """(A forked worker) One of the parent's started connections, finished; or None."""
        try:
            index = os.read(self.reading, 1)
        except BlockingIOError:
            return None
        if not index:
            return None
        connection = self.started[index[0]]
        try:
            connection.finish()
        except Exception:
            return None  # the worker connects anew, and says why if that fails too
        return connection


def _write_settings(text: str) -> str:
    handle, path = tempfile.mkstemp(prefix="genledger-ssh-", suffix=".conf")  # mode 0600
    with os.fdopen(handle, "w") as out:
        out.write(text)
    return path


# What ssh says, what it means and what to do, searched in this order (a jump host's refusal
# is followed by the next hop's "connection closed"). Each: (a phrase that tells the case, the
# phrase of the line to quote, the kind, the words around the quote).
KNOWN_HOSTS = f"{ENV_KNOWN_HOSTS} or ~/.ssh/known_hosts"
CASES = (
    (
        "REMOTE HOST IDENTIFICATION HAS CHANGED",
        "has changed",
        "host key",
        "the host key changed, refused (ssh: {line}); if the change is expected, replace the "
        f"old key in {KNOWN_HOSTS}",
    ),
    (
        "host key is known for",
        "host key is known for",
        "host key",
        "unknown host key, refused (ssh: {line}); add the host's key to " + KNOWN_HOSTS,
    ),
    (
        "Host key verification failed",
        "Host key verification failed",
        "host key",
        f"host key refused (ssh: {{line}}); check the host's key in {KNOWN_HOSTS}",
    ),
    *(
        (
            phrase,
            phrase,
            "auth",
            "authentication refused (ssh: {line}); the key "
            f"({ENV_SSH_KEY}, the agent or the config's IdentityFile) is not accepted, and no "
            "password is ever asked",
        )
        for phrase in ("Permission denied", "Too many authentication failures")
    ),
    ("timed out", "timed out", "timeout", "no answer in time (ssh: {line})"),
    (
        "subsystem request failed",
        "subsystem request failed",
        "no sftp",
        "the host serves no SFTP (ssh: {line})",
    ),
    *(
        (phrase, phrase, "unreachable", "cannot reach the host (ssh: {line})")
        for phrase in (
            "Connection refused",
            "Could not resolve hostname",
            "No route to host",
            "Network is unreachable",
        )
    ),
)


def reason(said: str, status: int | None) -> SSHFailed:
    """One line from what ssh wrote to stderr before it exited with `status`."""
    lines = [_clean(line) for line in said.splitlines()]
    lines = [line for line in lines if line and not line.startswith("@@@")]
    for tells, quoted, kind, words in CASES:
        if any(tells in line for line in lines):
            line = next((x for x in lines if quoted in x), next(x for x in lines if tells in x))
            return SSHFailed(kind, words.format(line=line))
    if lines:
        return SSHFailed("lost", f"connection lost; ssh: {lines[-1]}")
    ended = "still running" if status is None else f"exit status {status}"
    return SSHFailed("lost", f"connection lost; ssh said nothing, {ended}")


def _clean(line: str) -> str:
    """A line of ssh's output, safe for a terminal and short."""
    text = "".join(c if c.isprintable() else " " for c in line).strip()
    return text[:300]
