"""Faults a long run meets (docs/tailing.md): SIGKILL mid-collect, torn concurrent writes,
unreadable files and read-only mounts, and hostile bytes. Each ends with totals equal to a fresh
full scan."""

from __future__ import annotations

import ctypes
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.config import Config
from genledger.refresh.collect import refresh
from genledger.tail.lines import BOM

from ..conftest import Ledger, comparable, response_line

SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def collect_cmd(root: Path, stats: Path, state: Path) -> list[str]:
    """The `genledger collect` command line, run with this interpreter."""
    return [
        sys.executable,
        "-m",
        "genledger.cli",
        "collect",
        str(root),
        "-o",
        str(stats),
        "--state",
        str(state),
        "-q",
    ]


def oracle(root: Path, where: Path) -> dict[str, Any]:
    """A full scan with its own state: what any correct refresh of these bytes must say."""
    config = Config(data_root=root, stats_path=where / "s.json", state_dir=where / "st")
    return comparable(refresh(config, full=True).stats)


def grow(root: Path, rng: random.Random, datasets: int, lines: int, start: int) -> None:
    """Append `lines` records to random datasets, sometimes leaving a torn last line."""
    for i in range(start, start + lines):
        folder = root / f"ds{rng.randrange(datasets)}"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "raw_responses.jsonl").open("ab") as handle:
            handle.write(response_line(i, tokens=i % 17))


# --- SIGKILL at random moments ---------------------------------------------------------------


def test_collect_killed_at_random_moments_leaves_a_complete_stats_file_and_exact_totals(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    root, stats, state = tmp_path / "data", tmp_path / "out" / "stats.json", tmp_path / "state"
    grow(root, rng, datasets=4, lines=3000, start=0)
    subprocess.run(collect_cmd(root, stats, state), check=False)
    grow(root, rng, datasets=4, lines=600, start=3000)
    began = time.monotonic()
    subprocess.run(collect_cmd(root, stats, state), check=False)
    one_run = time.monotonic() - began  # an incremental run: what the kills interrupt
    written = 3600
    outcomes = []
    # Kill from mid-start-up to just after the end, so some kills land mid-write.
    moments = [0.3, 0.7, 0.85, 0.95, 1.05, 1.3]
    rng.shuffle(moments)
    for round_no, moment in enumerate(moments):
        grow(root, rng, datasets=4, lines=600, start=written)
        written += 600
        if round_no % 2:  # a torn tail that the next round completes
            with (root / "ds0" / "raw_responses.jsonl").open("ab") as handle:
                handle.write(b'{"id": "torn", "completion_')
        before = stats.read_bytes()
        exact = oracle(root, tmp_path / f"oracle{round_no}")
        proc = subprocess.Popen(collect_cmd(root, stats, state), start_new_session=True)
        time.sleep(moment * one_run)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        after = stats.read_bytes()
        outcomes.append("old stats" if after == before else "new stats")
        assert after == before or comparable(orjson.loads(after)) == exact
        for record in (state / "datasets").glob("*.json"):
            orjson.loads(record.read_bytes())  # every state record is whole
        resumed = refresh(Config(data_root=root, stats_path=stats, state_dir=state)).stats
        assert comparable(resumed) == exact
        if round_no % 2:
            with (root / "ds0" / "raw_responses.jsonl").open("ab") as handle:
                handle.write(b'tokens": 5}\n')
    print("killed collect left:", outcomes)
    final = refresh(Config(data_root=root, stats_path=stats, state_dir=state)).stats
    assert final["totals"]["n_done"] == written + 3
    assert final["totals"]["total_comp"] == sum(i % 17 for i in range(written)) + 3 * 5


# --- a writer tearing lines while refreshes run ---------------------------------------------

WRITER = """
import os, random, sys, time
import orjson
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for i in range(n):
    text = "é🙂\\u2028" * rng.randrange(4)
    line = orjson.dumps({"id": f"w{i}", "text": text, "completion_tokens": i % 13 + 1}) + b"\\n"
    cuts = sorted(rng.sample(range(1, len(line)), k=min(2, len(line) - 1)))
    for start, stop in zip([0, *cuts], [*cuts, len(line)]):
        os.write(fd, line[start:stop])  # torn: mid-key, mid-number, mid-UTF-8
        time.sleep(rng.random() * 0.001)
os.close(fd)
"""


def torn_writes_end_exact(ledger: Ledger, refresh: Callable[[], dict[str, Any]], n: int) -> None:
    """A writer tears `n` lines while `refresh` runs again and again: no refresh ever counts a
    malformed line or goes back, and the last one equals a fresh full scan."""
    ledger.append(b"")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(ledger.file()), str(n), "3"], start_new_session=True
    )
    seen = [0]
    try:
        while writer.poll() is None:
            block = ledger.block(refresh())
            assert block["quality"]["malformed_lines"] == 0
            assert seen[-1] <= block["n_done"] <= n
            seen.append(block["n_done"])
    finally:
        writer.kill()
        writer.wait()
    assert writer.returncode == 0
    stats = refresh()
    block = ledger.block(stats)
    assert (block["n_done"], block["quality"]["malformed_lines"]) == (n, 0)
    assert block["total_comp"] == sum(i % 13 + 1 for i in range(n))
    assert block["files"]["raw_responses.jsonl"]["pending_bytes"] == 0
    assert len(set(seen)) > 2, "the refreshes never overlapped the writer"
    assert comparable(stats) == comparable(ledger.fresh_scan())


