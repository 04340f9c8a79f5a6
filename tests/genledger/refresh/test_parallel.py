"""Scanning in forked workers gives the same stats as scanning file by file."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from genledger.config import Config, Switches
from genledger.refresh import parallel, split
from genledger.refresh.collect import refresh
from genledger.refresh.parallel import ScanJob, scan_all
from genledger.refresh.scan import scan_file

from ..conftest import comparable
from ..hard_lines import RESPONSE_LINES, TOKENIZED_LINES
from ..shards import parquet
from .canonical import canonical


def write_root(root: Path) -> None:
    """Several datasets of hard lines: defects, arrays, BOM/CRLF, torn tails, shards."""
    body = b"\n".join(RESPONSE_LINES) + b"\n"
    tok = b"\n".join(TOKENIZED_LINES) + b"\n"
    files = {
        "a/raw_responses.jsonl": b"\xef\xbb\xbf" + body.replace(b"\n", b"\r\n") + b'{"torn',
        "a/prompts.jsonl": b'{"p": 1}\n\n{"p": 2}\n',
        "b/raw_responses_00.jsonl": body,
        "b/raw_responses_01.jsonl": body + b'{"id": "x", "completion_tokens": 3}',
        "c/tokenized_data.jsonl": tok * 3 + b'{"input_ids": [1,',
        "d/raw_responses.jsonl": b"",
        "e dup/raw_responses.jsonl": body * 4,
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_root(tmp_path / "data")
    return tmp_path / "data"


ALONE = "GENLEDGER_TEST_ALONE"


def rerun_alone(request: pytest.FixtureRequest) -> bool:
    """Run this test in a fresh pytest when other suites left threads alive; True if it did.

    The pool (rightly) never forks a threaded process — a lock held by another thread would
    deadlock the child — and a long session leaves server threads behind. The CLI these tests
    model is single-threaded, so they run where it would: in a process of their own.
    """
    if threading.active_count() == 1 or os.environ.get(ALONE):
        return False
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", request.node.nodeid],
        cwd=request.config.rootpath,
        env={**os.environ, ALONE: "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return True


def stats_with(root: Path, where: Path, switches: Switches) -> dict:
    config = Config(
        data_root=root, stats_path=where / "s.json", state_dir=where / "st", switches=switches
    )
    refresh(config)
    with (root / "b" / "raw_responses_01.jsonl").open("ab") as out:  # finish the torn tail
        out.write(b"\n" + RESPONSE_LINES[0] + b"\n")
    return comparable(refresh(config).stats)


@pytest.mark.parametrize("audit", [False, True])
def test_forked_workers_give_the_same_stats_as_one_process(
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    audit: bool,
    request: pytest.FixtureRequest,
) -> None:
    if rerun_alone(request):
        return
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(split, "PIECE_BYTES", 1000)  # bigger files go in pieces
    used = []
    real = parallel.scan_all
    monkeypatch.setattr(
        "genledger.refresh.parallel.scan_all",
        lambda jobs, workers: used.append(real(jobs, workers)) or used[-1],
    )
    forked = stats_with(root, tmp_path / "p", Switches(workers=2, audit=audit))
    assert used and all(u.done for u in used)  # both refreshes really went through workers
    # Restore the file for the serial run (it was appended to above).
    write_root(root)
    serial = stats_with(root, tmp_path / "s", Switches(workers=1, audit=audit))
    assert forked == serial
    assert forked["totals"]["quality"]["malformed_lines"] > 0


@pytest.mark.parametrize("piece_bytes", [split.PIECE_BYTES, 700])  # whole files, or pieces
def test_scan_all_equals_scan_file_for_every_file(
    root: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, piece_bytes: int
) -> None:
    if rerun_alone(request):
        return
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(split, "PIECE_BYTES", piece_bytes)
    roles = {"raw": "responses", "tok": "tokenized", "pro": "prompts"}
    jobs = [
        ScanJob(str(p), p, p.name, roles[p.name[:3]], None) for p in sorted(root.glob("*/*.jsonl"))
    ]
    jobs.append(ScanJob("gone", root / "gone.jsonl", "gone.jsonl", "responses", None))
    assert any(split.plan(job.path, None) for job in jobs) == (piece_bytes < 1000)
    scans = scan_all(jobs, workers=2).done
    assert set(scans) == {job.key for job in jobs}
    for job in jobs:
        alone = scan_file(job.path, job.name, job.role, job.checkpoint)
        # a stream crossing a cut is listed where the join settles it: canonical order
        assert canonical(scans[job.key].delta.to_dict()) == canonical(alone.delta.to_dict())
        assert scans[job.key].read == alone.read
        assert scans[job.key].error == alone.error


def test_small_reads_stay_in_process(root: Path) -> None:
    jobs = [ScanJob(str(p), p, p.name, "responses", None) for p in root.glob("*/raw*.jsonl")]
    assert not scan_all(jobs, workers=2).done  # under MIN_PARALLEL_BYTES: not worth a fork
    assert not scan_all(jobs, workers=1).done


# what only sealed files, reads cut in pieces, Parquet row groups or a remote root need
UNUSED_BY_SMALL_LOCAL_READS = (
    "genledger.refresh.sealed",
    "genledger.refresh.split",
    "genledger.tail.parquet",
    "genledger.tail.remote",
)


def test_a_small_refresh_of_local_jsonl_never_imports_the_sealed_cut_or_remote_readers(
    root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    script = (
        "import sys\nfrom genledger.cli import main\ncode = main(sys.argv[1:])\n"
        f"print(code, sorted(set(sys.modules) & set({UNUSED_BY_SMALL_LOCAL_READS!r})))\n"
    )
    args = ["collect", str(root), "-o", f"{out}/s.json", "--state", f"{out}/st", "-q"]
    run = [sys.executable, "-c", script, *args]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1:] == ["[]"]  # the files were read: the scan half ran
    assert json.loads((out / "s.json").read_text())["totals"]["n_done"] > 0


TOKENS = [
    {"input_ids": list(range(i % 6)), "loss_mask": [1] * (i % 6) if i % 5 else [1, 0]}
    for i in range(90)
]
RESPONSES = [
    {"id": f"r{i % 70}", "completion_tokens": None if i % 17 == 3 else i % 9, "text": "ok"}
    for i in range(90)
]


def _a_piece_per_row_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scan forks, and a Parquet file goes in a piece per row group."""
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(parallel, "PARQUET_PIECE_BYTES", 1)


