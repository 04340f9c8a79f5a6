"""Whether a C extension of genledger.fast is built from its current source, for the tests
that would otherwise test a stale build."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

FAST = Path(__file__).resolve().parents[3] / "genledger" / "fast"
SHARED_HEADER = FAST / "_cmodule.h"


def current_build(name: str) -> ModuleType:
    """The extension genledger.fast.`name`, asserted importable and built after its source
    and the header every extension includes were last changed."""
    try:
        module = importlib.import_module(f"genledger.fast.{name}")
    except ImportError as error:  # a missing build fails its tests, never skips them
        raise AssertionError(
            f"genledger.fast.{name} is not importable: build it with `pip install -e .` "
            "(needs a C compiler); its Python definition would run instead"
        ) from error
    built = Path(module.__file__ or "").stat().st_mtime
    for source in (FAST / f"{name}.c", SHARED_HEADER):
        assert built >= source.stat().st_mtime, (
            f"{source.name} is newer than genledger.fast.{name}'s build: run `pip install -e .`"
        )
    return module
