"""Harness for the end-to-end suite: a live `dagster dev` over a growing temp data root.

One `dagster dev` (webserver + daemon, its own process group) serves the whole session; a
loopback webhook receiver records what the notification sensor sends; a simulated writer
appends records with torn writes; a small GraphQL client drives and reads the instance.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .dagster_api import DagsterApi, Materialized
from .harness import (
    ARTIFACTS,
    BUDGET_DATASET,
    PROJECT,
    SCHEDULE_CRON,
    SENSOR_INTERVAL_S,
    DagsterDev,
    Growing,
    GrowingWriter,
    SimulatedWriter,
    WebhookReceiver,
    budget_usd,
    free_port,
    start_dagster_dev,
    stop_dagster_dev,
    write_e2e_tree,
    write_growing_tree,
)
from .postgres import PgServer, start_postgres, stop_postgres, why_unavailable
from .topology import Topology, deploy_home, start_topology, stop_topology

# The production suite runs with the default sensor intervals (time to signal is measured on
# them); schedule runs every minute so that sensor, schedule and hand-launched runs mix.
PROD_SETTINGS = 'executor = "multiprocess"\nschedule_cron = "* * * * *"\n'

# --- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's scratch folder (data root, DAGSTER_HOME, stats, state, logs)."""
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def webhook() -> Iterator[WebhookReceiver]:
    """A loopback webhook receiver recording every POST."""
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="session")
def dagster_port() -> int:
    """The webserver's port, chosen up front so GENLEDGER_UI_URL can name it."""
    return free_port()


@pytest.fixture(scope="session")
def dagster_env(e2e_dir: Path, webhook: WebhookReceiver, dagster_port: int) -> dict[str, str]:
    """The environment dagster dev runs in: temp DAGSTER_HOME, data root, stats and state."""
    home = e2e_dir / "dagster_home"
    home.mkdir()
    project_yaml = PROJECT / "dagster.yaml"
    if project_yaml.is_file():
        shutil.copy(project_yaml, home / "dagster.yaml")
    settings = f'schedule_cron = "{SCHEDULE_CRON}"\nsensor_interval_s = {SENSOR_INTERVAL_S}\n'
    budget = f'[datasets."{BUDGET_DATASET}"]\nbudget_usd = {budget_usd(e2e_dir)!r}\n'
    return genledger_env(e2e_dir, home, settings, webhook, dagster_port, budget)


def own_dagster_dev_env(
    workdir: Path, dagster_settings: str, webhook: WebhookReceiver
) -> tuple[dict[str, str], int]:
    """A test's own `dagster dev`: a DAGSTER_HOME with the project's dagster.yaml under
    `workdir`, a free port, and its environment (`genledger_env`)."""
    home = workdir / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT / "dagster.yaml", home / "dagster.yaml")
    port = free_port()
    return genledger_env(workdir, home, dagster_settings, webhook, port), port


def genledger_env(
    workdir: Path,
    home: Path,
    dagster_settings: str,
    webhook: WebhookReceiver,
    port: int,
    more_settings: str = "",
) -> dict[str, str]:
    """This environment without GENLEDGER_*/DAGSTER_* plus the session's: a fresh data root."""
    config = workdir / "genledger.toml"
    config.write_text(f"[dagster]\n{dagster_settings}{more_settings}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    env.update(
        DAGSTER_HOME=str(home),
        GENLEDGER_CONFIG=str(config),
        GENLEDGER_DATA_ROOT=str(write_e2e_tree(workdir / "data")),
        GENLEDGER_STATS_PATH=str(workdir / "out" / "stats.json"),
        GENLEDGER_STATE_DIR=str(workdir / "state"),
        GENLEDGER_WEBHOOK_URL=webhook.url,
        GENLEDGER_UI_URL=f"http://127.0.0.1:{port}",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture(scope="session")
def dagster_dev(
    e2e_dir: Path, dagster_env: dict[str, str], dagster_port: int
) -> Iterator[DagsterDev]:
    """One live `dagster dev` for the session; stopped by process group, leftovers asserted."""
    log_path = e2e_dir / "dagster-dev.log"
    dev = start_dagster_dev(dagster_port, dagster_env, log_path)
    try:
        yield dev
    finally:
        leftovers = stop_dagster_dev(dev)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log_path, ARTIFACTS / "dagster-dev.log")
        assert not leftovers, f"processes left after stopping dagster dev: {leftovers}"


@pytest.fixture(scope="session")
def dagster_api(dagster_dev: DagsterDev) -> DagsterApi:
    """A GraphQL client for the live instance, once its code location has loaded."""
    api = DagsterApi(dagster_dev)
    api.wait_until_loaded()
    dagster_dev.remember_children()
    return api


@pytest.fixture(scope="session")
def writer(dagster_dev: DagsterDev) -> SimulatedWriter:
    """The simulated generation run writing into the live data root."""
    return SimulatedWriter(dagster_dev.data_root)


