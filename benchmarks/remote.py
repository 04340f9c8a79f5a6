"""Benchmark an `sftp://` root over loopback OpenSSH, direct and through a jump host, in one run.

    python benchmarks/remote.py [--mb 400] [--repeats 5] [--dir /tmp/genledger-remote]
                                [--libraries]

Two sshd on 127.0.0.1 (the target, and a jump host in front of it), one ssh config naming
them `direct` and `jumped` (`ProxyJump`); OpenSSH's default cipher everywhere. Each round
(alternating, so machine load hits all alike) times as subprocesses, start-up and handshakes
included:
- `ssh HOST cat FILES > /dev/null`, direct and jumped: the link's own limit;
- `genledger collect --full sftp://HOST/...`, direct and jumped (target >= 70 % of `ssh cat`'s
  speed over the same hops, in the same round), and direct through a ControlMaster of the
  config (the workers' sessions share the first connection: no handshake each);
- `genledger collect --full` of the same folder read locally: the parsing alone;
and with `--libraries`, SFTP clients reading the same files over `ssh -s direct sftp`'s pipes:
ours, paramiko's `SFTPClient` (when installed), asyncssh's `SFTPClient` (its handler over the
pipes), and OpenSSH's own `sftp` program.
Client CPU is every process the run started (workers and `ssh` included, reaped by this
script as subreaper), sshd CPU the finished sessions of both servers. Then +1 %: append 1 %
to every data file and refresh in-process, counting the bytes read over SFTP (target <= 1.1x
the appended bytes), direct and jumped.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from run import GENLEDGER  # noqa: E402

from genledger.synth.corpus import append_share, write_corpus  # noqa: E402
from tests.genledger.tail.servers import SSHServer, client_config, sshd  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Run:
    """One timed command: wall seconds, CPU of every process it started, sshd's CPU."""

    seconds: float
    cpu: float
    served: float


class Bench:
    """The servers, the config and the corpus of one benchmark run."""

    def __init__(self, target: SSHServer, jump: SSHServer, config: Path, root: Path) -> None:
        self.target, self.jump, self.config, self.root = target, jump, config, root
        self.files = sorted(root.glob("*/*.jsonl"))
        self.env = {**os.environ, "GENLEDGER_SSH_CONFIG": str(config)}
        for name in ("GENLEDGER_SSH_KEY", "GENLEDGER_SSH_KNOWN_HOSTS", "GENLEDGER_WORKERS"):
            self.env.pop(name, None)

    def time(self, command: list[str]) -> Run:
        """Run `command`, wait for it and every process it left behind (we are their
        subreaper), and take the CPU of them all and of both sshd's finished sessions."""
        served, before = self.served(), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _, err = proc.communicate()
        seconds = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{command[:4]} failed ({proc.returncode}): {err.decode()[-2000:]}")
        reap_orphans()
        time.sleep(0.3)  # sshd's sessions exit and are reaped just after the client
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return Run(seconds, cpu, self.served() - served)

    def served(self) -> float:
        total = 0.0
        for server in (self.target, self.jump):
            assert server.proc is not None
            times = psutil.Process(server.proc.pid).cpu_times()
            total += times.children_user + times.children_system
        return total

    def ssh_cat(self, host: str) -> Run:
        """The link's limit: the same bytes through `ssh HOST cat`."""
        remote = "cat " + " ".join(shlex.quote(str(f)) for f in self.files)
        ssh = f"ssh -F {shlex.quote(str(self.config))} {host} {shlex.quote(remote)}"
        return self.time(["bash", "-c", ssh + " > /dev/null"])

    def collect(self, host: str, scratch: Path) -> Run:
        """`genledger collect --full` of the root over SFTP, as a subprocess."""
        command = [
            *GENLEDGER,
            "collect",
            f"sftp://{host}{self.root}",
            "-o",
            str(scratch / "s.json"),
        ]
        return self.time([*command, "--state", str(scratch / "state"), "--full", "-q"])

    def local(self, scratch: Path) -> Run:
        """`genledger collect --full` of the same folder read locally: the parsing alone."""
        command = [*GENLEDGER, "collect", str(self.root), "-o", str(scratch / "local.json")]
        return self.time([*command, "--state", str(scratch / "local"), "--full", "-q"])

    def raw(self, client: str) -> Run:
        """An SFTP client alone reading the same files over `ssh -s direct sftp`'s pipes."""
        if client == "openssh sftp":
            batch = self.root.parent / "sftp-batch"
            batch.write_text("".join(f'get "{f}" /dev/null\n' for f in self.files))
            ssh = ["sftp", "-q", "-F", str(self.config), "-b", str(batch), "direct"]
            return self.time(["bash", "-c", shlex.join(ssh) + " > /dev/null"])
        return self.time([sys.executable, __file__, "--raw", client, *map(str, self.files)])


