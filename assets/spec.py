"""What the code location knows at load time: the datasets found and any load problem."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from assets.naming import ROLE_ASSETS, dataset_keys, file_asset_key
from genledger.config import ENV_DATA_ROOT, Config, ConfigError, load_config
from genledger.ledger.records import counting_signature
from genledger.refresh.gone import source_in
from genledger.refresh.state import StateStore
from genledger.tail.discovery import DataFile, DataRootError, Dataset, discover, open_root
from genledger.tail.roots import root_id

ENV_DAGSTER_HOME = "DAGSTER_HOME"
LOG = dg.get_dagster_logger("genledger")


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset as the code location sees it: original name, asset key prefix, files."""

    name: str
    key: str
    dataset: Dataset

    @property
    def roles(self) -> tuple[str, ...]:
        """The file roles that become assets (responses, tokenized), in that order."""
        return tuple(role for role in ROLE_ASSETS if self.dataset.of_role(role))

    def asset_key(self, role: str) -> dg.AssetKey:
        """The asset key of this dataset's files of `role`."""
        return file_asset_key(self.key, role)

    @property
    def asset_keys(self) -> list[dg.AssetKey]:
        """The keys of all this dataset's file assets."""
        return [self.asset_key(role) for role in self.roles]


@dataclass(frozen=True)
class Location:
    """The loaded configuration, the dataset specs and, if loading failed, why."""

    config: Config
    specs: list[DatasetSpec] = field(default_factory=list)
    problem: str | None = None


METRICS_NAME = "genledger.prom"  # the Dagster refresh's metrics file, beside the stats JSON


def with_dagster_defaults(config: Config, env: dict[str, str]) -> Config:
    """Fill the stats path and state dir under `$DAGSTER_HOME/genledger` when unset, and the
    metrics file beside the stats JSON (docs/metrics.md)."""
    home = env.get(ENV_DAGSTER_HOME, "").strip()
    base = Path(home) / "genledger" if home else Path.home() / ".cache" / "genledger" / "dagster"
    stats = config.stats_path or base / "stats.json"
    state = config.state_dir or (base / "state" if home else None)
    metrics = config.metrics_path or stats.parent / METRICS_NAME
    return config.with_paths(stats_path=stats, state_dir=state, metrics_path=metrics)


def specs_for(datasets: list[Dataset]) -> list[DatasetSpec]:
    """One spec per dataset, keys collision-free among them."""
    keys = dataset_keys(ds.name for ds in datasets)
    return [DatasetSpec(ds.name, keys[ds.name], ds) for ds in datasets]


def load_location(config: Config | None = None, env: dict[str, str] | None = None) -> Location:
    """Read config and discover datasets; never raises: a problem is returned, named clearly."""
    env = dict(os.environ) if env is None else env
    try:
        # a bad `[[formats]]` path is named when the location loads (load_config parses them)
        config = load_config(env=env) if config is None else config
    except ConfigError as exc:
        return _problem(Config(), str(exc))
    config = with_dagster_defaults(config, env)
    if config.data_root is None:
        return _problem(
            config, f"{ENV_DATA_ROOT} is not set: point it at the folder of dataset folders"
        )
    try:
        datasets = discover(config.data_root, config)
    except DataRootError as exc:
        return _problem(config, f"{ENV_DATA_ROOT}={config.data_root}: {exc}")
    return Location(config, specs_for([*datasets, *counted_and_gone(config, datasets)]))


def counted_and_gone(config: Config, found: list[Dataset]) -> list[Dataset]:
    """The datasets the state dir knows were counted and the root no longer holds (a folder
    deleted, a share unmounted), each with the files it had: their assets stay, and fail."""
    assert config.data_root is not None
    signature = counting_signature(config.format_set, config.counting_settings())
    store = StateStore(config.resolved_state_dir(), root_id(config.data_root), signature)
    root = open_root(config.data_root)
    gone = []
    for name in store.other_datasets(ds.name for ds in found):
        folder = root.source(name)
        record = store.load(name, history_only=True)
        files = tuple(
            DataFile(name, f.name, f.role, source_in(folder, f.name), error="gone")
            for f in sorted(record.files.values(), key=lambda f: f.name)
            if f.ever_read and f.role in ROLE_ASSETS
        )
        if files:
            gone.append(Dataset(name, folder, files, config.n_prompts.get(name)))
    return gone


def _problem(config: Config, message: str) -> Location:
    LOG.error("genledger: %s", message)
    return Location(config, [], message)
