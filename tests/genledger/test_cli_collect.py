"""`genledger collect` as a user runs it: a subprocess on a tree the test builds."""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from genledger.cli import COLLECT_GC_THRESHOLD, short_lived
from genledger.rules.catalogue import COUNTER_NAMES
from genledger.synth.records import flat, no_tokens, sglang_generate

from .lock_holder import hold

GENLEDGER = Path(sys.executable).with_name("genledger")
RNG = random.Random(11)


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the console script with no GENLEDGER_* variables from the caller's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENLEDGER_")}
    env["HOME"] = str(cwd)  # a default state dir, if one is used, stays in the test's folder
    return subprocess.run(
        [str(GENLEDGER), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def jl(*records: Any) -> bytes:
    """JSON lines (a list becomes one array line)."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


CLEAN_COUNTS = [(12, 30), (7, 1), (40, 22)]  # (prompt, completion) of the sglang shard
BATCH_COUNTS = [(5, 9), (6, 3)]  # one SGLang batch line
FLAT_COUNTS = [(3, 4), (8, 16)]
TOKENIZED = [(4, 6), (10, 2), (3, 3)]  # (masked prompt, trainable completion)


def build_clean(root: Path) -> None:
    """A two-shard inference dataset with a prompts file and a pretokenized dataset."""
    ds = root / "clean run"
    ds.mkdir(parents=True)
    (ds / "prompts.jsonl").write_bytes(jl(*({"q": i} for i in range(10))) + b"\n")
    shard0 = [sglang_generate(f"s{i}", p, c, RNG) for i, (p, c) in enumerate(CLEAN_COUNTS)]
    (ds / "raw_responses_000.jsonl").write_bytes(jl(*shard0))
    batch = [sglang_generate(f"b{i}", p, c, RNG) for i, (p, c) in enumerate(BATCH_COUNTS)]
    flats = [flat(f"f{i}", p, c, RNG) for i, (p, c) in enumerate(FLAT_COUNTS)]
    (ds / "raw_responses_001.jsonl").write_bytes(jl(batch, *flats) + b'{"id": "torn", "comp')
    pre = root / "A1"
    pre.mkdir()
    (pre / "tokenized_data.jsonl").write_bytes(
        jl(
            *(
                {"input_ids": [[1] * (p + c)], "loss_mask": [[0] * p + [1] * c]}
                for p, c in TOKENIZED
            )
        )
    )


def expected_clean() -> dict[str, dict[str, Any]]:
    """The stats blocks docs/stats-json.md gives for `build_clean`, computed from the plan."""
    responses = CLEAN_COUNTS + BATCH_COUNTS + FLAT_COUNTS
    total_comp = sum(c for _, c in responses)
    zero_quality = {name: 0 for name in COUNTER_NAMES}
    return {
        "clean run": {
            "kind": "inference",
            "n_prompts": 10,
            "n_done": len(responses),
            "progress": len(responses) / 10,
            "total_comp": total_comp,
            "avg_comp": total_comp / len(responses),
            "total_prompt": sum(p for p, _ in responses),
            "n_counted": len(responses),
            "formats": {"flat": 2, "sglang_generate": 5},
            "finish_reasons": {"stop": 7},
            "n_tokenized": 0,
            "total_tokens": 0,
            "avg_tokens": None,
            "total_loss_tokens": 0,
            "quality": {"status": "ok", **zero_quality, "failures": []},
        },
        "A1": {
            "kind": "pretokenized",
            "n_prompts": None,
            "n_done": 0,
            "progress": None,
            "total_comp": 0,
            "avg_comp": None,
            "total_prompt": 0,
            "n_counted": 0,
            "formats": {},
            "finish_reasons": {},
            "n_tokenized": len(TOKENIZED),
            "total_tokens": sum(p + c for p, c in TOKENIZED),
            "avg_tokens": sum(p + c for p, c in TOKENIZED) / len(TOKENIZED),
            "total_loss_tokens": sum(c for _, c in TOKENIZED),
            "quality": {"status": "ok", **zero_quality, "failures": []},
        },
    }


def test_collect_on_a_clean_tree_exits_0_and_writes_every_field(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    out = tmp_path / "out" / "stats.json"
    done = run("collect", root, "-o", out, "--state", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats = orjson.loads(out.read_bytes())
    assert (stats["schema_version"], stats["data_root"]) == (1, str(root.resolve()))
    for name, expected in expected_clean().items():
        block = stats["datasets"][name]
        for field, value in expected.items():
            assert block[field] == value, (name, field)
    files = stats["datasets"]["clean run"]["files"]
    torn = len(b'{"id": "torn", "comp')
    shard1 = root / "clean run" / "raw_responses_001.jsonl"
    assert files["raw_responses_001.jsonl"]["bytes"] == shard1.stat().st_size
    assert files["raw_responses_001.jsonl"]["pending_bytes"] == torn
    assert files["raw_responses_001.jsonl"]["lines"] == 1 + len(FLAT_COUNTS)
    assert files["prompts.jsonl"]["lines"] == 11
    assert set(files) == {"prompts.jsonl", "raw_responses_000.jsonl", "raw_responses_001.jsonl"}
    totals = stats["totals"]
    assert totals["n_done"] == expected_clean()["clean run"]["n_done"]
    assert totals["total_tokens"] == expected_clean()["A1"]["total_tokens"]
    assert totals["quality"]["status"] == "ok"
    summary = done.stderr.strip().splitlines()
    assert summary[0].startswith("A1: 3 tokenized") and "[OK]" in summary[0]
    comp = expected_clean()["clean run"]["total_comp"]
    assert summary[1].startswith(f"clean run: 7/10 done (70.0%), {comp} completion tokens")
    assert summary[-1].startswith("total: 7/10 done")


def test_collect_exits_1_on_an_error_failure_and_still_writes_stats(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    broken = root / "seed bug"
    broken.mkdir()
    (broken / "raw_responses.jsonl").write_bytes(
        jl(*(no_tokens(f"n{i}", 5, 9, RNG) for i in range(4))) + b"{oops\n"
    )
    out = tmp_path / "stats.json"
    done = run("collect", root, "-o", out, "--state", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    block = orjson.loads(out.read_bytes())["datasets"]["seed bug"]
    quality = block["quality"]
    assert (block["n_done"], block["n_counted"], block["total_comp"]) == (4, 0, 0)
    assert (quality["missing_tokens"], quality["malformed_lines"]) == (4, 1)
    assert quality["all_tokens_zero_or_missing"] == 1
    assert quality["status"] == "error"
    malformed = next(f for f in quality["failures"] if f["check"] == "malformed_lines")
    size_before = sum(len(jl(no_tokens(f"n{i}", 5, 9, RNG))) for i in range(4))
    assert malformed["examples"][0]["line"] == 5
    assert malformed["examples"][0]["offset"] == size_before
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("seed bug:")]
    assert "[ERROR]" in line and line.endswith("malformed lines 1")


def test_collect_again_after_appends_equals_a_full_scan(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    state, out = tmp_path / "state", tmp_path / "stats.json"
    assert run("collect", root, "-o", out, "--state", state, cwd=tmp_path).returncode == 0
    shard = root / "clean run" / "raw_responses_001.jsonl"
    with shard.open("ab") as handle:
        handle.write(b'letion_tokens": 5}\n' + jl(flat("g", 2, 0, RNG)))
    assert run("collect", root, "-o", out, "--state", state, cwd=tmp_path).returncode == 1
    incremental = orjson.loads(out.read_bytes())["datasets"]["clean run"]
    full_out = tmp_path / "full.json"
    run("collect", root, "-o", full_out, "--state", tmp_path / "s2", "--full", cwd=tmp_path)
    full = orjson.loads(full_out.read_bytes())["datasets"]["clean run"]
    assert incremental["n_done"] == 7 + 2
    assert incremental["total_comp"] == expected_clean()["clean run"]["total_comp"] + 5
    assert incremental["quality"]["zero_tokens"] == 1
    for field in ("n_done", "n_counted", "total_comp", "formats", "quality"):
        assert incremental[field] == full[field], field


@pytest.mark.parametrize("make", ["missing", "file"])
def test_collect_exits_2_naming_a_root_that_is_not_a_folder(tmp_path: Path, make: str) -> None:
    root = tmp_path / "no such root"
    if make == "file":
        root.write_text("x")
    out = tmp_path / "stats.json"
    done = run("collect", root, "-o", out, "--state", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and str(root) in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_collect_exits_2_without_an_output_path(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    done = run("collect", root, "--state", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "-o" in done.stderr
    assert "Traceback" not in done.stderr


def test_collect_exits_2_naming_an_output_path_it_cannot_write(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    out = tmp_path / "stats as folder"
    out.mkdir()
    done = run("collect", root, "-o", out, "--state", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and str(out) in done.stderr


def test_collect_exits_2_without_a_data_root(tmp_path: Path) -> None:
    done = run("collect", "-o", tmp_path / "s.json", "--state", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 2 and "data root" in done.stderr
    assert "Traceback" not in done.stderr


def test_collect_takes_expected_totals_from_the_config_file(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    config = tmp_path / "genledger.toml"
    config.write_text('[datasets."clean run"]\nn_prompts = 28\n')
    out = tmp_path / "stats.json"
    done = run(
        "collect", root, "-o", out, "--state", tmp_path / "state", "--config", config, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    block = orjson.loads(out.read_bytes())["datasets"]["clean run"]
    n_done = expected_clean()["clean run"]["n_done"]
    assert (block["n_prompts"], block["progress"]) == (28, n_done / 28)


@pytest.mark.timeout(120)
def test_collect_stops_with_one_line_when_another_refresh_holds_a_dataset_too_long(
    tmp_path: Path,
) -> None:
    # A refresh that never returns (a read hung on a dead share) holds "clean run"'s lock.
    root, state = tmp_path / "data", tmp_path / "state"
    build_clean(root)
    config = tmp_path / "genledger.toml"
    config.write_text("[files]\nlock_wait_seconds = 0.5\n")
    state.mkdir()
    holder = hold(state, "clean run", 600)
    try:
        out = tmp_path / "stats.json"
        done = run("collect", root, "-o", out, "--state", state, "--config", config, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert "'clean run'" in line and f"pid {holder.pid}" in line and "lock_wait_seconds" in line
        assert not out.exists(), "stats written without the held dataset"
    finally:
        holder.kill()
        holder.wait()
    done = run("collect", root, "-o", out, "--state", state, "--config", config, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_two_collects_at_once_on_one_state_dir_both_finish_and_agree_with_a_full_scan(
    tmp_path: Path,
) -> None:
    # A Dagster run and an operator's collect at the same moment: the dataset locks serialise
    # them; neither may lose or double a record.
    root, state = tmp_path / "data", tmp_path / "state"
    build_clean(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENLEDGER_")}
    outs = [tmp_path / f"stats{i}.json" for i in range(2)]
    procs = [
        subprocess.Popen(
            [str(GENLEDGER), "collect", str(root), "-o", str(out), "--state", str(state), "-q"],
            cwd=tmp_path,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    full = tmp_path / "full.json"
    done = run("collect", root, "-o", full, "--state", tmp_path / "other", "--full", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = orjson.loads(full.read_bytes())["datasets"]
    for out in outs:
        got = orjson.loads(out.read_bytes())["datasets"]
        for name, block in expected.items():
            assert got[name]["n_done"] == block["n_done"], name
            assert got[name]["total_comp"] == block["total_comp"], name


def test_a_state_dir_that_cannot_be_written_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from .caps import drop_in_child

    root, state = tmp_path / "data", tmp_path / "state"
    build_clean(root)
    state.mkdir(mode=0o555)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENLEDGER_")}
    args = ["collect", str(root), "-o", str(tmp_path / "stats.json"), "--state", str(state)]
    done = subprocess.run(
        [str(GENLEDGER), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=drop_in_child,  # root's power to write anywhere gone, as for any user
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert str(state) in line and "Permission denied" in line, line


QUICK_EXIT = """
import atexit, sys, threading, time
from pathlib import Path
from genledger.cli import quick_exit
marks = Path(sys.argv[1])
atexit.register(lambda: (marks / "teardown").write_text("ran"))
if sys.argv[2] == "thread":
    def late() -> None:
        time.sleep(0.3)
        (marks / "thread").write_text("finished")
    threading.Thread(target=late).start()
print("x" * 200_000, end="")
print("summary", file=sys.stderr, end="")
quick_exit(int(sys.argv[3]))
"""


@pytest.mark.parametrize("thread", [False, True])
def test_quick_exit_flushes_and_skips_teardown_only_when_nothing_runs(
    tmp_path: Path, thread: bool
) -> None:
    # A collect ends with os._exit (no interpreter teardown), after flushing both streams; a
    # process with another thread alive (a remote transport) exits the usual way instead.
    mode = "thread" if thread else "alone"
    done = subprocess.run(
        [sys.executable, "-c", QUICK_EXIT, str(tmp_path), mode, "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 and done.stderr == "summary"
    assert (tmp_path / "thread").exists() == thread
    assert (tmp_path / "teardown").exists() == thread


def test_a_collect_process_lets_the_garbage_collector_run_seldom() -> None:
    before = gc.get_threshold()
    try:
        short_lived()
        assert gc.get_threshold() == (COLLECT_GC_THRESHOLD, *before[1:])
        assert before[0] < COLLECT_GC_THRESHOLD
    finally:
        gc.set_threshold(*before)


def test_a_bad_price_stops_collect_with_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    root = tmp_path / "data"
    build_clean(root)
    config = tmp_path / "genledger.toml"
    config.write_text('[prices."gpt-4o"]\ninput = -2.5\noutput = 10\n')
    out = tmp_path / "stats.json"
    done = run("collect", root, "-o", out, "--config", config, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(config) in lines[0] and 'prices."gpt-4o".input' in lines[0]
    assert not out.exists()


# --- never destructive, never a crash on what a shared cluster throws at it ---------------


def shard_tree(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    (root / "ds" / "raw_responses.jsonl").write_bytes(b'{"id": "a", "completion_tokens": 3}\n')
    return root


@pytest.mark.parametrize(
    ("flag", "target", "what"),
    [
        ("-o", "ds/raw_responses.jsonl", "stats path"),
        ("-o", "stats.json", "stats path"),
        ("--state", ".state", "state dir"),
        ("--state", "ds", "state dir"),
    ],
)
def test_an_output_or_state_inside_the_data_root_is_refused_and_nothing_is_written(
    tmp_path: Path, flag: str, target: str, what: str
) -> None:
    root = shard_tree(tmp_path)
    before = sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*") if p.is_file())
    other = ["--state", str(tmp_path / "st")] if flag == "-o" else ["-o", str(tmp_path / "s.json")]
    done = run("collect", root, flag, root / target, *other, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"the {what}" in done.stderr
    assert "never writes into the data root" in done.stderr
    after = sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*") if p.is_file())
    assert after == before and not (tmp_path / "s.json").exists()


def test_an_output_reached_through_a_symlink_into_the_root_is_refused(tmp_path: Path) -> None:
    root = shard_tree(tmp_path)
    (tmp_path / "link").symlink_to(root / "ds")
    done = run("collect", root, "-o", tmp_path / "link" / "raw_responses.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "inside the data root" in done.stderr
    assert (root / "ds" / "raw_responses.jsonl").read_bytes().startswith(b'{"id": "a"')


def test_an_empty_output_path_is_refused_by_name(tmp_path: Path) -> None:
    done = run("collect", shard_tree(tmp_path), "-o", "", cwd=tmp_path)
    assert done.returncode == 2
    assert "-o/--output: expected a path, got an empty string" in done.stderr


def test_the_stats_json_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    root, stats = shard_tree(tmp_path), tmp_path / "out" / "stats.json"
    stats.parent.mkdir()
    old_umask = os.umask(0o077)  # mkstemp's 0600 was kept whatever the umask: now it is not
    try:
        assert run("collect", root, "-o", stats, cwd=tmp_path).returncode == 0
        assert stats.stat().st_mode & 0o777 == 0o600  # a new file: 0666 less the umask
        stats.chmod(0o644)  # a dashboard running as another user reads it
        assert run("collect", root, "-o", stats, cwd=tmp_path).returncode == 0
        assert stats.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old_umask)
    os.umask(0o022)
    fresh = tmp_path / "out" / "fresh.json"
    assert run("collect", root, "-o", fresh, cwd=tmp_path).returncode == 0
    assert fresh.stat().st_mode & 0o777 == 0o644
    os.umask(old_umask)


def test_counts_whose_sums_pass_64_bits_are_written_exactly_and_read_back(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    (root / "ds").mkdir(parents=True)
    big = 2**63 - 1
    lines = b"".join(
        orjson.dumps({"id": f"r{i}", "completion_tokens": big, "prompt_tokens": big}) + b"\n"
        for i in range(3)
    )
    (root / "ds" / "raw_responses.jsonl").write_bytes(lines)
    stats_path = tmp_path / "s.json"
    for _ in range(2):  # the second refresh reads the state the first wrote
        done = run("collect", root, "-o", stats_path, "--state", tmp_path / "st", cwd=tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        stats = json.loads(stats_path.read_bytes())
        assert stats["totals"]["total_comp"] == 3 * big
        assert stats["datasets"]["ds"]["total_prompt"] == 3 * big
    shown = run("monitor", stats_path, "--once", cwd=tmp_path)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr


@pytest.mark.parametrize(
    "how", ["argument", "environment", "config file"], ids=["arg", "env", "toml"]
)
def test_a_data_root_url_holding_a_password_is_refused_without_echoing_it(
    tmp_path: Path, how: str
) -> None:
    url = "sftp://alice:hunter2secret@127.0.0.1:1/data/run"
    args: list[str | Path] = ["collect", "-o", tmp_path / "s.json"]
    env_extra: dict[str, str] = {}
    if how == "argument":
        args.insert(1, url)
    elif how == "environment":
        env_extra["GENLEDGER_DATA_ROOT"] = url
    else:
        (tmp_path / "genledger.toml").write_text(f'data_root = "{url}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENLEDGER_")} | env_extra
    done = subprocess.run(
        [str(GENLEDGER), *map(str, args)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "hunter2secret" not in done.stderr + done.stdout
    assert "sftp://alice@127.0.0.1:1/data/run: a password in the URL is refused" in done.stderr
    assert not (tmp_path / "s.json").exists()