def test_torn_writes_during_refreshes_never_count_as_malformed_and_end_exact(
    ledger: Ledger,
) -> None:
    torn_writes_end_exact(ledger, ledger.refresh, 2500)


PIECES_COLLECT = """
import sys
from genledger.refresh import parallel
from genledger.refresh import split
from genledger.cli import main
parallel.MIN_PARALLEL_BYTES, split.PIECE_BYTES = 0, 4096  # every refresh: forked, in pieces
sys.exit(main(sys.argv[1:]))
"""


def test_torn_writes_during_refreshes_read_in_forked_pieces_end_exact(ledger: Ledger) -> None:
    # The parallel lever under a live writer: pieces cut at line starts while lines are torn.
    cmd = [sys.executable, "-c", PIECES_COLLECT, "collect", str(ledger.root)]
    cmd += ["-o", str(ledger.stats_path), "--state", str(ledger.state_dir), "-q"]
    env = {**os.environ, "GENLEDGER_WORKERS": "2"}

    def refresh() -> dict[str, Any]:
        assert subprocess.run(cmd, env=env, check=False, timeout=120).returncode in (0, 1)
        return dict(json.loads(ledger.stats_path.read_bytes()))

    torn_writes_end_exact(ledger, refresh, 1500)


# --- unreadable files and read-only data roots ----------------------------------------------


