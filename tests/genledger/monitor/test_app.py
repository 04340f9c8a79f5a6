"""`genledger monitor --once` and `--collect` as a script sees them: real processes, no tty."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from genledger.synth.tree import write_sample_tree

from .conftest import ANSI


def _monitor(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "genledger.cli", "monitor", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
    )


@pytest.fixture
def collected(tmp_path: Path, sample_root: Path) -> Path:
    """The sample tree collected once by the real CLI; returns the stats path."""
    stats = tmp_path / "stats.json"
    state = tmp_path / "state"
    collect = ["collect", sample_root, "-o", stats, "--state", state, "-q"]
    subprocess.run([sys.executable, "-m", "genledger.cli", *collect], check=False, timeout=120)
    assert stats.is_file()
    return stats


def test_once_prints_every_dataset_as_plain_text_and_exits_0(collected: Path) -> None:
    done = _monitor(collected, "--once")
    assert done.returncode == 0, done.stderr
    assert not ANSI.search(done.stdout)
    for name in ("clean_chat_then_flat", "warn_think_leaks", "error_missing_tokens"):
        assert f"{name} " in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    error_line = next(ln for ln in done.stdout.splitlines() if "error_missing_tokens" in ln)
    assert "ERROR missing tokens 40" in error_line


def test_once_reads_the_stats_path_from_the_environment(collected: Path) -> None:
    done = _monitor("--once", env={"GENLEDGER_STATS_PATH": str(collected)})
    assert done.returncode == 0 and "error_missing_tokens" in done.stdout


def test_once_without_stats_says_waiting_and_exits_1(tmp_path: Path) -> None:
    done = _monitor(tmp_path / "nothing.json", "--once")
    assert done.returncode == 1
    assert "waiting for stats" in done.stdout


def test_no_stats_path_at_all_is_a_usage_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GENLEDGER_STATS_PATH"}
    done = subprocess.run(
        [sys.executable, "-m", "genledger.cli", "monitor", "--once"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "GENLEDGER_STATS_PATH" in done.stderr


def test_collect_mode_refreshes_the_stats_itself(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data")
    stats = tmp_path / "out" / "stats.json"
    done = _monitor(stats, "--once", "--collect", root, "--state", tmp_path / "state")
    assert done.returncode == 0, done.stdout + done.stderr
    assert stats.is_file()
    assert "collecting" in done.stdout and "warn_think_leaks" in done.stdout


def test_a_pipe_without_columns_widens_rather_than_cut_a_long_name(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data")
    long_name = "an_unusually_long_dataset_name_for_openthoughts_math_v3"
    (root / "clean_chat_then_flat").rename(root / long_name)
    stats = tmp_path / "stats.json"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    args = ["monitor", stats, "--once", "--collect", root, "--state", tmp_path / "state"]
    done = subprocess.run(
        [sys.executable, "-m", "genledger.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    titles = next(ln for ln in done.stdout.splitlines() if ln.startswith("dataset "))
    assert f"{long_name} " in done.stdout and {"tok/s", "ETA"} <= set(titles.split())
