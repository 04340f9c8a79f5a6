"""The SFTP client against OpenSSH's real `sftp-server`, run over pipes (no ssh in between):
ranged reads equal the file's bytes however they cross requests and the window, short files
end a read early, listings span many replies, odd names survive, and a server that dies,
stays silent or talks nonsense is one exception, never a hang.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.tail import sftp
from genledger.tail.links import SFTPLink
from genledger.tail.sftp import ConnectionLost, Pipe, ProtocolError, SFTPClient

SFTP_SERVER = "/usr/lib/openssh/sftp-server"


class Served:
    """A process speaking on a pipe pair, and our client over it."""

    def __init__(self, command: list[str], idle_timeout: float = 10) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        pipe = Pipe(self.proc.stdout.fileno(), self.proc.stdin.fileno(), self.lost, idle_timeout)
        self.sftp = SFTPClient(pipe)

    def lost(self) -> ConnectionLost:
        return ConnectionLost(f"server exited ({self.proc.wait(5)})")

    def stop(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)


@pytest.fixture
def server() -> Iterator[SFTPClient]:
    """OpenSSH's sftp-server over pipes, started."""
    if not os.path.exists(SFTP_SERVER):
        pytest.skip("OpenSSH's sftp-server is missing (openssh-sftp-server)")
    served = Served([SFTP_SERVER])
    served.sftp.start(10)
    yield served.sftp
    served.stop()


BLOB = bytes(range(256)) * 4099  # ~1 MB that no two offsets share a pattern of


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("blob") / "blob.bin"
    path.write_bytes(BLOB)
    return path


def test_the_server_tells_its_read_size_and_a_read_spans_many_requests(
    server: SFTPClient, blob: Path
) -> None:
    assert server.read_size == sftp.MAX_READ  # OpenSSH's limits@openssh.com
    handle = server.open(str(blob))
    assert server.read(handle, 0, len(BLOB)) == BLOB  # 4 requests
    server.close_handle(handle)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    reads=st.lists(
        st.tuples(st.integers(0, len(BLOB) + 10), st.integers(0, len(BLOB))), min_size=1, max_size=6
    ),
    step=st.sampled_from([1000, 7919, 65536]),
    window=st.sampled_from([1, 3, 64]),
)
def test_any_ranged_read_equals_the_files_bytes_whatever_the_request_size_and_window(
    server: SFTPClient,
    blob: Path,
    reads: list[tuple[int, int]],
    step: int,
    window: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sftp, "WINDOW", window)
    server.read_size = step
    handle = server.open(str(blob))
    for offset, length in reads:
        length = min(length, 40 * step)  # at most 40 requests: quick, and still many windows
        assert server.read(handle, offset, length) == BLOB[offset : offset + length]
    server.close_handle(handle)
    assert server.stat(str(blob)).size == len(BLOB)  # handles closed, replies all read


def test_a_file_cut_short_after_it_was_opened_ends_the_read_where_it_now_ends(
    server: SFTPClient, tmp_path: Path
) -> None:
    path = tmp_path / "shrinks.jsonl"
    path.write_bytes(BLOB)
    handle = server.open(str(path))
    os.truncate(path, 300_000)
    assert server.read(handle, 0, len(BLOB)) == BLOB[:300_000]
    assert server.read(handle, 400_000, 10) == b""


def test_a_folder_of_many_entries_is_listed_whole_and_a_missing_one_is_its_own_error(
    server: SFTPClient, tmp_path: Path
) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for n in range(450):  # OpenSSH replies with 100 names at most: five rounds
        (many / f"part-{n:04d}.jsonl").write_bytes(b"x" * n)
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "a").write_bytes(b"")
    listed = server.listdirs([str(many), str(tmp_path / "nope"), str(tmp_path / "small")])
    assert isinstance(listed[0], list) and isinstance(listed[2], list)
    assert sorted(name for name, _ in listed[0]) == [f"part-{n:04d}.jsonl" for n in range(450)]
    assert {name: a.size for name, a in listed[0]}["part-0449.jsonl"] == 449
    assert isinstance(listed[1], FileNotFoundError)
    assert [name for name, _ in listed[2]] == ["a"]
    assert server.stat(str(many)).is_dir  # the session goes on


def test_names_that_are_not_utf8_come_back_escaped_and_open_as_they_are(
    server: SFTPClient, tmp_path: Path
) -> None:
    odd = os.fsencode(str(tmp_path)) + b"/bad\xff\xfe.jsonl"
    with open(odd, "wb") as out:
        out.write(b'{"a": 1}\n')
    [listing] = server.listdirs([str(tmp_path)])
    assert isinstance(listing, list)
    [(name, attrs)] = listing
    assert name == os.fsdecode(b"bad\xff\xfe.jsonl") and attrs.is_file
    handle = server.open(f"{tmp_path}/{name}")
    assert server.read(handle, 0, 100) == b'{"a": 1}\n'


