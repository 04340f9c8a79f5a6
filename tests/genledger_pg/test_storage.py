"""The instance storage class: a plain PostgreSQL URL is reached through psycopg2."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from genledger_pg import PostgresStorage, psycopg2_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u:p@db:5432/dagster", "postgresql+psycopg2://u:p@db:5432/dagster"),
        ("postgres://u:p@db/dagster", "postgresql+psycopg2://u:p@db/dagster"),
        ("POSTGRESQL://u@db/d?sslmode=require", "postgresql+psycopg2://u@db/d?sslmode=require"),
        ("postgresql+psycopg2://u:p@db/d", "postgresql+psycopg2://u:p@db/d"),
        ("postgresql+psycopg://u:p@db/d", "postgresql+psycopg://u:p@db/d"),  # the user's choice
    ],
)
def test_only_the_plain_scheme_is_given_a_driver(url: str, expected: str) -> None:
    assert psycopg2_url(url) == expected


def test_the_plain_form_would_otherwise_pick_psycopg_3() -> None:
    # Why the class exists: SQLAlchemy 2.1 maps the plain scheme to psycopg 3.
    assert sa.engine.make_url("postgresql://u@h/d").get_dialect().driver == "psycopg"
    assert sa.engine.make_url(psycopg2_url("postgresql://u@h/d")).get_dialect().driver == "psycopg2"


def test_the_storage_accepts_dagster_postgres_config() -> None:
    fields = PostgresStorage.config_type()
    assert "postgres_url" in fields
