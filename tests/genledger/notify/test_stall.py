"""Stall alerts: once for an unfinished dataset that stopped growing, never for a finished one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from genledger.notify.model import Kind
from genledger.notify.stall import decide_stalls, progress_from_stats, read_stats
from genledger.refresh.collect import refresh

FINISHED = "clean_chat_then_flat"


def _stats(sample_root: Path, config_for):  # type: ignore[no-untyped-def]
    config = config_for(sample_root)
    done = refresh(config).stats["datasets"][FINISHED]["n_done"]
    config = replace(config, n_prompts={FINISHED: done})  # this one is finished
    return config, refresh(config).stats


def test_the_stall_alert_fires_once_for_unfinished_datasets_that_stopped_growing(
    sample_root: Path, config_for
) -> None:
    config, stats = _stats(sample_root, config_for)
    unfinished = {
        name
        for name, block in stats["datasets"].items()
        if block["kind"] == "inference" and block["n_done"] < block["n_prompts"]
    }
    assert unfinished and FINISHED not in unfinished
    limit = config.notify.stall_minutes * 60
    progress = progress_from_stats(stats, sample_root)

    alerts, state = decide_stalls(progress, {}, config.notify, now=0)
    assert alerts == []
    alerts, state = decide_stalls(progress, state, config.notify, now=limit - 1)
    assert alerts == []
    alerts, state = decide_stalls(progress, state, config.notify, now=limit)
    assert {a.dataset for a in alerts} == unfinished
    assert all(a.kind == Kind.STALLED for a in alerts)
    again, state = decide_stalls(progress, state, config.notify, now=limit * 5)
    assert again == []


def test_a_stalled_dataset_that_grows_again_sends_one_resumed(
    sample_root: Path, config_for
) -> None:
    config, stats = _stats(sample_root, config_for)
    limit = config.notify.stall_minutes * 60
    _, state = decide_stalls(progress_from_stats(stats, sample_root), {}, config.notify, now=0)
    _, state = decide_stalls(progress_from_stats(stats, sample_root), state, config.notify, limit)
    grown = "warn_think_leaks"
    with (sample_root / grown / "raw_responses.jsonl").open("a") as handle:
        handle.write('{"id": "late", "completion_tokens": 5}\n')
    alerts, state = decide_stalls(
        progress_from_stats(stats, sample_root), state, config.notify, limit + 1
    )
    assert [(a.kind, a.dataset) for a in alerts] == [(Kind.RESUMED, grown)]
    assert not state[grown]["stalled"]


def test_a_dataset_with_an_unknown_total_is_never_called_stalled(
    sample_root: Path, config_for
) -> None:
    config, stats = _stats(sample_root, config_for)
    for block in stats["datasets"].values():
        block["n_prompts"] = None
    progress = progress_from_stats(stats, sample_root)
    _, state = decide_stalls(progress, {}, config.notify, now=0)
    alerts, _ = decide_stalls(progress, state, config.notify, now=10**7)
    assert alerts == []


def test_the_stats_json_is_read_and_a_missing_one_is_none(
    tmp_path: Path, sample_root, config_for
) -> None:  # type: ignore[no-untyped-def]
    config, stats = _stats(sample_root, config_for)
    assert read_stats(config.stats_path) == stats
    assert read_stats(tmp_path / "absent.json") is None
