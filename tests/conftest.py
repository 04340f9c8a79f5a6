"""Shared fixtures: sample data roots built by the tests themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from genledger.config import Config
from genledger.synth.tree import write_sample_tree


@pytest.fixture
def sample_root(tmp_path: Path) -> Path:
    """A small finished run: clean, warn, error and pre-tokenized datasets."""
    return write_sample_tree(tmp_path / "data")


@pytest.fixture
def config_for(tmp_path: Path):
    """Build a Config pointing at a data root, with stats and state under tmp_path."""

    def build(root: Path) -> Config:
        return Config(
            data_root=root, stats_path=tmp_path / "out" / "stats.json", state_dir=tmp_path / "state"
        )

    return build