def reap_orphans(timeout: float = 10) -> None:
    """Wait for every process left to us (ssh outliving the collect that started it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


# -- the raw SFTP clients (run as `--raw CLIENT FILES...`) -----------------------------------


def raw_ours(files: list[str]) -> int:
    """Our client, as the remote root uses it: 8 MB reads."""
    from genledger.tail.openssh import SSHConnection

    connection = SSHConnection("direct", None, None, 10, 15)
    got = 0
    for path in files:
        handle = connection.sftp.open(path)
        size = connection.sftp.stat(path).size
        for offset in range(0, size, 8 << 20):
            got += len(connection.sftp.read(handle, offset, 8 << 20))
        connection.sftp.close_handle(handle)
    connection.close()
    return got


def _ssh_pipes() -> subprocess.Popen[bytes]:
    config = os.environ["GENLEDGER_SSH_CONFIG"]
    command = ["ssh", "-F", config, "-s", "direct", "sftp"]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def raw_paramiko(files: list[str]) -> int:
    """paramiko's SFTPClient over the pipes (a socket-like wrapper), its readv pipelining,
    255 KB requests (its default of 32 KB is 2.3x slower)."""
    import paramiko

    proc = _ssh_pipes()
    assert proc.stdin is not None and proc.stdout is not None
    reading, writing = proc.stdout.fileno(), proc.stdin.fileno()

    class Pipes:
        def send(self, data: bytes) -> int:
            return os.write(writing, data)

        def recv(self, size: int) -> bytes:
            return os.read(reading, size)

        def get_name(self) -> str:
            return "ssh"

        def close(self) -> None:
            os.close(writing)

    paramiko.SFTPFile.MAX_REQUEST_SIZE = 255 * 1024
    client = paramiko.SFTPClient(Pipes())  # type: ignore[arg-type]
    got = 0
    for path in files:
        size = client.stat(path).st_size or 0
        with client.open(path, "rb") as remote:
            for offset in range(0, size, 8 << 20):
                for block in remote.readv([(offset, min(8 << 20, size - offset))]):
                    got += len(block)
    client.close()
    proc.wait()
    return got


def raw_asyncssh(files: list[str]) -> int:
    """asyncssh's SFTPClient over the pipes: its (internal) handler given stream adapters,
    8 MB reads as sshfs does them."""
    from asyncssh import sftp
    from asyncssh.logging import logger

    class Reader:
        def __init__(self, stream: asyncio.StreamReader) -> None:
            self.stream, self.logger = stream, logger

        async def readexactly(self, size: int) -> bytes:
            return await self.stream.readexactly(size)

        def get_extra_info(self, name: str, default: object = None) -> object:
            return "SSH-2.0-OpenSSH_9" if name == "server_version" else default

    class Writer:
        def __init__(self, stream: asyncio.StreamWriter) -> None:
            self.stream, self.channel = stream, self

        def write(self, data: bytes) -> None:
            self.stream.write(data)

        def is_closing(self) -> bool:
            return self.stream.is_closing()

        def close(self) -> None:
            self.stream.close()

    async def read_all() -> int:
        command = ["ssh", "-F", os.environ["GENLEDGER_SSH_CONFIG"], "-s", "direct", "sftp"]
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, limit=1 << 20
        )
        assert proc.stdin is not None and proc.stdout is not None
        loop = asyncio.get_running_loop()
        handler = sftp.SFTPClientHandler(
            loop,
            "strict",
            Reader(proc.stdout),
            Writer(proc.stdin),
            3,  # type: ignore[arg-type]
        )
        await handler.start()
        receiving = asyncio.ensure_future(handler.recv_packets())
        await handler.request_limits()
        client = sftp.SFTPClient(handler, "utf-8", "strict")
        got = 0
        for path in files:
            async with client.open(path, "rb") as remote:
                while data := await remote.read(8 << 20):
                    got += len(data)
        proc.stdin.close()
        await proc.wait()
        receiving.cancel()
        return got

    return asyncio.run(read_all())


RAW = {"ours": raw_ours, "paramiko": raw_paramiko, "asyncssh": raw_asyncssh}


# -- the run ---------------------------------------------------------------------------------


def refresh_bytes(bench: Bench, host: str, scratch: Path) -> tuple[int, int]:
    """(bytes appended, bytes read over SFTP by the refresh after a 1 % append)."""
    os.environ.update({"GENLEDGER_SSH_CONFIG": str(bench.config)})
    from genledger.config import Config
    from genledger.refresh.collect import refresh
    from genledger.tail.remote import Transfer

    config = Config(
        data_root=f"sftp://{host}{bench.root}",
        stats_path=scratch / "i.json",
        state_dir=scratch / "istate",
    )
    refresh(config)
    added = append_share(bench.root, 0.01)
    before = Transfer.bytes_read
    refresh(config)
    return added, Transfer.bytes_read - before


def main() -> None:
    """Run the measurements, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=400.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-remote"))
    parser.add_argument("--libraries", action="store_true", help="also time SFTP clients alone")
    parser.add_argument("--raw", nargs="+", metavar=("CLIENT", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.raw:
        print(RAW[args.raw[0]](args.raw[1:]))
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    root = args.dir / "data"
    write_corpus(root, args.mb)
    mb = sum(f.stat().st_size for f in sorted(root.glob("*/*.jsonl"))) / 1e6
    scratch = args.dir / "run"
    with sshd(args.dir / "target") as target, sshd(args.dir / "jump") as jump:
        config = _config(args.dir / "ssh_config", target, jump)
        bench = Bench(target, jump, config, root)
        runs = _runs(bench, scratch, args.libraries)
        results: dict[str, list[Run]] = {name: [] for name in runs}
        for _ in range(args.repeats):  # alternating rounds: machine load hits all alike
            for name, run in runs.items():
                results[name].append(run())
        report(results, mb, args.repeats)
        for host in ("direct", "jumped"):
            added, moved = refresh_bytes(bench, host, scratch / host)
            print(
                f"+1 % refresh ({host}): {added / 1e6:.2f} MB appended, {moved / 1e6:.2f} MB "
                f"read over SFTP = {moved / added:.2f}x (target <= 1.1x)"
            )


def _config(path: Path, target: SSHServer, jump: SSHServer) -> Path:
    """`direct`, `shared` (a ControlMaster: the workers' sessions share the parent's
    connection) and `jumped` (through `hop`), keys from files."""
    both = {"HostName": "127.0.0.1", "User": target.user, "IdentitiesOnly": "yes"}
    direct = {**both, "Port": str(target.port), "IdentityFile": str(target.user_key)}
    sockets = path.parent / "cm"
    sockets.mkdir(exist_ok=True)
    shared = {"ControlMaster": "auto", "ControlPath": f"{sockets}/%C", "ControlPersist": "no"}
    return client_config(
        path,
        [target.known_hosts, jump.known_hosts],
        {
            "hop": {**both, "Port": str(jump.port), "IdentityFile": str(jump.user_key)},
            "direct": direct,
            "shared": {**direct, **shared},
            "jumped": {
                **both,
                "Port": str(target.port),
                "IdentityFile": str(target.user_key),
                "ProxyJump": "hop",
            },
        },
    )


def _runs(bench: Bench, scratch: Path, libraries: bool) -> dict[str, Callable[[], Run]]:
    runs: dict[str, Callable[[], Run]] = {
        "ssh direct cat": lambda: bench.ssh_cat("direct"),
        "collect direct": lambda: bench.collect("direct", scratch / "direct"),
        "collect direct, a ControlMaster in the config": lambda: bench.collect(
            "shared", scratch / "shared"
        ),
        "ssh jumped cat": lambda: bench.ssh_cat("jumped"),
        "collect jumped": lambda: bench.collect("jumped", scratch / "jumped"),
        "collect of the same folder, local (no transfer)": lambda: bench.local(scratch),
    }
    if libraries:
        clients = ["ours", "asyncssh", "openssh sftp"]
        try:
            import paramiko  # noqa: F401

            clients.insert(1, "paramiko")
        except ImportError:
            print("paramiko is not installed: its row is left out")
        for client in clients:
            runs[f"raw SFTP read: {client}"] = lambda client=client: bench.raw(client)  # type: ignore[misc]
    return runs


def report(results: dict[str, list[Run]], mb: float, repeats: int) -> None:
    """Medians, MB/s, CPU (ours and sshd's), and each run's speed as a share of `ssh cat`'s
    over the same hops in the same round."""
    cores = len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    print(
        f"corpus {mb:.0f} MB over loopback sftp; {repeats} rounds; medians; {cores} cores; "
        f"load {load:.1f} at the end"
    )
    print("| run | seconds | MB/s | client CPU s | sshd CPU s | speed / ssh cat (same round) |")
    print("|---|---|---|---|---|---|")
    for name, runs in results.items():
        reference = results["ssh jumped cat" if "jumped" in name else "ssh direct cat"]
        # (the local collect's share says how near the parsing alone comes to the target)
        share = statistics.median(
            r.seconds / s.seconds for r, s in zip(reference, runs, strict=True)
        )
        seconds = statistics.median(s.seconds for s in runs)
        cpu = statistics.median(s.cpu for s in runs)
        served = statistics.median(s.served for s in runs)
        speed = f"{mb / seconds:.0f} | {cpu:.2f} | {served:.2f} | {share:.0%}"
        print(f"| {name} | {seconds:.2f} | {speed} |")
    print("target: collect >= 70 % of ssh cat over the same hops")


if __name__ == "__main__":
    main()