@pytest.fixture(scope="session")
def materialized(dagster_api: DagsterApi) -> Materialized:
    """Materialise every asset once over GraphQL and read back its check results."""
    # The sensor's first tick queues a run per dataset; launching after they finish keeps the
    # "latest materialization" of every asset this run's, as a user clicking later would see.
    dagster_api.wait_until_idle()
    keys = sorted(dagster_api.asset_groups())
    started = time.time()
    run_id = dagster_api.launch(keys)
    status = dagster_api.wait_for_run(run_id)
    dagster_api.dev.remember_children()
    return Materialized(run_id, status, keys, dagster_api.check_results(run_id), started)


# --- the production topology (deploy/): module-scoped, started only by its own suite ---------


@pytest.fixture(scope="module")
def prod_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The topology's scratch folder (data root, DAGSTER_HOME, stats, state, logs)."""
    return tmp_path_factory.mktemp("prod")


@pytest.fixture(scope="module")
def prod_webhook() -> Iterator[WebhookReceiver]:
    """The topology's own webhook receiver (the dagster dev suite's alerts stay apart)."""
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def prod_pg() -> Iterator[PgServer]:
    """A PostgreSQL server of our own on 127.0.0.1; stopped and checked gone at the end."""
    reason = why_unavailable()
    if reason is not None:
        pytest.skip(reason)
    server = start_postgres(free_port())
    yield server
    assert stop_postgres(server), f"PostgreSQL (pid {server.pid}) outlived pg_ctl stop"


@pytest.fixture(scope="module")
def prod_topology(
    prod_dir: Path, prod_webhook: WebhookReceiver, prod_pg: PgServer
) -> Iterator[Topology]:
    """Code server, webserver and daemon of deploy/, default sensor intervals, multiprocess."""
    port = free_port()
    home = deploy_home(prod_dir / "dagster_home")
    env = genledger_env(prod_dir, home, PROD_SETTINGS, prod_webhook, port)
    topology = start_topology(prod_pg, env, prod_dir, port)
    try:
        yield topology
    finally:
        leftovers = stop_topology(topology)
        ARTIFACTS.mkdir(exist_ok=True)
        for group in topology.groups:
            shutil.copy(group.log_path, ARTIFACTS / f"prod-{group.log_path.name}")
        assert not leftovers, f"processes left after stopping the topology: {leftovers}"


@pytest.fixture(scope="module")
def prod_api(prod_topology: Topology) -> DagsterApi:
    """A GraphQL client for the topology's webserver, once the code server's location loaded."""
    api = DagsterApi(prod_topology.webserver)
    api.wait_until_loaded()
    for group in prod_topology.groups:
        group.remember_children()
    return api


@pytest.fixture(scope="module")
def prod_writer(prod_topology: Topology) -> SimulatedWriter:
    """The simulated generation run writing into the topology's data root."""
    return SimulatedWriter(prod_topology.webserver.data_root, seed=23)


@pytest.fixture(scope="module")
def prod_materialized(prod_api: DagsterApi) -> Materialized:
    """Materialise every asset once over GraphQL (after the sensor's first run)."""
    prod_api.wait_until_idle()
    keys = sorted(prod_api.asset_groups())
    started = time.time()
    run_id = prod_api.launch(keys)
    status = prod_api.wait_for_run(run_id)
    return Materialized(run_id, status, keys, prod_api.check_results(run_id), started)


# --- many datasets growing at once: module-scoped, started only by its own suite -----------

MANY_DATASETS = 30


@pytest.fixture(scope="module")
def many_webhook() -> Iterator[WebhookReceiver]:
    """The growing suite's own webhook receiver."""
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def many(
    tmp_path_factory: pytest.TempPathFactory, many_webhook: WebhookReceiver
) -> Iterator[Growing]:
    """`dagster dev` with the default settings over MANY_DATASETS datasets, all growing."""
    workdir = tmp_path_factory.mktemp("many")
    # an empty [dagster]: the defaults
    env, port = own_dagster_dev_env(workdir, "", many_webhook)
    root = workdir / "growing"
    names = write_growing_tree(root, MANY_DATASETS)
    env["GENLEDGER_DATA_ROOT"] = str(root)
    dev = start_dagster_dev(port, env, workdir / "dagster-dev.log")
    writer = GrowingWriter(root, names)
    writer.start()
    try:
        yield Growing(dev, writer, names)
    finally:
        writer.halt.set()
        leftovers = stop_dagster_dev(dev)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(dev.log_path, ARTIFACTS / "dagster-dev-many.log")
        assert not leftovers, f"processes left after stopping dagster dev: {leftovers}"


@pytest.fixture(scope="module")
def many_api(many: Growing) -> DagsterApi:
    """A GraphQL client for the growing instance, once its code location has loaded."""
    api = DagsterApi(many.dev)
    api.wait_until_loaded()
    many.dev.remember_children()
    return api
