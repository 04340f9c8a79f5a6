"""Frames rendered into a capture console from stats written by real refreshes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from genledger.monitor import fmt
from genledger.monitor.state import MonitorState

from .conftest import ANSI, T0, frame, row

DURATION = re.compile(r"^\d+(s|m\d\ds|h\d\dm|d\d\dh)$")


def _state(stats: dict, now: float, path: Path, **kw) -> MonitorState:
    return MonitorState(path=path, stats=stats, now=now, **kw)


def _cells(line: str) -> list[str]:
    return line.split()


def _under(text: str, line: str, header: str) -> str:
    """The cell of a right-justified column: the last word before the header's right edge."""
    titles = text.splitlines()[2]
    end = titles.index(f" {header} ") + len(header) + 1
    return line[:end].split()[-1]


def test_a_growing_run_shows_rising_percent_and_a_finite_eta(growing) -> None:
    run = growing({"steady_chat": (200, "openai_chat")})
    percents, etas = [], []
    for step, total in enumerate((20, 50, 90)):
        run.grow("steady_chat", total - run.written["steady_chat"])
        now = T0 + 10 * step
        text = frame(_state(run.refresh(now), now + 1, run.stats_path))
        line = row(text, "steady_chat")
        percents.append(f"{total / 200:.1%}")
        assert percents[-1] in line
        etas.append(_under(text, line, "ETA"))
    assert etas[0] == "…"  # one refresh is not a rate
    # Every refresh is inside the recent window: the rate runs from the first one.
    assert etas[2] == fmt.duration((200 - 90) / ((90 - 20) / 20)) and DURATION.match(etas[2])
    assert DURATION.match(etas[1])
    assert [float(p[:-1]) for p in percents] == sorted(float(p[:-1]) for p in percents)


def test_an_unknown_expected_total_shows_no_eta(growing) -> None:
    run = growing({"open_ended": (None, "flat"), "bounded": (100, "flat")})
    run.grow("open_ended", 10)
    run.grow("bounded", 10)
    run.refresh(T0)
    run.grow("open_ended", 10)
    run.grow("bounded", 10)
    stats = run.refresh(T0 + 5)
    text = frame(_state(stats, T0 + 6, run.stats_path), width=120)
    assert stats["datasets"]["open_ended"]["rate"]["comp_tokens_per_s"] > 0
    open_line, total_line = row(text, "open_ended"), row(text, "total")
    assert not any(DURATION.match(c) for c in _cells(open_line))
    assert "?" in _cells(open_line) and "?" in _cells(total_line)
    assert not any(DURATION.match(c) for c in _cells(total_line))
    assert any(DURATION.match(c) for c in _cells(row(text, "bounded")))


def test_a_failing_dataset_row_carries_its_worst_failure_in_red(growing) -> None:
    run = growing({"good": (60, "openai_chat"), "tokens_elsewhere": (60, "no_tokens")})
    run.grow("good", 30)
    run.grow("tokens_elsewhere", 1_204)
    stats = run.refresh(T0)
    plain = frame(_state(stats, T0, run.stats_path))
    assert "ERROR missing tokens 1,204" in row(plain, "tokens_elsewhere")
    assert "ERROR" not in row(plain, "good")
    colored = frame(_state(stats, T0, run.stats_path), color=True)
    red = "\x1b[31m"
    assert red in row(colored, "tokens_elsewhere") and red not in row(colored, "good")


def test_stale_stats_are_marked_stale_and_fresh_ones_are_not(growing) -> None:
    run = growing({"a": (10, "flat")})
    run.grow("a", 3)
    stats = run.refresh(T0)
    fresh = frame(_state(stats, T0 + 30, run.stats_path, stale_after=600))
    stale = frame(_state(stats, T0 + 601, run.stats_path, stale_after=600))
    assert "STALE" not in fresh and "updated 30s ago" in fresh
    assert "STALE" in stale and "updated 10m01s ago" in stale


@pytest.mark.parametrize("width", [80, 60, 40])
def test_narrow_terminals_drop_columns_and_nothing_wraps(growing, width: int) -> None:
    long_name = "a_rather_long_dataset_name_from_a_real_run_v2"
    run = growing({long_name: (88_088, "openai_chat"), "leaks": (88_088, "think_leak")})
    run.grow(long_name, 30)
    run.grow("leaks", 30)
    run.refresh(T0)
    run.grow(long_name, 30)
    run.grow("leaks", 30)
    text = frame(_state(run.refresh(T0 + 2), T0 + 3, run.stats_path), width=width)
    lines = text.splitlines()
    assert all(cell_len(ln) <= width for ln in lines)
    # header (2), column titles, rule, two datasets, rule, totals: one line each
    assert len(lines) == 8, text
    assert "WARN" in row(text, "leaks") and "0.1%" in row(text, "leaks")
    if width >= 80:  # a long name is cut before a key figure is dropped
        assert {"%", "tok/s", "ETA", "status"} <= set(_cells(lines[2]))
        assert long_name not in text and long_name[:20] in text


def test_80_columns_show_percent_speed_eta_and_status_for_every_dataset(growing) -> None:
    plan = {"clean": (500, "openai_chat"), "broken": (500, "no_tokens"), "b": (500, "tgi")}
    run = growing(plan)
    for name in plan:
        run.grow(name, 50)
    run.refresh(T0)
    for name in plan:
        run.grow(name, 25)
    text = frame(_state(run.refresh(T0 + 5), T0 + 5, run.stats_path))
    headers = _cells(text.splitlines()[2])
    assert {"%", "tok/s", "ETA", "status"} <= set(headers)
    for name in plan:
        assert "15.0%" in row(text, name)
        assert any(DURATION.match(c) for c in _cells(row(text, name)))
    assert "ERROR missing tokens 75" in row(text, "broken")