def test_parquet_row_group_pieces_equal_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if rerun_alone(request):
        return
    _a_piece_per_row_group(monkeypatch)
    files = {
        "tokenized_data.parquet": ("tokenized", parquet(TOKENS, row_group_size=8)),
        "raw_responses.parquet": ("responses", parquet(RESPONSES, row_group_size=7)),
    }
    jobs = []
    for name, (role, data) in files.items():
        (tmp_path / name).write_bytes(data)
        jobs.append(ScanJob(name, tmp_path / name, name, role, None))
    assert all(len(parallel._group_pieces(job, 1) or ()) > 10 for job in jobs)
    scans = scan_all(jobs, 2).done
    for job in jobs:
        alone = scan_file(job.path, job.name, job.role, job.checkpoint)
        # a stream crossing a cut is listed where the join settles it: canonical order
        assert canonical(scans[job.key].delta.to_dict()) == canonical(alone.delta.to_dict())
        assert scans[job.key].read == alone.read
    # the defects across pieces were seen: duplicate ids and rule failures
    assert scans["raw_responses.parquet"].delta.failures
    assert scans["tokenized_data.parquet"].delta.failures


def test_a_parquet_corrupt_in_one_piece_is_left_to_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if rerun_alone(request):
        return
    _a_piece_per_row_group(monkeypatch)
    data = bytearray(parquet(TOKENS, row_group_size=8))
    meta = pq.ParquetFile(io.BytesIO(bytes(data))).metadata
    at = meta.row_group(3).column(0).data_page_offset
    data[at : at + 64] = b"\xff" * 64
    path = tmp_path / "tokenized_data.parquet"
    path.write_bytes(bytes(data))
    job = ScanJob("t", path, path.name, "tokenized", None)
    # The whole read stops at the corrupt row group; later pieces would count rows after it.
    assert "t" not in scan_all([job], 2).done


REAL_SCAN = parallel._scan
DIE_MARK = "GENLEDGER_TEST_DIE_MARK"


