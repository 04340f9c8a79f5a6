"""Reading the stats file while it is absent, empty, half-written or replaced."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from genledger.monitor.source import StatsSource, read_stats

# A small hand-made stats document (the monitor reads any): not checked against the schema.
pytestmark = pytest.mark.stats_by_hand

STATS = {"schema_version": 1, "generated_at": "2027-01-15T08:00:00Z", "datasets": {}, "totals": {}}


def test_an_absent_file_is_no_stats_yet(tmp_path: Path) -> None:
    reading = read_stats(tmp_path / "stats.json")
    assert reading.stats is None and "no stats file" in reading.problem


def test_an_empty_or_half_written_file_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    path.write_bytes(b"")
    assert "empty" in read_stats(path).problem
    path.write_bytes(orjson.dumps(STATS)[:25])
    assert "incomplete" in read_stats(path).problem
    path.write_bytes(b"[1, 2]")
    assert "not a genledger stats JSON" in read_stats(path).problem


def test_the_source_keeps_the_last_good_stats_across_a_bad_write(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    source = StatsSource(path)
    assert source.poll() and source.last_good is None
    assert not source.poll()  # still absent: nothing new
    path.write_bytes(orjson.dumps(STATS))
    assert source.poll() and source.last_good is not None
    assert not source.poll()
    path.write_bytes(b'{"schema_version": 1, "genera')
    assert source.poll()
    assert source.last_good.stats == STATS and "incomplete" in source.problem


def test_an_atomic_replace_is_noticed_even_within_the_same_second(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    path.write_bytes(orjson.dumps(STATS))
    source = StatsSource(path)
    source.poll()
    newer = {**STATS, "generated_at": "2027-01-15T08:00:01Z"}
    temp = tmp_path / "stats.json.tmp"
    temp.write_bytes(orjson.dumps(newer))
    stamp = os.stat(path).st_mtime_ns
    os.utime(temp, ns=(stamp, stamp))  # same mtime: the new inode still gives it away
    os.replace(temp, path)
    assert source.poll()
    assert source.last_good is not None and source.last_good.stats == newer