def test_without_stats_the_frame_says_it_is_waiting(tmp_path: Path) -> None:
    state = MonitorState(tmp_path / "s.json", None, T0, message="no stats file yet")
    text = frame(state)
    assert "waiting for stats" in text and "no stats file yet" in text
    assert not ANSI.search(text)


def test_a_stats_json_of_another_shape_still_renders(tmp_path: Path) -> None:
    stats = {"datasets": {"odd": {"kind": "inference"}, "odder": {}}, "generated_at": 5}
    text = frame(MonitorState(tmp_path / "s.json", stats, T0))
    assert "odd" in row(text, "odd") and "odder" in row(text, "odder")


def test_the_reasoning_share_shows_only_where_records_report_it(tmp_path: Path) -> None:
    from tests.genledger.parse import sdk_records as sdk
    from tests.genledger.parse.test_sdk_formats import collect

    lines = sdk.openai_chat_dataset(sdk.PYDANTIC_DUMPS["model_dump_json"]).lines
    stats = collect(tmp_path, lines)
    block = stats["datasets"]["ds"]
    share = f"{block['total_reasoning'] / block['total_comp']:.0%}"
    text = frame(_state(stats, T0, tmp_path / "stats.json"), width=200)
    assert " think " in text.splitlines()[2] and share in row(text, "ds")
    plain = collect(tmp_path / "other", sdk.vllm_dataset().lines)
    text = frame(_state(plain, T0, tmp_path / "stats.json"), width=200)
    assert " think " not in text.splitlines()[2]


def test_the_cost_column_shows_spent_and_projected_and_marks_unpriced_records(
    tmp_path: Path,
) -> None:
    from genledger.config import Config
    from genledger.refresh.collect import refresh
    from tests.genledger.conftest import jl
    from tests.genledger.ledger.test_cost import chat

    folder = tmp_path / "data" / "ds"
    folder.mkdir(parents=True)
    (folder / "prompts.jsonl").write_bytes(jl(*({"p": i} for i in range(8))))
    records = [chat("a", "gpt-4o", 9_000, 700), chat("b", "gpt-4o", 2_000, 300)]
    (folder / "raw_responses.jsonl").write_bytes(jl(*records))
    config = Config(
        data_root=tmp_path / "data", stats_path=tmp_path / "s.json", state_dir=tmp_path / "st"
    )
    stats = refresh(config).stats
    block = stats["datasets"]["ds"]
    text = frame(_state(stats, T0, tmp_path / "s.json"), width=200)
    cell = f"{fmt.usd(block['cost_usd'])} / {fmt.usd(block['cost_projected_usd'])}"
    assert "$ spent / projected" in text.splitlines()[2] and cell in row(text, "ds")
    with (folder / "raw_responses.jsonl").open("ab") as out:
        out.write(jl(chat("c", "no-such-model-xyz", 10, 10)))
    stats = refresh(config).stats
    text = frame(_state(stats, T0, tmp_path / "s.json"), width=200)
    assert f"{fmt.usd(stats['datasets']['ds']['cost_usd'])}+ /" in row(text, "ds")
    plain = frame(_state({"datasets": {"x": {"kind": "inference"}}}, T0, tmp_path / "s.json"))
    assert "spent" not in plain


def test_the_audit_count_shows_only_where_a_records_numbers_disagree(tmp_path: Path) -> None:
    from tests.genledger.parse import sdk_records as sdk
    from tests.genledger.parse.test_sdk_formats import collect

    compat = (
        b'{"choices": [{"message": {"content": "4"}}], "usage": {"prompt_tokens": 35, '
        b'"completion_tokens": 12, "total_tokens": 109}}'
    )
    stats = collect(tmp_path, [compat, compat, compat])
    text = frame(_state(stats, T0, tmp_path / "stats.json"), width=200)
    assert "usage!" in _cells(text.splitlines()[2])
    assert "openai_chat 100%      3 " in row(text, "ds") and "WARN" in row(text, "ds")
    plain = collect(tmp_path / "other", sdk.vllm_dataset().lines)
    text = frame(_state(plain, T0, tmp_path / "stats.json"), width=200)
    assert "usage!" not in _cells(text.splitlines()[2])


def test_the_drift_column_says_what_moved_since_the_runs_start(tmp_path: Path) -> None:
    stats = {
        "generated_at": "2026-12-03T10:00:00Z",
        "datasets": {
            "moved": {"kind": "inference", "n_done": 10, "n_prompts": 20, "progress": 0.5,
                      "quality": {"status": "warn", "failures": []},
                      "health": {"drift": ["truncated share 0.0% → 33.0%", "x"],
                                 "truncated_share": 0.2}},
            "still": {"kind": "inference", "n_done": 10, "n_prompts": 20, "progress": 0.5,
                      "quality": {"status": "ok", "failures": []},
                      "health": {"drift": [], "truncated_share": 0.07}},
        },
        "totals": {"n_done": 20, "n_prompts": 40, "quality": {"status": "warn"}},
    }  # fmt: skip
    text = frame(_state(stats, T0, tmp_path / "stats.json"), width=220)
    assert "truncated share 0.0% → 33.0% (+1)" in row(text, "moved")
    assert "cut 7%" in row(text, "still")