def dies_once(piece: parallel.Piece) -> tuple[str, int, object]:
    """A worker's scan; the first worker to take a piece dies as the OOM killer kills (SIGKILL,
    no goodbye), the others scan as usual."""
    mark = Path(os.environ[DIE_MARK])
    try:
        mark.touch(exist_ok=False)
    except FileExistsError:
        return REAL_SCAN(piece)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def test_a_worker_killed_mid_scan_is_noticed_and_its_pieces_scanned_in_process(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if rerun_alone(request):
        return
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(split, "PIECE_BYTES", 700)
    roles = {"raw": "responses", "tok": "tokenized", "pro": "prompts"}
    jobs = [
        ScanJob(str(p), p, p.name, roles[p.name[:3]], None) for p in sorted(root.glob("*/*.jsonl"))
    ]
    expected = scan_all(jobs, workers=2)
    assert expected.done and not expected.notices
    monkeypatch.setenv(DIE_MARK, str(tmp_path / "died"))
    monkeypatch.setattr(parallel, "_scan", dies_once)
    done = scan_all(jobs, workers=2)
    assert (tmp_path / "died").exists()  # a worker really was killed
    assert done.notices == [parallel.WORKER_DIED]
    assert {k: v.delta.to_dict() for k, v in done.done.items()} == {
        k: v.delta.to_dict() for k, v in expected.done.items()
    }


def test_a_piece_of_short_lines_is_guessed_to_hold_many_records(tmp_path: Path) -> None:
    # what the parent makes before forking (`_shared_ahead`) is chosen by this guess alone
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    short.write_bytes(b'{"a": 1}\n' * 20_000)  # 180 kB, 20,000 lines
    long.write_bytes((b'{"t": "' + b"x" * 4_000 + b'"}\n') * 50)  # 200 kB, 50 lines
    pieces = {
        path: parallel.Piece(ScanJob(path.name, path, path.name, "responses", None), 0, None)
        for path in (short, long)
    }
    assert parallel._records_over(pieces[short], 8192)
    assert not parallel._records_over(pieces[short], 30_000)
    assert not parallel._records_over(pieces[long], 8192)
    assert parallel._records_over(pieces[long], 10)


@pytest.mark.parametrize("bulk", [True, False])
def test_a_big_refresh_read_in_place_checks_utf8_with_simdjson(root: Path, bulk: bool) -> None:
    # Files each under the bulk size, read in this process (one worker): whether simdjson's
    # check is loaded follows the refresh's new bytes in all, as it would for the pool.
    new = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from genledger.config import Config, Switches\n"
        "from genledger.fast import vector\n"
        "from genledger.refresh.collect import refresh\n"
        f"vector.BULK_BYTES = {new // 2 if bulk else new * 10}\n"
        "where = Path(sys.argv[2])\n"
        "config = Config(data_root=Path(sys.argv[1]), stats_path=where / 's.json',\n"
        "                state_dir=where / 'st', switches=Switches(workers=1))\n"
        "refresh(config)\n"
        "print(vector._loaded)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(root), str(root.parent / "out")],
        capture_output=True,
        text=True,
    )
    assert run.stdout.split() == [str(bulk)], run.stderr[-2000:]


# --- how many workers by default ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "busy"),
    [
        (b"0.00 0.01 0.05 1/120 4242\n", 0),  # only this process runs
        (b"2.10 2.40 3.20 3/131 9326\n", 2),
        (b"9.99 9.99 9.99 17/400 1\n", 16),
        (b"0.00 0.01 0.05\n", 0),  # no count: cannot tell
        (b"", 0),
        (b"0.1 0.1 0.1 x/5 1\n", 0),
    ],
)
def test_busy_cores_are_the_runnable_tasks_besides_this_one(
    tmp_path: Path, line: bytes, busy: int
) -> None:
    loadavg = tmp_path / "loadavg"
    loadavg.write_bytes(line)
    assert parallel.busy_cores(str(loadavg)) == busy
    assert parallel.busy_cores(str(tmp_path / "missing")) == 0


def test_the_default_workers_are_the_cores_no_other_process_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cores = len(os.sched_getaffinity(0))
    for busy, wanted in ((0, cores), (1, max(1, cores - 1)), (cores + 5, 1)):
        monkeypatch.setattr(parallel, "busy_cores", lambda busy=busy: busy)
        assert parallel.workers_wanted() == wanted
        assert parallel.workers_wanted(3) == 3  # as configured, whatever the load
