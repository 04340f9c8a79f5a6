"""sftp:// roots reached the way the user's own `ssh` reaches a GPU box, against real OpenSSH
servers on 127.0.0.1: a target behind a jump host (reachable only through it), named by an
alias of a config file, with the key only in an ssh-agent; an alias with its own port and
user; a ControlMaster; and each refusal (host keys unknown or changed, at the jump or the
target, a key nobody accepts, a key that would need a passphrase) one line, exit 2, at once,
with no prompt.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.config import Switches
from genledger.tail import sftp
from genledger.tail.remote import RemoteRoot, Transfer, without_password
from genledger.tail.roots import DataRootError

from ..shards import jsonl, write
from .servers import SSHServer, client_config, keygen, ssh_agent, sshd, sshd_behind
from .test_remote import RECORDS, _append, _snapshot, _spy_on_workers, collect, mixed_tree, same


@dataclass
class Hops:
    """A jump host, a target only it can reach, an agent holding the only key both accept,
    and a config naming them `bastion` and `gpu-box`."""

    jump: SSHServer
    target: SSHServer
    agent: str  # SSH_AUTH_SOCK
    config: Path
    base: Path

    def env(self, **extra: str) -> dict[str, str]:
        """What a user's shell holds: their agent and (for the tests) their config file."""
        return {"SSH_AUTH_SOCK": self.agent, "GENLEDGER_SSH_CONFIG": str(self.config), **extra}

    def hosts(self, target: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
        """The config's two hosts (the target's settings replaced by `target`)."""
        jump = {"HostName": "127.0.0.1", "Port": str(self.jump.port), "User": self.jump.user}
        return {
            "bastion": jump,
            "gpu-box": target
            or {
                "HostName": "127.0.0.1",
                "Port": str(self.target.port),
                "User": self.target.user,
                "ProxyJump": "bastion",
            },
        }


@pytest.fixture(scope="module")
def hops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hops]:
    """The jump host, the target behind it, the agent and the config, for the module."""
    base = tmp_path_factory.mktemp("hops")
    key = keygen(base / "agent_key")
    public = key.with_suffix(".pub")
    with (
        sshd(base / "jump", authorized=public) as jump,
        sshd_behind(base / "target", jump, public) as target,
        ssh_agent(base / "agent", key) as agent,
    ):
        hops = Hops(jump, target, agent, base / "ssh_config", base)
        client_config(hops.config, [jump.known_hosts, target.known_hosts], hops.hosts())
        yield hops


@pytest.fixture
def hop_env(hops: Hops, monkeypatch: pytest.MonkeyPatch) -> Hops:
    """This process's environment as the user's: agent and config, no genledger key."""
    for name in ("GENLEDGER_SSH_KEY", "GENLEDGER_SSH_KNOWN_HOSTS", "GENLEDGER_SSH_TRANSPORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in hops.env().items():
        monkeypatch.setenv(name, value)
    return hops


def test_a_root_behind_a_jump_host_under_an_alias_with_the_key_in_an_agent_is_read_exactly(
    hop_env: Hops, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _record_requests(monkeypatch)
    refusals = hop_env.target.log.count("refused")
    root = mixed_tree(tmp_path / "data")
    path = root / "plain" / "raw_responses.jsonl"
    url = f"sftp://gpu-box{root}"
    remote = collect(url, tmp_path / "inc")
    assert remote["data_root"] == url
    assert same(remote) == same(collect(root, tmp_path / "local"))
    added = jsonl(RECORDS[100:130])
    _append(path, added)
    before = Transfer.bytes_read
    incremental = collect(url, tmp_path / "inc")
    assert Transfer.bytes_read - before <= len(added) + 64 * 1024
    assert same(incremental) == same(collect(url, tmp_path / "full", full=True))
    assert incremental["datasets"]["plain"]["n_done"] == 130
    # the root is only read: requests to open for reading, read, list and look, nothing else
    assert {kind for kind, _ in sent} <= READ_ONLY
    opens = [body for kind, body in sent if kind == sftp.OPEN]
    assert opens and all(body.endswith(b"\x00\x00\x00\x01\x00\x00\x00\x00") for body in opens)
    assert hop_env.target.log.count("refused") == refusals  # all came through the jump host


READ_ONLY = {sftp.OPEN, sftp.CLOSE, sftp.READ, sftp.STAT, sftp.OPENDIR, sftp.READDIR}
READ_ONLY |= {sftp.REALPATH, sftp.EXTENDED}


def _record_requests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bytes]]:
    sent: list[tuple[int, bytes]] = []
    real = sftp.SFTPClient._send

    def send(self: sftp.SFTPClient, requests: list[tuple[int, bytes]]) -> list[int]:
        sent.extend(requests)
        return real(self, requests)

    monkeypatch.setattr(sftp.SFTPClient, "_send", send)
    return sent


