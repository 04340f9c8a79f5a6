"""Benchmark an `sftp://` data root over a loopback OpenSSH server (issue 15), in one run.

    python benchmarks/remote.py [--mb 400] [--repeats 3] [--dir /tmp/genledger-remote]

Each round times, as subprocesses (start-up and handshake included, as for `ssh`):
- `ssh host cat FILES > /dev/null`: the transport's own limit (OpenSSH's default cipher), and
  the same with AES-GCM (the cipher genledger prefers);
- a raw asyncssh SFTP read of the same files with genledger's connection options, 8 MB reads
  (`python benchmarks/remote.py --raw URL`): the SSH library's own limit;
- `genledger collect --full sftp://...` in one process (`GENLEDGER_WORKERS=1`) and with the
  forked workers (the default), target >= 70 % of `ssh cat`'s speed;
then +1 %: append 1 % to every data file, refresh in-process and count the bytes read through
the filesystem layer; target <= 1.1x the appended bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from run import GENLEDGER, Sample, measure  # noqa: E402

from genledger.synth.corpus import append_share, write_corpus  # noqa: E402
from tests.genledger.tail.servers import SSHServer, sshd  # noqa: E402


def ssh_cat(server: SSHServer, files: list[Path], cipher: str = "") -> Sample:
    """The transport's limit: the same bytes through `ssh host cat` (OpenSSH's default cipher,
    or `cipher`)."""
    choice = ["-c", cipher] if cipher else []
    command = [
        "ssh", "-q", *choice, "-i", str(server.user_key), "-p", str(server.port),
        "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "BatchMode=yes",
        f"{server.user}@127.0.0.1", "cat", *map(str, files),
    ]  # fmt: skip
    return measure(["bash", "-c", " ".join(f"'{c}'" for c in command) + " > /dev/null"])


def raw(server: SSHServer, root: Path) -> Sample:
    """The SSH library's limit: asyncssh reading the same files, as a subprocess."""
    command = [sys.executable, __file__, "--raw", server.url(root)]
    return measure(command, env={**os.environ, **server.env()})


def raw_read(url: str) -> None:
    """Read every `*/*.jsonl` under the sftp:// `url` with asyncssh alone, 8 MB at a time."""
    import asyncssh

    from genledger.tail.remote import RemoteRoot, ssh_options

    root = RemoteRoot.from_url(url)

    async def read_all() -> int:
        got = 0
        connecting = asyncssh.connect(root.host, **ssh_options(root))
        async with connecting as conn, conn.start_sftp_client() as sftp:
            for path in sorted(await sftp.glob(f"{root.base}/*/*.jsonl")):
                async with sftp.open(path, "rb") as remote:
                    while data := await remote.read(8 << 20):
                        got += len(data)
        return got

    print(asyncio.run(read_all()))


def cold(server: SSHServer, root: Path, scratch: Path, workers: str = "") -> Sample:
    """`genledger collect --full` of the root over SFTP, as a subprocess."""
    command = [*GENLEDGER, "collect", server.url(root), "-o", str(scratch / "s.json")]
    env = {**os.environ, **server.env(), "GENLEDGER_WORKERS": workers}
    return measure([*command, "--state", str(scratch / "state"), "--full", "-q"], env=env)


def refresh_bytes(server: SSHServer, root: Path, scratch: Path) -> tuple[int, int]:
    """(bytes appended, bytes read over the wire by the refresh after a 1 % append)."""
    os.environ.update(server.env())
    from genledger.config import Config
    from genledger.refresh.collect import refresh
    from genledger.tail.remote import Transfer

    config = Config(
        data_root=server.url(root), stats_path=scratch / "i.json", state_dir=scratch / "istate"
    )
    refresh(config)
    added = append_share(root, 0.01)
    before = Transfer.bytes_read
    refresh(config)
    return added, Transfer.bytes_read - before


def main() -> None:
    """Run the measurements, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=400.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/genledger-remote"))
    parser.add_argument("--raw", metavar="URL", help="only read URL's files with asyncssh")
    args = parser.parse_args()
    if args.raw:
        raw_read(args.raw)
        return
    root = args.dir / "data"
    write_corpus(root, args.mb)
    files = sorted(root.glob("*/*.jsonl"))
    mb = sum(f.stat().st_size for f in files) / 1e6
    runs: dict[str, list[tuple[Sample, float]]] = {name: [] for name in RUNS}
    scratch = args.dir / "run"
    with sshd(args.dir / "sshd") as server:
        for _ in range(args.repeats):  # alternating rounds: machine load hits all alike
            for name, run in [
                ("ssh cat", lambda: ssh_cat(server, files)),
                ("ssh -c aes128-gcm cat", lambda: ssh_cat(server, files, AES_GCM)),
                ("raw asyncssh read", lambda: raw(server, root)),
                ("collect, 1 process", lambda: cold(server, root, scratch, "1")),
                ("collect", lambda: cold(server, root, scratch)),
            ]:
                runs[name].append(with_server_cpu(server, run))
        added, moved = refresh_bytes(server, root, scratch)
    report(runs, mb, args.repeats)
    print(
        f"+1 % refresh: {added / 1e6:.2f} MB appended, {moved / 1e6:.2f} MB read over the wire "
        f"= {moved / added:.2f}x (target <= 1.1x)"
    )


def with_server_cpu(server: SSHServer, run: Callable[[], Sample]) -> tuple[Sample, float]:
    """The run's sample and the CPU seconds sshd spent serving it (its finished sessions)."""

    def spent() -> float:
        assert server.proc is not None
        times = psutil.Process(server.proc.pid).cpu_times()
        return float(times.children_user + times.children_system)

    before = spent()
    sample = run()
    time.sleep(0.3)  # the session exits and is reaped just after the client
    return sample, spent() - before


AES_GCM = "aes128-gcm@openssh.com"
RUNS = ("ssh cat", "ssh -c aes128-gcm cat", "raw asyncssh read", "collect, 1 process", "collect")


def report(runs: dict[str, list[tuple[Sample, float]]], mb: float, repeats: int) -> None:
    """Medians, MB/s, CPU (ours and sshd's) and each run's speed as a share of `ssh cat`'s in
    the same round; the floor is the run's CPU spread over every usable core."""
    cores = len(os.sched_getaffinity(0))
    print(f"corpus {mb:.0f} MB over loopback sftp; {repeats} rounds; medians; {cores} cores")
    print(
        "| run | seconds | MB/s | client CPU s | sshd CPU s | CPU floor s | "
        "speed / ssh cat (same round) |\n|---|---|---|---|---|---|---|"
    )
    for name, pairs in runs.items():
        seconds = statistics.median(s.seconds for s, _ in pairs)
        cpu = statistics.median(s.cpu for s, _ in pairs)
        served = statistics.median(c for _, c in pairs)
        share = statistics.median(
            ref.seconds / s.seconds for (ref, _), (s, _) in zip(runs["ssh cat"], pairs, strict=True)
        )
        print(
            f"| {name} | {seconds:.2f} | {mb / seconds:.0f} | {cpu:.2f} | {served:.2f} | "
            f"{(cpu + served) / cores:.2f} | {share:.0%} |"
        )
    rss = max(s.tree_rss for s, _ in runs["collect"]) / 1e6
    print(f"target: collect >= 70 % of ssh cat; collect's peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
