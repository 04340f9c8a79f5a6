"""The optional C extensions of the speed wing, imported where the install built them."""

from __future__ import annotations

import importlib
from types import ModuleType


def built(name: str) -> ModuleType | None:
    """The extension `genledger.fast.<name>`, or None where it was not built: the build is
    optional (an install without a compiler), and each caller then runs its Python
    definition."""
    try:
        return importlib.import_module(f"genledger.fast.{name}")
    except ImportError:
        return None
