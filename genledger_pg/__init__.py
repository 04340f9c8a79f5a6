"""Dagster instance storage in PostgreSQL that reaches the server through psycopg2.

`deploy/dagster.yaml` names this class instead of dagster-postgres's own: SQLAlchemy 2.1 maps
a plain `postgresql://` URL to psycopg 3, which is not installed here and whose connections
dagster-postgres's SQL closes (its `with conn:` blocks close a psycopg 3 connection; the
webserver then fails with "the connection is closed"). Naming the driver in the URL keeps the
plain form of DAGSTER_PG_URL working. This package is Dagster-only: the engine never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage

DRIVER_SCHEME = "postgresql+psycopg2"
PLAIN_SCHEMES = ("postgresql", "postgres")


def psycopg2_url(url: str) -> str:
    """`url` with a plain `postgresql://` (or `postgres://`) scheme made `postgresql+psycopg2://`.

    URLs that already name a driver are left as they are: that choice is the user's.
    """
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in PLAIN_SCHEMES:
        return f"{DRIVER_SCHEME}://{rest}"
    return url


class PostgresStorage(DagsterPostgresStorage):
    """dagster-postgres's storage (runs, event logs, schedules) with the URL's driver pinned."""

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> DagsterPostgresStorage:
        """Build the storage from the instance config, `postgres_url` normalised first."""
        config = dict(config_value)
        if config.get("postgres_url"):
            config["postgres_url"] = psycopg2_url(str(config["postgres_url"]))
        return super().from_config_value(inst_data, config)  # type: ignore[arg-type]
