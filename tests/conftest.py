"""Shared fixtures: sample data roots built by the tests themselves."""

from __future__ import annotations

from collections.abc import Iterator
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


@pytest.fixture(autouse=True)
def _stats_match_the_schema(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test using `tmp_path`, every stats JSON under it matches the published
    schema (tests/stats_schema.py)."""
    checked = "tmp_path" in request.fixturenames and not request.node.get_closest_marker(
        "stats_by_hand"
    )
    folder = request.getfixturevalue("tmp_path") if checked else None
    yield
    if folder is not None:
        from tests.stats_schema import check_folder

        check_folder(folder)
