"""The demo's writer and data layout (the UI itself is not tested here)."""

from __future__ import annotations

import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest

from genledger.config import Config, HealthSettings, load_config
from genledger.demo.run import (
    DemoPaths,
    dagster_env,
    default_log,
    group_members,
    prepare,
    stop_group,
)
from genledger.demo.workspace import find_workspace
from genledger.demo.writer import DemoWriter, demo_plan, prompt_count
from genledger.refresh.collect import refresh
from genledger.tail.discovery import discover

N = 60
PROJECT = Path(__file__).resolve().parents[3]


def collect(root: Path, tmp_path: Path) -> dict:
    """The stats JSON of `root`, from scratch."""
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    return refresh(config, full=True).stats


def finished_writer(root: Path) -> DemoWriter:
    """A writer that has written its whole plan."""
    writer = DemoWriter(root, demo_plan(N))
    writer.setup()
    while not writer.finished:
        writer.step(25)
    return writer


def test_setup_lays_out_every_planned_dataset_with_its_prompts(tmp_path: Path) -> None:
    plan = demo_plan(N)
    DemoWriter(tmp_path, plan).setup()
    found = {ds.name: ds for ds in discover(tmp_path, Config())}
    assert set(found) == {ds.name for ds in plan}
    for ds in plan:
        prompts = found[ds.name].of_role("prompts")
        if ds.prompts:
            assert len(prompts[0].path.read_bytes().splitlines()) == prompt_count(ds)
        else:
            assert found[ds.name].kind == "pretokenized"


