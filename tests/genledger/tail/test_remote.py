"""Remote data roots against real servers: OpenSSH's sshd and moto's S3, both on 127.0.0.1.

The same totals as the folder read locally, incremental == full over the wire, a refresh that
transfers the new bytes (counted through the filesystem layer), and each bad case a one-line
error with exit 2, fast, that moves no checkpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.config import Config, Switches
from genledger.refresh import parallel
from genledger.refresh.collect import refresh
from genledger.tail.remote import Transfer

from ..conftest import comparable
from ..refresh.test_parallel import rerun_alone
from ..shards import encode, gzip_being_written, jsonl, parquet, write
from .servers import S3Server, SSHServer, free_port, moto_s3, silent_host, sshd

RECORDS = [{"id": f"r{i}", "text": "answer", "completion_tokens": 1 + i % 9} for i in range(300)]
TOKENIZED = [
    {"input_ids": list(range(1 + i % 7)), "loss_mask": [1] * (1 + i % 7)} for i in range(50)
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    """One sshd for the module's tests."""
    with sshd(tmp_path_factory.mktemp("sshd")) as running:
        yield running


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One moto S3 server for the module's tests."""
    with moto_s3(tmp_path_factory.mktemp("moto")) as running:
        yield running


@pytest.fixture
def ssh_env(server: SSHServer, monkeypatch: pytest.MonkeyPatch) -> SSHServer:
    """The credentials of the test sshd in this process's environment."""
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return server


def mixed_tree(root: Path) -> Path:
    """Plain, nested, compressed and Parquet shards, an unrecognised and a stray file."""
    write(root / "plain" / "raw_responses.jsonl", jsonl(RECORDS[:100]))
    write(root / "plain" / "prompts.jsonl", jsonl(RECORDS))
    write(root / "nested" / "part-00001" / "raw_responses.jsonl.gz", encode(RECORDS, "jsonl.gz"))
    write(root / "nested" / "part-00002" / "raw_responses.jsonl.zst", encode(RECORDS, "jsonl.zst"))
    write(root / "nested" / "notes.md", b"not data")
    write(root / "tok" / "tokenized_data.parquet", parquet(TOKENIZED))
    write(root / "writing" / "raw_responses.jsonl.gz", gzip_being_written(jsonl(RECORDS[:7])))
    write(root / "stray.txt", b"x")
    return root


def collect(
    root: Path | str, where: Path, full: bool = False, switches: Switches | None = None
) -> dict[str, Any]:
    config = Config(
        data_root=root,
        stats_path=where / "s.json",
        state_dir=where / "state",
        switches=switches or Switches(),
    )
    return refresh(config, full=full).stats


def same(stats: dict[str, Any]) -> dict[str, Any]:
    """Comparable stats without the root's own name."""
    out = comparable(stats)
    out.pop("data_root")
    return out


def test_an_sftp_root_gives_the_totals_of_the_same_folder_read_locally(
    ssh_env: SSHServer, tmp_path: Path
) -> None:
    root = mixed_tree(tmp_path / "data")
    remote = collect(ssh_env.url(root), tmp_path / "remote")
    assert remote["data_root"] == ssh_env.url(root)
    assert same(remote) == same(collect(root, tmp_path / "local"))
    assert remote["datasets"]["nested"]["n_done"] == 600
    assert remote["unrecognised"]["paths"] == ["stray.txt"]


