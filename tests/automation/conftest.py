"""Fixtures of the schedule and sensor tests: a location over a small sample tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets.spec import Location, load_location
from genledger.config import Config, DagsterSettings
from genledger.synth.tree import write_sample_tree


@pytest.fixture
def sample_location(tmp_path: Path) -> Location:
    """A location over a fresh four-dataset sample tree, with time for a refresh run to record
    every changed dataset (a busy machine must not make a test flaky)."""
    root = write_sample_tree(tmp_path / "data", records=6)
    config = Config(
        data_root=root,
        stats_path=tmp_path / "stats.json",
        state_dir=tmp_path / "st",
        dagster=DagsterSettings(record_seconds=600),
    )
    return load_location(config, env={})
