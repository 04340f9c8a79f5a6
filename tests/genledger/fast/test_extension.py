"""The optional C extensions are found where built and are None where not."""

from __future__ import annotations

import sys

import pytest

from genledger.fast.extension import built
from tests.genledger.fast.builds import current_build

EXTENSIONS = ("_chatline", "_collapse", "_columns", "_deltas", "_lift", "_repeats", "_utf8")


@pytest.mark.parametrize("name", EXTENSIONS)
def test_a_built_extension_is_its_module(name: str) -> None:
    assert built(name) is current_build(name)


def test_an_extension_not_built_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # a None entry in sys.modules makes the import fail as a missing build does
    monkeypatch.setitem(sys.modules, "genledger.fast._lift", None)
    assert built("_lift") is None
    assert built("_never_built") is None
