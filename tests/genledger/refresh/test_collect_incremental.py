"""Incremental refresh end to end: every reader fault leaves totals equal to a fresh full scan."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import orjson
import pytest

from genledger.config import Config
from genledger.refresh.collect import refresh, refresh_dataset
from genledger.tail.discovery import DataFile, Dataset
from genledger.tail.lines import BOM

from ..conftest import Ledger, comparable, response_line

Lines = Callable[..., bytes]


def assert_exact(ledger: Ledger, stats: dict) -> None:
    """The incremental stats equal a full scan of the same bytes with no state at all."""
    assert comparable(stats) == comparable(ledger.fresh_scan())


def test_append_counts_only_the_new_records(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 3, tokens=5))
    first = ledger.block(ledger.refresh())
    ledger.append(lines(3, 2, tokens=11))
    stats = ledger.refresh()
    block = ledger.block(stats)
    assert (first["n_done"], first["total_comp"]) == (3, 15)
    assert (block["n_done"], block["total_comp"]) == (5, 15 + 22)
    assert_exact(ledger, stats)


def test_partial_line_is_pending_then_counted_once_complete(ledger: Ledger, lines: Lines) -> None:
    whole = response_line(9, tokens=4)
    ledger.append(lines(0, 2) + whole[:10])
    block = ledger.block(ledger.refresh())
    entry = block["files"]["raw_responses.jsonl"]
    assert (block["n_done"], entry["pending_bytes"], entry["lines"]) == (2, 10, 2)
    assert block["quality"]["malformed_lines"] == 0
    ledger.append(whole[10:])
    stats = ledger.refresh()
    block = ledger.block(stats)
    assert (block["n_done"], block["total_comp"]) == (3, 2 * 7 + 4)
    assert block["files"]["raw_responses.jsonl"]["pending_bytes"] == 0
    assert_exact(ledger, stats)


def test_truncation_recounts_from_zero(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 5))
    ledger.refresh()
    ledger.truncate(len(lines(0, 2)) + 3)
    stats = ledger.refresh()
    block = ledger.block(stats)
    assert block["n_done"] == 2
    assert block["files"]["raw_responses.jsonl"]["pending_bytes"] == 3
    assert_exact(ledger, stats)


def test_atomic_replacement_is_not_counted_twice(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 4))
    ledger.refresh()
    ledger.replace(lines(100, 6, tokens=3))
    stats = ledger.refresh()
    assert (ledger.block(stats)["n_done"], ledger.block(stats)["total_comp"]) == (6, 18)
    assert_exact(ledger, stats)


def test_in_place_rewrite_with_a_changed_first_line_recounts(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 4))
    ledger.refresh()
    ledger.rewrite_in_place(lines(50, 5, tokens=2))
    stats = ledger.refresh()
    assert ledger.block(stats)["total_comp"] == 10
    assert_exact(ledger, stats)


def test_same_length_rewrite_that_creates_duplicate_ids_reruns_dataset_rules(
    ledger: Ledger,
) -> None:
    ledger.append(response_line(0) + response_line(1) + response_line(2))
    assert ledger.block(ledger.refresh())["quality"]["duplicate_ids"] == 0
    ledger.rewrite_in_place(response_line(0) + response_line(1, rid="r0") + response_line(2))
    stats = ledger.refresh()
    assert ledger.block(stats)["quality"]["duplicate_ids"] == 1
    assert_exact(ledger, stats)


def test_crlf_bom_and_unicode_separators_are_records_not_defects(ledger: Ledger) -> None:
    tricky = '{"id":"u","text":"a\u2028b\u2029c\u0085d","completion_tokens":3}'.encode()
    ledger.append(BOM + response_line(0).rstrip(b"\n") + b"\r\n" + tricky + b"\r\n")
    stats = ledger.refresh()
    block = ledger.block(stats)
    assert (block["n_done"], block["total_comp"], block["quality"]["malformed_lines"]) == (
        2,
        7 + 3,
        0,
    )
    assert_exact(ledger, stats)


def test_a_raw_form_feed_inside_a_string_never_splits_the_line(ledger: Ledger) -> None:
    # Whether a raw control character makes the JSON invalid is the parser's business; the
    # reader's is that the line stays one line, so it is one record or one malformed line.
    ledger.append(b'{"id":"f","text":"a\x0cb\x0bc\x1cd","completion_tokens":3}\n')
    block = ledger.block(ledger.refresh())
    assert block["files"]["raw_responses.jsonl"]["lines"] == 1
    assert block["n_done"] + block["quality"]["malformed_lines"] == 1


def test_a_ten_megabyte_line_is_one_record(ledger: Ledger) -> None:
    big = orjson.dumps({"id": "big", "text": "x" * (10 << 20), "completion_tokens": 99})
    ledger.append(response_line(0) + big + b"\n")
    block = ledger.block(ledger.refresh())
    assert (block["n_done"], block["total_comp"]) == (2, 7 + 99)
    assert block["files"]["raw_responses.jsonl"]["bytes"] == len(big) + len(response_line(0)) + 1


def test_an_empty_file_is_no_records_and_not_an_error(ledger: Ledger) -> None:
    ledger.append(b"")
    block = ledger.block(ledger.refresh())
    assert block["n_done"] == 0
    assert block["files"]["raw_responses.jsonl"] == {
        **block["files"]["raw_responses.jsonl"],
        "bytes": 0,
        "lines": 0,
        "pending_bytes": 0,
    }
    assert "error" not in block["files"]["raw_responses.jsonl"]
    assert block["avg_comp"] is None


def test_blank_lines_are_skipped_but_numbered(ledger: Ledger) -> None:
    ledger.append(b"\n" + response_line(0) + b"  \r\n\n" + b"{bad\n")
    block = ledger.block(ledger.refresh())
    assert block["n_done"] == 1
    assert block["files"]["raw_responses.jsonl"]["lines"] == 5
    failure = {f["check"]: f for f in block["quality"]["failures"]}["malformed_lines"]
    assert failure["count"] == 1
    assert failure["examples"][0]["line"] == 5


def test_a_file_deleted_between_refreshes_stays_reported_until_it_is_back(
    ledger: Ledger, lines: Lines
) -> None:
    ledger.append(lines(0, 2))
    ledger.append(lines(10, 3), name="raw_responses_2.jsonl")
    ledger.refresh()
    kept = ledger.file("raw_responses_2.jsonl").read_bytes()
    ledger.file("raw_responses_2.jsonl").unlink()
    for _ in range(3):  # not a note that is gone one refresh later
        block = ledger.block(ledger.refresh())
        assert block["n_done"] == 2
        entry = block["files"]["raw_responses_2.jsonl"]
        assert entry["error"] == "gone: No such file or directory (3 records counted before)"
        assert (block["quality"]["unreadable_files"], block["quality"]["status"]) == (1, "error")
    ledger.append(kept, name="raw_responses_2.jsonl")
    block = ledger.block(ledger.refresh())
    assert (block["n_done"], block["quality"]["status"]) == (5, "ok")
    assert comparable(ledger.refresh()) == comparable(ledger.fresh_scan())


def test_a_file_that_vanishes_during_a_refresh_is_an_error_entry_not_a_traceback(
    ledger: Ledger, lines: Lines
) -> None:
    ledger.append(lines(0, 2))
    missing = DataFile(
        "ds", "raw_responses_9.jsonl", "responses", ledger.file("raw_responses_9.jsonl")
    )
    present = DataFile("ds", "raw_responses.jsonl", "responses", ledger.file())
    dataset = Dataset("ds", ledger.dataset, (present, missing), None)
    block = refresh_dataset(ledger.config, dataset)
    assert block["n_done"] == 2
    assert "vanished" in block["files"]["raw_responses_9.jsonl"]["error"]
    assert block["quality"]["unreadable_files"] == 1
    assert block["quality"]["status"] == "error"


def test_restart_resumes_from_the_committed_checkpoint(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 3))
    ledger.refresh()
    ledger.append(lines(3, 1))
    # A new interpreter: nothing survives but the state dir.
    code = (
        "import sys; from pathlib import Path; from genledger.config import Config;"
        "from genledger.refresh.collect import refresh;"
        "r = refresh(Config(data_root=Path(sys.argv[1]), stats_path=Path(sys.argv[2]),"
        " state_dir=Path(sys.argv[3])));"
        "print(r.records['ds'].files['raw_responses.jsonl'].last_read)"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(ledger.root),
            str(ledger.stats_path),
            str(ledger.state_dir),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "appended"
    stats = orjson.loads(ledger.stats_path.read_bytes())
    assert ledger.block(stats)["n_done"] == 4
    assert_exact(ledger, stats)


def test_no_duplicates_after_repeated_refreshes_and_restarts(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 3))
    for _ in range(3):
        block = ledger.block(ledger.refresh())
    assert (block["n_done"], block["quality"]["duplicate_ids"]) == (3, 0)


def test_state_lives_outside_the_data_root_by_default(
    ledger: Ledger, lines: Lines, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger.append(lines(0, 2))
    before = sorted(p.relative_to(ledger.root) for p in ledger.root.rglob("*"))
    cache = ledger.base / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    config = Config(data_root=ledger.root, stats_path=ledger.stats_path)
    refresh(config)
    assert config.resolved_state_dir().is_relative_to(cache / "genledger" / "state")
    assert list(config.resolved_state_dir().rglob("*.json"))
    assert sorted(p.relative_to(ledger.root) for p in ledger.root.rglob("*")) == before


def test_the_state_flag_chooses_the_state_dir(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 2))
    chosen = ledger.base / "chosen-state"
    cmd = [sys.executable, "-m", "genledger.cli", "collect", str(ledger.root)]
    cmd += ["-o", str(ledger.stats_path), "--state", str(chosen), "-q"]
    subprocess.run(cmd, check=True, env={**os.environ, "XDG_CACHE_HOME": str(ledger.base / "c")})
    assert len(list((chosen / "datasets").glob("*.json"))) == 1
    assert not (ledger.base / "c").exists()


def test_checkpoint_is_not_committed_when_the_stats_cannot_be_written(
    ledger: Ledger, lines: Lines
) -> None:
    ledger.append(lines(0, 2))
    ledger.refresh()
    state_files = sorted((ledger.state_dir / "datasets").glob("*.json"))
    committed = [p.read_bytes() for p in state_files]
    ledger.append(lines(2, 3))
    ledger.stats_path.unlink()
    ledger.stats_path.mkdir()  # os.replace onto a directory fails: the stats are not durable
    with pytest.raises(OSError):
        refresh(ledger.config)
    assert [p.read_bytes() for p in state_files] == committed
    assert [p.name for p in ledger.stats_path.parent.iterdir()] == ["stats.json"]  # no temp left
    ledger.stats_path.rmdir()
    stats = ledger.refresh()
    assert ledger.block(stats)["n_done"] == 5
    assert_exact(ledger, stats)


def test_unwritable_stats_path_exits_2_naming_it(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 1))
    ledger.stats_path.mkdir(parents=True)
    cmd = [sys.executable, "-m", "genledger.cli", "collect", str(ledger.root)]
    cmd += ["-o", str(ledger.stats_path), "--state", str(ledger.state_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2
    assert str(ledger.stats_path) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (ledger.state_dir / "datasets").exists()


def test_writes_leave_only_complete_json_and_no_temp_files(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 2))
    ledger.refresh()
    ledger.append(lines(2, 2))
    ledger.refresh()
    written = [ledger.stats_path, *ledger.state_dir.rglob("*.json")]
    for path in written:
        orjson.loads(path.read_bytes())
    leftovers = [p for p in ledger.base.rglob("*.tmp")]
    assert leftovers == []


# --- a last line that never ends -------------------------------------------------------------


def test_a_last_line_without_newline_in_a_quiet_file_is_a_warning_and_a_fresh_one_is_not(
    ledger: Ledger, lines: Lines
) -> None:
    ledger.append(lines(0, 3) + b'{"id": "last", "completion_tokens": 4}')
    now = time.time()
    block = ledger.block(refresh(ledger.config, now=now).stats)
    assert block["quality"]["unterminated_line"] == 0  # still being written, maybe
    os.utime(ledger.file(), (now - 400, now - 400))  # quiet for longer than settle_seconds
    block = ledger.block(refresh(ledger.config, now=now).stats)
    assert (block["quality"]["unterminated_line"], block["quality"]["status"]) == (1, "warn")
    (failure,) = block["quality"]["failures"]
    example = failure["examples"][0]
    assert (example["file"], example["line"]) == ("raw_responses.jsonl", 4)
    assert example["reason"].startswith("38 bytes after the last newline")
    assert block["n_done"] == 3  # a line is complete only with its newline
    ledger.append(b"\n")
    block = ledger.block(refresh(ledger.config, now=now).stats)
    assert (block["n_done"], block["quality"]["status"]) == (4, "ok")


def test_a_prompts_file_written_with_a_join_warns_instead_of_reading_one_short(
    ledger: Ledger, lines: Lines
) -> None:
    ledger.append(b"\n".join(b'{"q": %d}' % i for i in range(5)), name="prompts.jsonl")
    ledger.append(lines(0, 4))
    old = time.time() - 3600
    os.utime(ledger.file("prompts.jsonl"), (old, old))
    block = ledger.block(ledger.refresh())
    assert block["n_prompts"] == 4  # the fifth has no newline yet
    (failure,) = block["quality"]["failures"]
    assert (failure["check"], failure["count"]) == ("unterminated_line", 1)
    assert failure["examples"][0]["file"] == "prompts.jsonl"
    assert failure["examples"][0]["line"] == 5


def test_an_unreadable_prompts_file_is_an_unreadable_file(ledger: Ledger, lines: Lines) -> None:
    ledger.append(lines(0, 2))
    ledger.file("prompts.jsonl").mkdir()
    block = ledger.block(ledger.refresh())
    assert block["quality"]["unreadable_files"] == 1
    assert block["files"]["prompts.jsonl"]["error"] == "is a directory"
