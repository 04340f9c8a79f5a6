"""Fixtures of the Dagster asset tests: a sample tree materialised once per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import orjson
import pytest

from assets.spec import Location, load_location
from definitions import build_defs
from genledger.config import Config
from genledger.refresh.collect import refresh
from genledger.synth.tree import write_sample_tree


def location_for(root: Path, scratch: Path) -> Location:
    """A location over `root`, with stats and state under `scratch`."""
    config = Config(data_root=root, stats_path=scratch / "stats.json", state_dir=scratch / "state")
    return load_location(config, env={})


@dataclass
class Materialized:
    """One materialisation of every asset of a location, and what the engine says alone."""

    location: Location
    result: dg.ExecuteInProcessResult
    engine: dict[str, Any]  # `genledger collect`'s stats JSON of the same tree

    def checks(self) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
        """(asset key string, check name) -> evaluation."""
        return {
            (e.asset_key.to_user_string(), e.check_name): e
            for e in self.result.get_asset_check_evaluations()
        }

    def materializations(self) -> dict[str, dict[str, Any]]:
        """asset key string -> its metadata values."""
        return {
            e.asset_key.to_user_string(): {
                k: v.value for k, v in e.materialization.metadata.items()
            }
            for e in self.result.get_asset_materialization_events()
        }

    def written_stats(self) -> dict[str, Any]:
        """The stats JSON the stats_json asset wrote."""
        assert self.location.config.stats_path is not None
        return dict(orjson.loads(self.location.config.stats_path.read_bytes()))


def materialize_all(location: Location) -> dg.ExecuteInProcessResult:
    """Materialise every asset (and check) of the location on a temporary instance."""
    defs = build_defs(location)
    with dg.instance_for_test() as instance:
        return dg.materialize(list(defs.assets or []), instance=instance, raise_on_error=False)


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Materialized:
    """The shared sample tree (clean, warn, error, pre-tokenized) materialised once."""
    base = tmp_path_factory.mktemp("sample")
    root = write_sample_tree(base / "data")
    location = location_for(root, base / "dagster")
    result = materialize_all(location)
    collect = Config(
        data_root=root, stats_path=base / "collect" / "stats.json", state_dir=base / "collect"
    )
    return Materialized(location, result, refresh(collect).stats)