def _drop_file_capabilities() -> None:
    """In the child: root loses its power to read files whatever their mode."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_an_unreadable_file_is_a_per_file_error_and_other_datasets_are_unaffected(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    for name in ("bad", "good"):
        (root / name).mkdir(parents=True)
        (root / name / "raw_responses.jsonl").write_bytes(response_line(1) + response_line(2))
    (root / "bad" / "raw_responses_2.jsonl").write_bytes(response_line(3))
    (root / "bad" / "raw_responses_2.jsonl").chmod(0)
    stats = tmp_path / "stats.json"
    done = subprocess.run(
        collect_cmd(root, stats, tmp_path / "state"),
        preexec_fn=_drop_file_capabilities,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    got = comparable(orjson.loads(stats.read_bytes()))
    bad = got["datasets"]["bad"]
    assert "Permission denied" in bad["files"]["raw_responses_2.jsonl"]["error"]
    assert bad["quality"]["unreadable_files"] == 1
    assert bad["quality"]["status"] == "error"
    assert bad["n_done"] == 2
    # Root reads everything: its scan of `good` is what the unprivileged one must match.
    assert got["datasets"]["good"] == oracle(root, tmp_path / "oracle")["datasets"]["good"]


def test_an_unreadable_data_root_exits_2_with_one_line_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    root.chmod(0)
    try:
        done = subprocess.run(
            collect_cmd(root, tmp_path / "s.json", tmp_path / "state"),
            preexec_fn=_drop_file_capabilities,
            capture_output=True,
            text=True,
        )
    finally:
        root.chmod(0o755)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and str(root) in done.stderr


@pytest.fixture
def read_only_root(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(writable source, the same folder bind-mounted read-only)."""
    source, mount = tmp_path / "source", tmp_path / "ro"
    source.mkdir()
    mount.mkdir()
    bind = subprocess.run(["mount", "--bind", str(source), str(mount)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bind.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True)
        yield source, mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_data_root_on_a_read_only_mount_is_read_and_never_written(
    read_only_root: tuple[Path, Path], tmp_path: Path
) -> None:
    source, mount = read_only_root
    (source / "ds").mkdir()
    (source / "ds" / "raw_responses.jsonl").write_bytes(response_line(1) + b'{"id": "p')
    with pytest.raises(OSError):
        (mount / "probe").write_bytes(b"")  # the mount really is read-only
    stats, state = tmp_path / "stats.json", tmp_path / "state"
    done = subprocess.run(collect_cmd(mount, stats, state), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (source / "ds" / "raw_responses.jsonl").open("ab").write(b'", "completion_tokens": 4}\n')
    done = subprocess.run(collect_cmd(mount, stats, state), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    block = orjson.loads(stats.read_bytes())["datasets"]["ds"]
    assert (block["n_done"], block["total_comp"]) == (2, 7 + 4)
    assert sorted(p.name for p in source.rglob("*")) == ["ds", "raw_responses.jsonl"]


# --- hostile bytes --------------------------------------------------------------------------


def _reject(name: str) -> None:
    raise ValueError(name)


def expected_of(line: bytes) -> tuple[int, int] | None:
    """(records, malformed) of one line by an independent parser; None for a blank line."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return None
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_reject)
    except (ValueError, RecursionError):
        return 0, 1
    if isinstance(value, dict):
        return 1, 0
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return len(value), 0
    return 0, 1


def full_scan_of(data: bytes) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        ledger = Ledger(Path(tmp))
        ledger.append(data)
        return ledger.block(ledger.refresh())


SOUP_PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b'"', b":", b",", b"1", b"-", b"e9", b"NaN", b"\\u", b"\xff", b"\xc3"]
)
SOUP_LINE = st.one_of(
    st.binary(max_size=24),
    st.lists(SOUP_PIECES, max_size=10).map(b"".join),
    st.integers(0, 9).map(lambda i: response_line(i).rstrip(b"\n")),
    st.just(b'[{"completion_tokens": 2}, {"output_ids": [1]}]'),
).map(lambda b: b.replace(b"\n", b""))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SOUP_LINE, max_size=12), st.binary(max_size=8))
def test_byte_soup_never_crashes_a_refresh_and_each_bad_line_is_counted(
    soup: list[bytes], tail: bytes
) -> None:
    tail = tail.replace(b"\n", b"")
    block = full_scan_of(b"".join(line + b"\n" for line in soup) + tail)
    if soup and soup[0].startswith(BOM):
        soup[0] = soup[0][len(BOM) :]
    outcomes = [o for o in map(expected_of, soup) if o is not None]
    assert block["quality"]["malformed_lines"] == sum(m for _, m in outcomes)
    assert block["n_done"] == sum(r for r, _ in outcomes)
    assert block["files"]["raw_responses.jsonl"]["pending_bytes"] == len(tail)


def _nested(depth: int) -> bytes:
    inner = b'{"text": "</think>"}'
    for _ in range(depth):
        inner = b'{"text": [' + inner + b"]}"
    head = b'{"id": "deep", "completion_tokens": 1, "choices": [{"message": {"content": ['
    return head + inner + b"]}}]}"


HOSTILE: list[tuple[str, bytes, str]] = [
    ("deep array nesting", b"[" * 100_000 + b"]" * 100_000, "malformed_lines"),
    ("deep object nesting", b'{"a":' * 5000 + b"1" + b"}" * 5000, "malformed_lines"),
    ("NaN count", b'{"id": "n", "completion_tokens": NaN}', "malformed_lines"),
    ("Infinity count", b'{"id": "i", "completion_tokens": Infinity}', "malformed_lines"),
    (
        "invalid UTF-8",
        b'{"id": "u", "text": "\xff\xfe", "completion_tokens": 1}',
        "malformed_lines",
    ),
    (
        "lone surrogate",
        b'{"id": "s", "text": "\\ud800", "completion_tokens": 1}',
        "malformed_lines",
    ),
    ("NUL bytes", b"\x00" * 64, "malformed_lines"),
    ("10 MB of junk", b"{" + b"x" * (10 << 20), "malformed_lines"),
    (
        "int beyond a double",
        b'{"id": "h", "completion_tokens": ' + b"9" * 400 + b"}",
        "malformed_lines",
    ),
    ("huge int count", b'{"id": "h", "completion_tokens": ' + b"9" * 30 + b"}", "invalid_tokens"),
    ("u64 count", b'{"id": "q", "completion_tokens": 18446744073709551615}', "invalid_tokens"),
    ("10,000 keys, no count", orjson.dumps({f"k{i}": i for i in range(10_000)}), "missing_tokens"),
]


@pytest.mark.parametrize(("case", "line", "counter"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_json_is_counted_where_it_belongs(case: str, line: bytes, counter: str) -> None:
    block = full_scan_of(response_line(0) + line + b"\n" + response_line(1))
    assert block["quality"][counter] == 1, case
    assert block["total_comp"] == 14  # only the two good records are summed
    assert block["quality"]["malformed_lines"] == (counter == "malformed_lines")


def test_a_record_nested_hundreds_deep_never_crashes_and_is_counted_once() -> None:
    block = full_scan_of(response_line(0) + _nested(400) + b"\n" + response_line(1))
    assert block["n_done"] + block["quality"]["malformed_lines"] == 3
    assert block["total_comp"] == 14 + (block["n_done"] == 3)  # summed only as a record


def test_a_ten_megabyte_record_among_garbage_is_counted() -> None:
    big = orjson.dumps({"id": "big", "text": "é" * (5 << 20), "completion_tokens": 3})
    block = full_scan_of(b"\xff\n" + big + b"\n" + b"[\n")
    assert (block["n_done"], block["total_comp"], block["quality"]["malformed_lines"]) == (1, 3, 2)


# --- bounded: a line too long to keep -------------------------------------------------------

PEAK_COLLECT = """
import re, sys
from genledger.cli import main
code = main(sys.argv[1:])
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over an exec from the forking parent.
print(int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1]) // 1024)
sys.exit(code)
"""


def _collect_peak_mb(root: Path, tmp: Path) -> tuple[int, dict[str, Any]]:
    """Run `genledger collect` in a fresh interpreter: its peak memory (MB) and the stats."""
    cmd = [sys.executable, "-c", PEAK_COLLECT, *collect_cmd(root, tmp / "s.json", tmp / "st")[3:]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return int(done.stdout.split()[-1]), orjson.loads((tmp / "s.json").read_bytes())


@pytest.mark.parametrize("ended", [False, True], ids=["pending", "complete"])
def test_a_300_mb_line_costs_neither_its_size_in_memory_nor_the_lines_around_it(
    tmp_path: Path, ended: bool
) -> None:
    # Before: a pending 300 MB line cost 600 MB on every refresh (its read doubled until it
    # held the line), a complete one 1.56 GB.
    path = tmp_path / "data" / "ds" / "raw_responses.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(response_line(0))
    os.truncate(path, path.stat().st_size + (300 << 20))  # 300 MB of NULs, no newline
    if ended:
        with path.open("ab") as handle:
            handle.write(b"\n" + response_line(1))
    peak, stats = _collect_peak_mb(tmp_path / "data", tmp_path)
    block = stats["datasets"]["ds"]
    assert peak < 150, f"{peak} MB"
    assert block["n_done"] == 1 + ended
    entry = block["files"]["raw_responses.jsonl"]
    if ended:
        (failure,) = block["quality"]["failures"]
        example = failure["examples"][0]
        assert (failure["check"], failure["count"], example["line"]) == ("malformed_lines", 1, 2)
        assert example["reason"].startswith("line longer than 67108864 bytes")
        assert entry["pending_bytes"] == 0
    else:
        assert entry["pending_bytes"] == 300 << 20


def test_the_line_cap_is_configurable_and_a_line_at_the_cap_still_counts(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    line = response_line(1)  # its length without the newline is the cap
    cap = len(line) - 1
    (root / "ds" / "raw_responses.jsonl").write_bytes(
        line + b'{"id": "long", "completion_tokens": 3, "pad": "' + b"x" * cap + b'"}\n' + line
    )
    (tmp_path / "genledger.toml").write_text(f"[files]\nmax_line_bytes = {cap}\n")
    done = subprocess.run(
        [
            *collect_cmd(root, tmp_path / "s.json", tmp_path / "st"),
            "--config",
            str(tmp_path / "genledger.toml"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    block = orjson.loads((tmp_path / "s.json").read_bytes())["datasets"]["ds"]
    assert (block["n_done"], block["quality"]["malformed_lines"]) == (2, 1)
    (failure,) = block["quality"]["failures"][:1]
    assert failure["examples"][0]["reason"].startswith(f"line longer than {cap} bytes")