def test_the_target_cannot_be_reached_but_through_the_jump_host(hops: Hops, tmp_path: Path) -> None:
    root = mixed_tree(tmp_path / "data")
    refusals = hops.target.log.count("not from the jump host")
    direct = {k: v for k, v in hops.hosts()["gpu-box"].items() if k != "ProxyJump"}
    config = client_config(
        tmp_path / "direct_config",
        [hops.jump.known_hosts, hops.target.known_hosts],
        hops.hosts(direct),
    )
    done = _run(f"sftp://gpu-box{root}", tmp_path, hops.env(GENLEDGER_SSH_CONFIG=str(config)))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "cannot connect" in done.stderr
    assert hops.target.log.count("not from the jump host") > refusals  # it was tried, and shut


def test_forked_workers_each_reach_the_target_through_the_jump_host(
    hop_env: Hops,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    from ..refresh.test_parallel import rerun_alone

    if rerun_alone(request):
        return
    forked = _spy_on_workers(monkeypatch)
    root = mixed_tree(tmp_path / "data")
    for n in range(3):
        write(root / f"big{n}" / "raw_responses.jsonl", jsonl(RECORDS * (n + 2)))
    stats = collect(f"sftp://gpu-box{root}", tmp_path / "w2", switches=Switches(workers=2))
    assert len(forked[-1]) == 9  # every data file was read by a worker, on its own ssh
    assert same(stats) == same(collect(root, tmp_path / "local"))


# Each case: (what to change, what the one line must say). The config of a case is the hops'
# with its known_hosts, hosts or agent changed.
BAD = {
    "jump host key unknown": "host key",
    "target host key changed": "host key",
    "a key no host accepts": "authentication refused",
    "a key with a passphrase and no agent": "authentication refused",
}


@pytest.mark.parametrize("case", BAD)
def test_each_refusal_on_the_way_is_one_line_exit_2_at_once_and_never_a_prompt(
    hops: Hops, tmp_path: Path, case: str
) -> None:
    root = mixed_tree(tmp_path / "data")
    env = hops.env()
    trusted = [hops.jump.known_hosts, hops.target.known_hosts]
    if case == "jump host key unknown":
        trusted = [hops.target.known_hosts]
    elif case == "target host key changed":
        trusted = [hops.jump.known_hosts, hops.target.wrong_known_hosts]
    elif case == "a key no host accepts":
        with ssh_agent(tmp_path / "other_agent", keygen(tmp_path / "other")) as other:
            env = hops.env(SSH_AUTH_SOCK=other)
            _check_refusal(hops, tmp_path, root, env, trusted, BAD[case])
        return
    else:
        locked = tmp_path / "locked"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(locked)],
            check=True,
            timeout=30,
        )
        env = hops.env(SSH_AUTH_SOCK="", GENLEDGER_SSH_KEY=str(locked))
    _check_refusal(hops, tmp_path, root, env, trusted, BAD[case])


def _check_refusal(
    hops: Hops, tmp: Path, root: Path, env: dict[str, str], trusted: list[Path], says: str
) -> None:
    config = client_config(tmp / "case_config", trusted, hops.hosts())
    started = time.monotonic()
    done = _run(f"sftp://gpu-box{root}", tmp, {**env, "GENLEDGER_SSH_CONFIG": str(config)})
    assert time.monotonic() - started < 15
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("genledger collect: data root sftp://gpu-box")
    assert says in lines[0] and "(ssh: " in lines[0], lines[0]
    assert not (tmp / "s.json").exists() and _snapshot(tmp / "state") == {}


