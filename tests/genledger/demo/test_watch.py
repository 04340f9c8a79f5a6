"""The demo's per-refresh line: noticing a rewritten stats JSON and saying it in one line."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from genledger.config import Config
from genledger.demo.watch import StatsWatch
from genledger.ledger.summary import refresh_line
from genledger.refresh.collect import refresh


def test_a_stats_file_already_there_is_not_news_but_each_rewrite_is(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    path.write_bytes(orjson.dumps({"n": 0}))
    watch = StatsWatch(path)
    assert watch.poll() is None
    for n in (1, 2):
        tmp = tmp_path / "tmp.json"
        tmp.write_bytes(orjson.dumps({"n": n}))
        os.replace(tmp, path)  # the way refresh writes it: a new file renamed over the old
        assert watch.poll() == {"n": n}
        assert watch.poll() is None


def test_no_file_yet_or_an_unreadable_one_gives_nothing_until_a_good_one_lands(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stats.json"
    watch = StatsWatch(path)
    assert watch.poll() is None
    path.write_bytes(b'{"n": ')
    assert watch.poll() is None
    path.write_bytes(b'{"n": 1}')
    assert watch.poll() == {"n": 1}


def test_the_refresh_line_names_datasets_progress_tokens_and_every_failing_check(
    sample_root: Path, tmp_path: Path
) -> None:
    config = Config(data_root=sample_root, stats_path=tmp_path / "s.json", state_dir=tmp_path)
    stats = refresh(config, full=True).stats
    line = refresh_line(stats)
    totals = stats["totals"]
    assert "\n" not in line
    assert line.startswith(f"{len(stats['datasets'])} datasets, {totals['n_done']:,}/")
    assert f"{totals['total_comp']:,} completion tokens" in line
    failures = totals["quality"]["failures"]
    assert {f["severity"] for f in failures} == {"error", "warn"}  # the sample has both
    for failure in failures:
        assert f"{failure['check']} {failure['severity'].upper()} {failure['count']:,}" in line


def test_a_clean_run_says_nothing_fails(tmp_path: Path) -> None:
    stats = {
        "datasets": {"a": {}},
        "totals": {
            "n_done": 3,
            "n_prompts": None,
            "progress": None,
            "total_comp": 1234,
            "n_tokenized": 0,
            "quality": {"status": "ok", "failures": []},
        },
    }
    assert refresh_line(stats) == (
        "1 datasets, 3/? done, 1,234 completion tokens, 0 tokenized [OK]; failing: none"
    )
