"""The kept metrics text (`genledger.refresh.metrics`) equals the text rendered again: a refresh
that changes no exported number keeps the file as it is, with the changed-at time of the
refresh that last changed one, and never imports prometheus_client."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config
from genledger.ledger.metrics import generated_seconds
from genledger.ledger.openmetrics import exposition
from genledger.refresh.atomic import atomic_write_many
from genledger.refresh.collect import refresh
from genledger.refresh.metrics import memo_path, metrics_files
from genledger.synth.records import line
from genledger.synth.tree import write_sample_tree

T0 = 1_765_000_000.0


def config_of(tmp_path: Path) -> Config:
    """A sample tree with stats, state and metrics paths beside it."""
    root = write_sample_tree(tmp_path / "data", records=6)
    return Config(
        data_root=root,
        stats_path=tmp_path / "stats.json",
        state_dir=tmp_path / "state",
        metrics_path=tmp_path / "m" / "genledger.prom",
    )


def test_a_refresh_that_changes_no_number_keeps_the_text_with_its_changed_at(
    tmp_path: Path,
) -> None:
    config = config_of(tmp_path)
    assert config.metrics_path is not None
    config.metrics_path.parent.mkdir()
    refresh(config, now=T0)  # no rate yet: the next refresh's rates of 0 are a change
    second = refresh(config, now=T0 + 60).stats  # no file changed since
    written = config.metrics_path.read_bytes()
    os.utime(config.metrics_path, (T0, T0))
    third = refresh(config, now=T0 + 120).stats
    assert second["generated_at"] != third["generated_at"]
    assert config.metrics_path.read_bytes() == written
    assert config.metrics_path.stat().st_mtime > T0, "touched: the refresh ran"
    assert written == exposition(third, changed=generated_seconds(second))
    assert written != exposition(third), "the kept text is not the one of the last refresh"


def test_a_changed_number_renders_the_text_again_with_its_own_time(tmp_path: Path) -> None:
    config = config_of(tmp_path)
    assert config.metrics_path is not None and config.data_root is not None
    config.metrics_path.parent.mkdir()
    refresh(config, now=T0)
    refresh(config, now=T0 + 60)
    with (config.data_root / "warn_think_leaks" / "raw_responses.jsonl").open("ab") as out:
        out.write(line({"id": "more", "completion_tokens": 7}))
    stats = refresh(config, now=T0 + 120).stats
    assert config.metrics_path.read_bytes() == exposition(stats)


def test_a_text_changed_by_hand_or_a_broken_memo_is_rendered_again(tmp_path: Path) -> None:
    config = config_of(tmp_path)
    assert config.metrics_path is not None and config.state_dir is not None
    config.metrics_path.parent.mkdir()
    refresh(config, now=T0)
    config.metrics_path.write_bytes(b"# EOF\n")
    stats = refresh(config, now=T0 + 60).stats
    assert config.metrics_path.read_bytes() == exposition(stats)
    memo_path(config.state_dir, config.metrics_path).write_bytes(b"{not json")
    stats = refresh(config, now=T0 + 120).stats
    assert config.metrics_path.read_bytes() == exposition(stats)


def test_a_kept_text_never_imports_prometheus_client(tmp_path: Path) -> None:
    config = config_of(tmp_path)
    assert config.metrics_path is not None
    config.metrics_path.parent.mkdir()
    refresh(config, now=T0)
    refresh(config, now=T0 + 60)
    probe = (
        "import sys\n"
        "from genledger.cli import main\n"
        f"main(['collect', {str(config.data_root)!r}, '-o', {str(config.stats_path)!r},"
        f" '--state', {str(config.state_dir)!r}, '--metrics', {str(config.metrics_path)!r},"
        " '-q'])\n"
        "print('prometheus_client' in sys.modules)\n"
    )
    kept = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert kept.stdout.strip() == b"False"
    memo_path(config.state_dir or Path(), config.metrics_path).unlink()
    rendered = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert rendered.stdout.strip() == b"True", "the probe can see the import"


def stats_of(done: list[int], when: float) -> dict[str, Any]:
    """A small stats document: one dataset a count, one model each."""
    datasets = {
        f"ds{i}": {
            "n_done": n,
            "n_prompts": 10,
            "progress": n / 10,
            "models": {"m": {"n_done": n, "total_comp": 3 * n, "total_prompt": None}},
            "quality": {},
        }
        for i, n in enumerate(done)
    }
    stamp = datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")
    return {"datasets": datasets, "totals": {"n_done": sum(done)}, "generated_at": stamp}


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.booleans()),
        min_size=1,
        max_size=8,
    )
)
def test_every_written_text_equals_the_rendered_one(
    steps: list[tuple[list[int], bool]], tmp_path_factory: Any
) -> None:
    """Refresh after refresh (some numbers changing, the file sometimes overwritten by
    someone else), the file holds the text rendered with the time of the last change."""
    tmp = tmp_path_factory.mktemp("memo")
    path, state = tmp / "g.prom", tmp / "state"
    state.mkdir()
    changed_at: float | None = None
    previous: list[int] | None = None
    for i, (done, tampered) in enumerate(steps):
        when = T0 + 60 * i
        if tampered and path.exists():
            path.write_bytes(b"# EOF\n")
            previous = None  # the text is no longer the one written
        stats = stats_of(done, when)
        if done != previous:
            changed_at = when
        atomic_write_many(metrics_files(stats, 2, path, state))
        assert path.read_bytes() == exposition(stats, 2, changed_at)
        previous = done


def test_the_memo_is_per_metrics_path(tmp_path: Path) -> None:
    config = config_of(tmp_path)
    assert config.metrics_path is not None and config.state_dir is not None
    config.metrics_path.parent.mkdir()
    other = replace(config, metrics_path=tmp_path / "m" / "other.prom")
    refresh(config, now=T0)
    stats = refresh(other, now=T0 + 60).stats
    assert memo_path(config.state_dir, config.metrics_path) != memo_path(
        config.state_dir, tmp_path / "m" / "other.prom"
    )
    assert (tmp_path / "m" / "other.prom").read_bytes() == exposition(stats)