def test_an_alias_with_its_own_port_and_user_signs_in_as_that_user(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("signing in as another user needs root")
    # `nobody` must reach the key and the data: a folder outside pytest's private temp dir.
    base = Path(tempfile.mkdtemp(prefix="genledger-nobody-"))
    try:
        os.chmod(base, 0o755)
        server_base = base / "sshd"
        with sshd(server_base, "AllowUsers nobody\nLogLevel VERBOSE") as server:
            _readable_by_all(base)
            root = mixed_tree(base / "data")
            _readable_by_all(base)
            alias = {
                "HostName": "127.0.0.1",
                "Port": str(server.port),
                "User": "nobody",
                "IdentityFile": str(server.user_key),
                "IdentitiesOnly": "yes",
            }
            config = client_config(tmp_path / "ssh_config", [server.known_hosts], {"gpu": alias})
            env = {"GENLEDGER_SSH_CONFIG": str(config), "SSH_AUTH_SOCK": ""}
            done = _run(f"sftp://gpu{root}", tmp_path, env)
            assert done.returncode in (0, 1), done.stderr
            assert "Accepted publickey for nobody" in server.log
            # the URL's user wins over the config's: root is not allowed here
            refused = _run(f"sftp://root@gpu{root}", tmp_path / "as-root", env)
            assert refused.returncode == 2 and "authentication refused" in refused.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _readable_by_all(base: Path) -> None:
    for path in [base, *base.rglob("*")]:
        if path.name.endswith("_key") or path.name.endswith("key"):
            continue  # private keys stay private (ssh refuses readable ones)
        mode = path.stat().st_mode
        extra = stat.S_IRGRP | stat.S_IROTH
        if path.is_dir():
            extra |= stat.S_IXGRP | stat.S_IXOTH
        path.chmod(mode | extra)


def test_a_control_master_of_the_config_carries_the_connections_of_later_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from ..refresh.test_parallel import rerun_alone

    if rerun_alone(request):
        return
    sockets = Path(tempfile.mkdtemp(prefix="gl-cm-"))  # a socket path must stay short
    try:
        with sshd(tmp_path / "sshd", "LogLevel VERBOSE") as server:
            alias = {
                "HostName": "127.0.0.1",
                "Port": str(server.port),
                "User": server.user,
                "IdentityFile": str(server.user_key),
                "ControlMaster": "auto",
                "ControlPath": f"{sockets}/%C",
                "ControlPersist": "60",
            }
            config = client_config(tmp_path / "ssh_config", [server.known_hosts], {"gpu": alias})
            root = mixed_tree(tmp_path / "data")
            url = f"sftp://gpu{root}"
            env = {"GENLEDGER_SSH_CONFIG": str(config), "SSH_AUTH_SOCK": ""}
            try:
                first = _run(url, tmp_path / "first", {**env, "GENLEDGER_WORKERS": "2"})
                assert first.returncode in (0, 1), first.stderr
                signed_in = server.log.count("Accepted publickey")
                again = _run(url, tmp_path / "again", {**env, "GENLEDGER_WORKERS": "2"})
                assert again.returncode in (0, 1), again.stderr
                # the second run's connections all went through the first's master
                assert server.log.count("Accepted publickey") == signed_in
            finally:
                _stop_master(config)
            written = orjson.loads((tmp_path / "again" / "s.json").read_bytes())
            assert same(written) == same(collect(root, tmp_path / "local"))
    finally:
        shutil.rmtree(sockets, ignore_errors=True)


def _stop_master(config: Path) -> None:
    """Stop the master `ControlPersist` left running, by its pid (`ssh -O check` says it)."""
    check = subprocess.run(
        ["ssh", "-F", str(config), "-O", "check", "gpu"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    said = check.stderr + check.stdout
    if "pid=" in said:
        os.kill(int(said.split("pid=")[1].split(")")[0]), 15)


PASSWORD = "pw-never-written-9731"


def test_a_password_in_the_url_is_refused_and_written_nowhere(hops: Hops, tmp_path: Path) -> None:
    root = mixed_tree(tmp_path / "data")
    url = f"sftp://{hops.target.user}:{PASSWORD}@gpu-box{root}"
    done = _run(url, tmp_path, hops.env())
    assert done.returncode == 2
    assert PASSWORD not in done.stderr and "password" in done.stderr
    assert done.stderr.strip() == (
        f"genledger collect: data root sftp://{hops.target.user}@gpu-box{root}: a password in the "
        "URL is refused (it would be stored and shown): sign in with a key (the agent, the ssh "
        "config's IdentityFile or GENLEDGER_SSH_KEY) or, for S3, the AWS variables"
    )
    assert not any(PASSWORD.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    with pytest.raises(DataRootError) as refused:
        RemoteRoot.from_url(f"s3://key:{PASSWORD}@bucket/x")
    assert PASSWORD not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("sftp://me:pw@host/data", "sftp://me@host/data"),
        ("sftp://me:p%40w@host:2222/data", "sftp://me@host:2222/data"),
        ("sftp://:pw@host/data", "sftp://host/data"),
        ("sftp://me@host/data", "sftp://me@host/data"),
        ("sftp://host/run@2026/data", "sftp://host/run@2026/data"),
        ("s3://key:secret@bucket/prefix", "s3://key@bucket/prefix"),
        ("sftp://me:pw@host:notaport/data", "sftp://...@host:notaport/data"),
    ],
)
def test_without_password_keeps_everything_but_the_password(url: str, shown: str) -> None:
    assert without_password(url) == shown


def test_the_asyncssh_transport_needs_no_ssh_binary_and_is_used_only_when_chosen(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "bin"  # a PATH without `ssh`
    bare.mkdir()
    with sshd(tmp_path / "sshd") as server:
        root = mixed_tree(tmp_path / "data")
        env = {**server.env(GENLEDGER_SSH_TRANSPORT="asyncssh"), "PATH": str(bare)}
        done = _run(server.url(root), tmp_path / "a", env)
        assert done.returncode in (0, 1), done.stderr
        stats = orjson.loads((tmp_path / "a" / "s.json").read_bytes())
        assert same(stats) == same(collect(root, tmp_path / "local"))
        env = {**server.env(), "GENLEDGER_SSH_TRANSPORT": "putty"}
        done = _run(server.url(root), tmp_path / "bad", env)
        assert done.returncode == 2
        assert done.stderr.strip().endswith(
            "GENLEDGER_SSH_TRANSPORT='putty': expected openssh or asyncssh"
        )


def test_without_an_ssh_binary_the_error_names_the_explicit_fallback(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    root = mixed_tree(tmp_path / "data")
    done = _run(f"sftp://gpu-box{root}", tmp_path, {"PATH": str(bare)})
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"genledger collect: data root sftp://gpu-box{root}: cannot connect: no `ssh` on PATH: "
        "install OpenSSH's client, or set GENLEDGER_SSH_TRANSPORT=asyncssh"
    )


def test_a_connection_lost_between_refreshes_fails_one_call_then_is_made_anew(
    hop_env: Hops, tmp_path: Path
) -> None:
    root = mixed_tree(tmp_path / "data")
    remote = RemoteRoot.from_url(f"sftp://gpu-box{root}")
    remote.link().close()  # as if the network dropped it
    with pytest.raises(DataRootError, match="cannot list: cannot reach gpu-box"):
        remote.walk()
    local = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert [f.path for f in remote.walk()] == local


def _run(url: str, tmp: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`genledger collect URL` as a user runs it (no terminal input), with `extra` in the
    environment (and no genledger or SSH setting of ours but those)."""
    keep = ("GENLEDGER_", "SSH_AUTH_SOCK")
    env: dict[str, Any] = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
    env.update(extra)
    command = [sys.executable, "-m", "genledger.cli", "collect", url, "-o", str(tmp / "s.json")]
    command += ["--state", str(tmp / "state"), "-q"]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