def test_incremental_over_sftp_equals_full_after_appends_a_torn_line_and_a_replacement(
    ssh_env: SSHServer, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    path = root / "ds" / "raw_responses.jsonl"
    write(path, jsonl(RECORDS[:50]))
    url = ssh_env.url(root)
    collect(url, tmp_path / "inc")
    steps = [
        lambda: _append(path, jsonl(RECORDS[50:80])),
        lambda: _append(path, b'{"id": "torn", "completion_to'),
        lambda: _append(path, b'kens": 4}\n' + jsonl(RECORDS[80:90])),
        lambda: write(path, jsonl([{"id": "new", "completion_tokens": 2}, *RECORDS[:20]])),
        lambda: write(root / "ds" / "part-1" / "raw_responses.parquet", parquet(RECORDS[:9])),
    ]
    for number, step in enumerate(steps):
        step()
        incremental = collect(url, tmp_path / "inc")
        full = collect(url, tmp_path / f"full{number}", full=True)
        assert same(incremental) == same(full)
    assert incremental["datasets"]["ds"]["n_done"] == 21 + 9


def test_forked_workers_read_an_sftp_root_as_one_process_does(
    ssh_env: SSHServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if rerun_alone(request):
        return
    forked = _spy_on_workers(monkeypatch)
    root = _bigger_tree(tmp_path / "data")
    url, two, one = ssh_env.url(root), Switches(workers=2), Switches(workers=1)
    remote = collect(url, tmp_path / "w2", switches=two)
    assert len(forked[-1]) == 10  # every file was read in a worker (on its own connection)
    assert same(remote) == same(collect(root, tmp_path / "l"))
    _append(root / "big1" / "raw_responses.jsonl", b'"x"}\n' + jsonl(RECORDS[:30]))
    incremental = collect(url, tmp_path / "w2", switches=two)
    assert len(forked[-1]) == 10  # the refresh went through the workers too
    assert same(incremental) == same(collect(url, tmp_path / "w1", switches=one))
    assert incremental["datasets"]["big1"]["n_done"] == 3 * 300 + 30


def test_forked_workers_read_an_s3_root_as_one_process_does(
    s3: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if rerun_alone(request):
        return
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    import s3fs

    forked = _spy_on_workers(monkeypatch)
    fs = s3fs.S3FileSystem(endpoint_url=s3.env()["AWS_ENDPOINT_URL"], skip_instance_cache=True)
    fs.mkdir("forked")
    root = _bigger_tree(tmp_path / "data")
    fs.put(str(root) + "/", "forked/exp/", recursive=True)
    stats = collect("s3://forked/exp", tmp_path / "w2", switches=Switches(workers=2))
    assert len(forked[-1]) == 10
    assert same(stats) == same(collect(root, tmp_path / "l"))


def _spy_on_workers(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every refresh forks (however few its bytes); the list gets what the workers read."""
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    forked: list[dict[str, Any]] = []
    real = parallel.scan_all

    def spy(jobs: list[parallel.ScanJob], workers: int | None) -> parallel.Scans:
        scans = real(jobs, workers)
        forked.append(scans.done)
        return scans

    monkeypatch.setattr("genledger.refresh.parallel.scan_all", spy)
    return forked


def _bigger_tree(root: Path) -> Path:
    """`mixed_tree`, three plain files of different sizes, each ending in a torn line, and a
    Parquet file of several row groups (which a local root would cut into pieces)."""
    mixed_tree(root)
    for n in range(3):
        write(root / f"big{n}" / "raw_responses.jsonl", jsonl(RECORDS * (n + 2)) + b'{"torn')
    rows = [
        {"input_ids": [(i * 7919 + j * 104729) % 150_000 for j in range(400)]} for i in range(200)
    ]
    write(root / "tok" / "part-1" / "tokenized_data.parquet", parquet(rows, row_group_size=50))
    return root


def test_a_thread_other_than_the_transports_keeps_remote_reads_in_process(
    ssh_env: SSHServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from genledger.tail.remote import RemoteRoot

    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    root = mixed_tree(tmp_path / "data")
    remote = RemoteRoot.from_url(ssh_env.url(root))
    jobs = [
        parallel.ScanJob(f.path, remote.source(f.path, f), f.path, "responses", None)
        for f in remote.walk()
        if f.path.endswith("raw_responses.jsonl")
    ]
    assert jobs
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="someone-elses")
    other.start()
    try:
        assert not parallel.scan_all(jobs, workers=2).done  # forking now is not safe
    finally:
        stop.set()
        other.join()


def test_a_refresh_over_sftp_transfers_the_new_bytes_not_the_file(
    ssh_env: SSHServer, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    path = root / "ds" / "raw_responses.jsonl"
    big = jsonl(RECORDS * 40)  # ~1.6 MB
    write(path, big)
    url = ssh_env.url(root)
    before = Transfer.bytes_read
    collect(url, tmp_path / "w")
    assert Transfer.bytes_read - before >= len(big)
    added = jsonl(RECORDS[:20])
    _append(path, added)
    before = Transfer.bytes_read
    stats = collect(url, tmp_path / "w")
    moved = Transfer.bytes_read - before
    assert moved <= len(added) + 64 * 1024, moved
    assert stats["datasets"]["ds"]["n_done"] == 12_020
    before = Transfer.bytes_read
    collect(url, tmp_path / "w")  # nothing new: a few checksummed windows at most
    assert Transfer.bytes_read - before <= 64 * 1024


BAD_SSH = {
    "unknown host key": lambda s, d: {**s.env(), "GENLEDGER_SSH_KNOWN_HOSTS": str(d / "empty")},
    "changed host key": lambda s, d: {
        **s.env(),
        "GENLEDGER_SSH_KNOWN_HOSTS": str(s.wrong_known_hosts),
    },
    "auth refused": lambda s, d: {**s.env(), "GENLEDGER_SSH_KEY": str(s.other_key)},
}


@pytest.mark.parametrize("case", [*BAD_SSH, "unreachable", "missing path"])
def test_each_bad_sftp_case_is_one_line_exit_2_fast_and_moves_no_checkpoint(
    server: SSHServer, tmp_path: Path, case: str
) -> None:
    root = tmp_path / "data"
    write(root / "ds" / "raw_responses.jsonl", jsonl(RECORDS[:10]))
    (tmp_path / "empty").write_text("")
    url = server.url(root)
    assert _cli(url, tmp_path, server.env()).returncode == 0
    _append(root / "ds" / "raw_responses.jsonl", jsonl(RECORDS[10:20]))
    state = _snapshot(tmp_path / "state")
    stats = (tmp_path / "s.json").read_bytes()
    env = server.env()
    if case in BAD_SSH:
        env = BAD_SSH[case](server, tmp_path)
    elif case == "unreachable":
        url = f"sftp://{server.user}@127.0.0.1:{free_port()}{root}"
    else:
        url = server.url(root / "nope")
    started = time.monotonic()
    done = _cli(url, tmp_path, env)
    assert time.monotonic() - started < 15
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("genledger collect: data root"), done.stderr
    assert "Traceback" not in done.stderr and "PRIVATE KEY" not in done.stderr
    assert _snapshot(tmp_path / "state") == state
    assert (tmp_path / "s.json").read_bytes() == stats


GIVE_UP_S = 15  # the promise for a host that does not answer
START_UP_S = 5  # interpreter, imports and the run's own bookkeeping, on a busy machine


@pytest.mark.parametrize("banner", ["", "SSH-2.0-OpenSSH_9.2p1"], ids=["silent", "banner only"])
def test_a_host_that_never_answers_the_handshake_is_given_up_within_15_s(
    server: SSHServer, tmp_path: Path, banner: str
) -> None:
    # Slow on purpose (~10 s each): the TCP connect succeeds, so only a timeout over the whole
    # connect, handshake and login can end it; without one, the run hangs past `timeout`.
    root = tmp_path / "data"
    write(root / "ds" / "raw_responses.jsonl", jsonl(RECORDS[:10]))
    with silent_host(banner) as port:
        url = f"sftp://{server.user}@127.0.0.1:{port}{root}"
        started = time.monotonic()
        try:
            done = _cli(url, tmp_path, server.env(), timeout=GIVE_UP_S + START_UP_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"not given up within {GIVE_UP_S} s (+{START_UP_S} s start-up)")
        took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"genledger collect: data root {url}: cannot connect: 127.0.0.1:{port} did not answer "
        "within 10 s"
    ], done.stderr
    assert took < GIVE_UP_S + START_UP_S
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "state").exists()


def test_the_code_location_and_its_sensor_read_an_sftp_root(
    ssh_env: SSHServer, tmp_path: Path
) -> None:
    import dagster as dg

    from assets.spec import load_location
    from automation.sensors import build_file_sensor, changed_datasets

    root = mixed_tree(tmp_path / "data")
    env = {"GENLEDGER_DATA_ROOT": ssh_env.url(root), "DAGSTER_HOME": str(tmp_path / "home")}
    location = load_location(env=env)
    assert location.problem is None
    assert [s.name for s in location.specs] == ["nested", "plain", "tok", "writing"]
    sensor = build_file_sensor(location)
    with dg.instance_for_test() as instance:
        first = sensor(dg.build_sensor_context(instance=instance, cursor=None))
        _append(root / "plain" / "raw_responses.jsonl", jsonl(RECORDS[:3]))
        second = sensor(dg.build_sensor_context(instance=instance, cursor=first.cursor))
    assert len(second.run_requests) == 1  # one refresh run
    assert changed_datasets(location, first.cursor, second.cursor) == {"plain"}


def test_monitor_once_reads_a_stats_file_over_sftp(server: SSHServer, tmp_path: Path) -> None:
    root = mixed_tree(tmp_path / "data")
    collect(root, tmp_path / "local")
    url = server.url(tmp_path / "local" / "s.json")
    command = [sys.executable, "-m", "genledger.cli", "monitor", url, "--once"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=_env(server.env()), check=False
    )
    assert done.returncode == 0, done.stderr
    assert "nested" in done.stdout and "600" in done.stdout


def test_an_s3_root_gives_the_totals_and_a_reupload_continues_from_the_checkpoint(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=s3.env()["AWS_ENDPOINT_URL"], skip_instance_cache=True)
    fs.mkdir("runs")
    root = mixed_tree(tmp_path / "data")
    fs.put(str(root) + "/", "runs/exp1/", recursive=True)
    url = "s3://runs/exp1"
    remote = collect(url, tmp_path / "s3")
    assert same(remote) == same(collect(root, tmp_path / "local"))
    added = jsonl(RECORDS[:15])
    fs.pipe("runs/exp1/plain/raw_responses.jsonl", jsonl(RECORDS[:100]) + added)  # re-uploaded
    before = Transfer.bytes_read
    again = collect(url, tmp_path / "s3")
    assert Transfer.bytes_read - before <= len(added) + 64 * 1024
    assert again["datasets"]["plain"]["n_done"] == 115
    assert same(again) == same(collect(url, tmp_path / "s3full", full=True))


def test_a_missing_bucket_is_one_line_and_exit_2(s3: S3Server, tmp_path: Path) -> None:
    started = time.monotonic()
    done = _cli("s3://no-such-bucket/x", tmp_path, s3.env())
    assert time.monotonic() - started < 15
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no-such-bucket" in done.stderr
    assert "testing-secret" not in done.stderr


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*.json"))}


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "AWS_"))}
    return {**env, **extra}


def _cli(
    url: str, tmp: Path, extra: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "genledger.cli", "collect", url, "-o", str(tmp / "s.json")]
    command += ["--state", str(tmp / "state"), "-q"]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=_env(extra), check=False
    )


def test_stats_of_a_remote_root_name_no_secret(ssh_env: SSHServer, tmp_path: Path) -> None:
    root = mixed_tree(tmp_path / "data")
    collect(ssh_env.url(root), tmp_path / "r")
    text = (tmp_path / "r" / "s.json").read_text()
    assert ssh_env.user_key.read_text().splitlines()[1] not in text
    assert orjson.loads(text)["data_root"].startswith("sftp://")


def test_a_connection_lost_mid_refresh_fails_it_and_the_next_refresh_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from genledger.tail.roots import DataRootError

    with sshd(tmp_path / "own-sshd") as own:
        for name, value in own.env().items():
            monkeypatch.setenv(name, value)
        root = tmp_path / "data"
        path = root / "ds" / "raw_responses.jsonl"
        write(path, jsonl(RECORDS * 20))
        url = own.url(root)
        collect(url, tmp_path / "inc")
        _append(path, jsonl(RECORDS * 20))
        state, stats = (
            _snapshot(tmp_path / "inc" / "state"),
            (tmp_path / "inc" / "s.json").read_bytes(),
        )
        counted = Transfer.add

        def lose_the_connection(data: bytes) -> bytes:
            own.stop()  # the server goes away after the first bytes of this refresh
            return counted(data)

        monkeypatch.setattr(Transfer, "add", lose_the_connection)
        with pytest.raises(DataRootError, match=url):
            collect(url, tmp_path / "inc")
        monkeypatch.setattr(Transfer, "add", counted)
        assert _snapshot(tmp_path / "inc" / "state") == state
        assert (tmp_path / "inc" / "s.json").read_bytes() == stats
        own.start()
        again = collect(url, tmp_path / "inc")
        assert same(again) == same(collect(url, tmp_path / "full", full=True))
        assert again["datasets"]["ds"]["n_done"] == 12_000


# Runs `genledger collect` with the server stopped by pid after the first bytes arrive (in
# whichever process reads them), so the loss falls in the middle of pipelined SFTP reads.
LOSE_MIDWAY = """
import os, signal, sys
import psutil
from genledger.refresh import parallel
from genledger.tail.remote import Transfer
from genledger.cli import main

parallel.MIN_PARALLEL_BYTES = 0
counted = Transfer.add

def lose(data):
    # Both workers may get here: whichever comes second finds the server already gone.
    try:
        sshd = psutil.Process(int(sys.argv[1]))
        doomed = [*sshd.children(recursive=True), sshd]
    except psutil.NoSuchProcess:
        doomed = []
    for gone in doomed:
        try:
            gone.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    return counted(data)

Transfer.add = lose
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_connection_lost_mid_read_is_one_line_however_many_requests_were_in_flight(
    tmp_path: Path, workers: str
) -> None:
    with sshd(tmp_path / "own-sshd") as own:
        root = tmp_path / "data"
        for name in ("a", "b"):
            write(root / name / "raw_responses.jsonl", jsonl(RECORDS * 800))  # ~10 MB each
        assert own.proc is not None
        done = subprocess.run(
            [
                *(sys.executable, "-c", LOSE_MIDWAY, str(own.proc.pid), "collect", own.url(root)),
                *("-o", str(tmp_path / "s.json"), "--state", str(tmp_path / "state"), "-q"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env({**own.env(), "GENLEDGER_WORKERS": workers}),
            check=False,
        )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    said = f"genledger collect: data root {own.url(root)}: cannot read: cannot reach 127.0.0.1"
    assert len(lines) == 1 and lines[0].startswith(said), done.stderr[-3000:]
    assert not (tmp_path / "s.json").exists() and _snapshot(tmp_path / "state") == {}


def test_a_file_deleted_on_the_remote_is_that_files_problem_only(
    ssh_env: SSHServer, tmp_path: Path
) -> None:
    from genledger.tail.remote import RemoteRoot

    root = mixed_tree(tmp_path / "data")
    remote = RemoteRoot.from_url(ssh_env.url(root))
    with pytest.raises(FileNotFoundError):
        remote.open(str(root / "plain" / "gone.jsonl"))
    (root / "plain" / "raw_responses.jsonl").unlink()
    stats = collect(ssh_env.url(root), tmp_path / "r")
    assert "raw_responses.jsonl" not in stats["datasets"]["plain"]["files"]
    assert stats["datasets"]["nested"]["n_done"] == 600
