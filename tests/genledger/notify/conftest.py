"""Fixtures: real HTTP and SMTP servers on 127.0.0.1, each in its own process group."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest


def load_servers() -> ModuleType:
    """The servers helper module, loaded by path (tests are not an importable package)."""
    spec = importlib.util.spec_from_file_location(
        "genledger_test_servers", Path(__file__).with_name("servers.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


servers = load_servers()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Start `http` (with an optional status plan per path) or `smtp` servers; stop them after."""
    started: list = []

    def start(kind: str, plan: dict[str, list[int]] | None = None):  # type: ignore[no-untyped-def]
        server = servers.start(kind, tmp_path, plan)
        started.append(server)
        return server

    yield start
    for server in started:
        servers.stop(server)


@pytest.fixture
def http_server(start_server):  # type: ignore[no-untyped-def]
    """An HTTP receiver answering 200 to everything."""
    return start_server("http")


@pytest.fixture
def smtp_server(start_server):  # type: ignore[no-untyped-def]
    """An aiosmtpd sink."""
    return start_server("smtp")


@pytest.fixture
def dead_port() -> int:
    """A 127.0.0.1 port with nothing listening: a dead server."""
    return int(servers.free_port())