def test_a_path_the_server_refuses_is_an_oserror_and_the_session_goes_on(
    server: SFTPClient, tmp_path: Path
) -> None:
    with pytest.raises(FileNotFoundError):
        server.stat(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        server.open(str(tmp_path / "missing"))
    found = server.stat_many([str(tmp_path), str(tmp_path / "missing")])
    assert not isinstance(found[0], OSError) and found[0].is_dir
    assert isinstance(found[1], FileNotFoundError)
    assert server.realpath(str(tmp_path / "." / "")) == str(tmp_path.resolve())


def test_a_refused_open_is_a_permission_error(tmp_path: Path) -> None:
    if not os.path.exists(SFTP_SERVER):
        pytest.skip("OpenSSH's sftp-server is missing")
    (tmp_path / "f").write_bytes(b"x")
    served = Served([SFTP_SERVER, "-P", "open"])  # OpenSSH's own way to refuse a request
    try:
        served.sftp.start(10)
        with pytest.raises(PermissionError):
            served.sftp.open(str(tmp_path / "f"))
        assert served.sftp.stat(str(tmp_path / "f")).size == 1
    finally:
        served.stop()


def test_a_server_that_dies_mid_read_is_connection_lost_and_the_client_stays_closed(
    server: SFTPClient, blob: Path, tmp_path: Path
) -> None:
    big = tmp_path / "big"
    big.write_bytes(BLOB * 20)
    handle = server.open(str(big))
    real = server.pipe.fill
    calls = []

    def die_after_some(view: memoryview) -> None:
        calls.append(len(view))
        if len(calls) == 20:
            os.killpg(_server_pid(), 9)
        real(view)

    server.pipe.fill = die_after_some  # type: ignore[method-assign]
    with pytest.raises(ConnectionLost):
        server.read(handle, 0, len(BLOB) * 20)
    assert server.closed
    with pytest.raises(ConnectionLost):
        server.stat(str(blob))


def _server_pid() -> int:
    import psutil

    me = psutil.Process()
    [child] = [c for c in me.children() if c.name() == "sftp-server"]
    return int(child.pid)


HELLO = bytes.fromhex("000000050200000003")  # VERSION 3, no extensions
STRAY = bytes.fromhex("000000116500000063000000000000000000000000")  # id 99


@pytest.mark.parametrize("says", [b"", HELLO + STRAY], ids=["nothing", "a reply never asked"])
def test_a_silent_or_garbled_server_is_an_exception_within_its_timeout(says: bytes) -> None:
    script = (
        "import sys, time; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1])); "
        "sys.stdout.flush(); time.sleep(60)"
    )
    served = Served([sys.executable, "-c", script, says.hex()], idle_timeout=0.5)
    try:
        with pytest.raises(ProtocolError if says else TimeoutError):
            served.sftp.start(1)
            served.sftp.stat("/")
        assert served.sftp.closed
    finally:
        served.stop()


class _Over:
    """What `SFTPLink` needs of a connection: its SFTP session."""

    def __init__(self, client: SFTPClient) -> None:
        self.sftp = client

    def close(self) -> None:
        pass


def test_the_walk_follows_links_once_skips_hidden_folders_and_loops_end(
    server: SFTPClient, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    (root / "ds" / "part-1").mkdir(parents=True)
    (root / "ds" / "part-1" / "raw_responses.jsonl").write_bytes(b"{}\n")
    (root / "ds" / ".cache").mkdir()
    (root / "ds" / ".cache" / "raw_responses.jsonl").write_bytes(b"{}\n")
    (root / "ds" / ".hidden.jsonl").write_bytes(b"")
    (root / "ds" / "loop").symlink_to(root)  # a folder reached again: walked once
    (root / "ds" / "linked.jsonl").symlink_to(root / "ds" / "part-1" / "raw_responses.jsonl")
    (root / "ds" / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "raw_responses.jsonl").write_bytes(b"{}\n{}\n")
    (root / "elsewhere").symlink_to(tmp_path / "outside")
    os.mkfifo(root / "ds" / "pipe.jsonl")  # not a regular file: never opened
    found = SFTPLink(_Over(server)).files(str(root))
    assert sorted((f.path, f.size) for f in found) == [
        ("ds/.hidden.jsonl", 0),
        ("ds/linked.jsonl", 3),
        ("ds/part-1/raw_responses.jsonl", 3),
        ("elsewhere/raw_responses.jsonl", 6),
    ]