def test_a_finished_demo_run_has_every_record_and_the_planted_defects(tmp_path: Path) -> None:
    finished_writer(tmp_path / "data")
    stats = collect(tmp_path / "data", tmp_path)
    plan = {ds.name: ds for ds in demo_plan(N)}
    for name, block in stats["datasets"].items():
        done = block["n_tokenized"] if plan[name].prompts is False else block["n_done"]
        assert done == plan[name].n_prompts
        assert all(f["pending_bytes"] == 0 for f in block["files"].values())
    chat_then_flat = stats["datasets"]["B2_opencodeinstruct"]["formats"]
    assert chat_then_flat == {"openai_chat": N // 2, "flat": N // 2}
    bug = stats["datasets"]["D4_seed_bug"]["quality"]
    assert bug["status"] == "error" and bug["missing_tokens"] == N
    assert bug["all_tokens_zero_or_missing"] == 1
    leaks = stats["datasets"]["C3 math-reasoning.v2"]["quality"]
    planted = sum(plan["C3 math-reasoning.v2"].kind(i) == "think_leak" for i in range(N))
    assert planted > 0
    assert leaks["status"] == "warn" and leaks["think_tag_leaks"] == planted
    assert stats["datasets"]["A1_pretokenized"]["quality"]["status"] == "ok"


def test_the_demo_shows_truncation_rising_repeated_answers_and_unmasked_prompts(
    tmp_path: Path,
) -> None:
    finished_writer(tmp_path / "data")
    config = Config(
        data_root=tmp_path / "data",
        stats_path=tmp_path / "s.json",
        state_dir=tmp_path / "st",
        health=HealthSettings(window=10),
    )
    found = refresh(config, full=True).stats["datasets"]
    rising = found["F6_truncation_rises"]
    assert rising["health"]["first_window"]["truncated_share"] == 0.0
    assert any(d.startswith("truncated share") for d in rising["health"]["drift"])
    assert rising["quality"]["truncated_outputs"] > 0 and rising["quality"]["output_drift"] > 0
    repeated = found["G7_repeated_answers"]
    assert repeated["quality"]["duplicate_outputs"] == N // 4 - 1
    assert repeated["prompts"]["missing"] == prompt_count(demo_plan(N)[-2]) - N
    assert found["H8_unmasked_prompts"]["quality"]["prompt_not_masked"] == N // 5
    assert found["B2_opencodeinstruct"]["quality"]["duplicate_outputs"] == 0


def test_torn_writes_leave_pending_bytes_that_later_complete(tmp_path: Path) -> None:
    root = tmp_path / "data"
    writer = DemoWriter(root, demo_plan(N), torn_probability=1.0)
    writer.setup(prefill=0.0)
    writer.step(10)
    stats = collect(root, tmp_path / "a")
    pending = sum(
        f["pending_bytes"] for b in stats["datasets"].values() for f in b["files"].values()
    )
    assert pending > 0
    assert stats["totals"]["quality"]["malformed_lines"] == 0
    while not writer.finished:
        writer.step(25)
    final = collect(root, tmp_path / "b")
    assert final["totals"]["n_done"] + final["totals"]["n_tokenized"] == sum(
        ds.n_prompts for ds in demo_plan(N)
    )
    assert final["totals"]["quality"]["malformed_lines"] == 0


def test_the_writer_thread_keeps_a_steady_pace_and_stops_when_told(tmp_path: Path) -> None:
    writer = DemoWriter(tmp_path, demo_plan(10_000))
    writer.setup(prefill=0.0)
    stop = threading.Event()
    thread = threading.Thread(target=writer.run, args=(stop, 200.0, 0.05))
    thread.start()
    time.sleep(1.0)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    written = sum(p.written for p in writer.progress.values())
    assert 20 <= written <= 400


def test_prepare_gives_the_demo_a_dagster_home_with_the_workspaces_instance_config(
    tmp_path: Path,
) -> None:
    paths = DemoPaths(tmp_path)
    instance = find_workspace(cwd=PROJECT).instance
    prepare(paths, DemoWriter(paths.data, demo_plan(N)), instance=instance)
    assert (paths.dagster_home / "dagster.yaml").read_text().count("genledger/dataset") >= 1
    assert paths.env()["GENLEDGER_DATA_ROOT"] == str(paths.data)
    bare = DemoPaths(tmp_path / "bare")
    prepare(bare, DemoWriter(bare.data, demo_plan(N)), instance=None)
    assert bare.dagster_home.is_dir() and not (bare.dagster_home / "dagster.yaml").exists()


def test_refresh_gives_dagster_a_config_with_that_sensor_interval_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENLEDGER_CONFIG", "/elsewhere/genledger.toml")
    plain = DemoPaths(tmp_path / "plain")
    prepare(plain, DemoWriter(plain.data, demo_plan(N)))
    assert dagster_env(plain)["GENLEDGER_CONFIG"] == "/elsewhere/genledger.toml"
    fast = DemoPaths(tmp_path / "fast")
    prepare(fast, DemoWriter(fast.data, demo_plan(N)), refresh_s=3)
    env = dagster_env(fast)
    assert env["GENLEDGER_CONFIG"] == str(fast.config)
    assert load_config(env=env).dagster.sensor_interval_s == 3
    assert env["GENLEDGER_DATA_ROOT"] == str(fast.data)


def test_the_dagster_log_outlives_a_temp_run_and_stays_inside_a_chosen_one(
    tmp_path: Path,
) -> None:
    temp = tmp_path / "genledger-demo-abc"
    assert default_log(temp, created=True) == tmp_path / "genledger-demo-abc-dagster.log"
    assert default_log(temp, created=False) == temp / "dagster.log"


@pytest.mark.timeout(60)
def test_stop_group_ends_the_whole_process_group() -> None:
    proc = subprocess.Popen(
        ["sh", "-c", "trap '' TERM; sleep 30 & sleep 30 & wait"], start_new_session=True
    )
    time.sleep(0.3)
    stop_group(proc, grace_s=1.0, drain_s=0.5)
    time.sleep(0.2)
    assert proc.returncode is not None
    assert group_members(proc.pid) == []


@pytest.mark.timeout(60)
def test_stop_group_lets_work_in_progress_finish_before_it_signals_the_group(
    tmp_path: Path,
) -> None:
    # The leader stands for `dagster dev`, the subshell for a run worker it launched: the
    # worker must finish its step, not be interrupted by a SIGTERM to the whole group.
    marker = shlex.quote(str(tmp_path / "marker"))
    worker = f"(trap 'echo interrupted >> {marker}; exit 1' TERM; sleep 1; echo done >> {marker})"
    proc = subprocess.Popen(["sh", "-c", f"{worker} & exec sleep 30"], start_new_session=True)
    time.sleep(0.3)
    started = time.monotonic()
    stop_group(proc, grace_s=5.0, drain_s=10.0)
    assert time.monotonic() - started < 5.0
    assert (tmp_path / "marker").read_text() == "done\n"
    assert group_members(proc.pid) == []
