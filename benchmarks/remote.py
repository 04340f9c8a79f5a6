"""Benchmark an `sftp://` data root over a loopback OpenSSH server (issue 15), in one run.

    python benchmarks/remote.py [--mb 400] [--repeats 3] [--dir /tmp/genledger-remote]

- cold: `genledger collect --full sftp://...` against `ssh host cat FILES > /dev/null` (the
  transport's own limit) on the same files; target >= 70 % of its speed;
- +1 %: append 1 % to every data file, refresh in-process and count the bytes read through
  the filesystem layer; target <= 1.1x the appended bytes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from corpus import append_share, write_corpus  # noqa: E402
from run import GENLEDGER, Sample, measure  # noqa: E402

from tests.genledger.tail.servers import SSHServer, sshd  # noqa: E402


def ssh_cat(server: SSHServer, files: list[Path]) -> Sample:
    """The transport's limit: the same bytes through `ssh host cat`."""
    command = [
        "ssh", "-q", "-i", str(server.user_key), "-p", str(server.port),
        "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "BatchMode=yes",
        f"{server.user}@127.0.0.1", "cat", *map(str, files),
    ]  # fmt: skip
    return measure(["bash", "-c", " ".join(f"'{c}'" for c in command) + " > /dev/null"])


def cold(server: SSHServer, root: Path, scratch: Path) -> Sample:
    """`genledger collect --full` of the root over SFTP, as a subprocess."""
    command = [*GENLEDGER, "collect", server.url(root), "-o", str(scratch / "s.json")]
    env = {**os.environ, **server.env()}
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
    args = parser.parse_args()
    root = args.dir / "data"
    write_corpus(root, args.mb)
    files = sorted(root.glob("*/*.jsonl"))
    mb = sum(f.stat().st_size for f in files) / 1e6
    with sshd(args.dir / "sshd") as server:
        ours, ref = [], []
        for _ in range(args.repeats):  # alternating rounds
            ref.append(ssh_cat(server, files))
            ours.append(cold(server, root, args.dir / "run"))
        added, moved = refresh_bytes(server, root, args.dir / "run")
    ref_s = statistics.median(s.seconds for s in ref)
    our_s = statistics.median(s.seconds for s in ours)
    rss = max(s.tree_rss for s in ours) / 1e6
    print(f"corpus {mb:.0f} MB over loopback sftp; {args.repeats} rounds; medians")
    print(f"ssh cat > /dev/null: {ref_s:.2f} s ({mb / ref_s:.0f} MB/s)")
    print(
        f"collect --full sftp://: {our_s:.2f} s ({mb / our_s:.0f} MB/s), "
        f"{ref_s / our_s:.0%} of ssh cat (target >= 70 %), peak RSS {rss:.0f} MB"
    )
    print(
        f"+1 % refresh: {added / 1e6:.2f} MB appended, {moved / 1e6:.2f} MB read over the wire "
        f"= {moved / added:.2f}x (target <= 1.1x)"
    )


if __name__ == "__main__":
    main()
