"""A C extension of genledger.fast compiled from its source with bugs planted, for the tests
that show their properties catch such bugs."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType


def planted(source: Path, where: Path, *bugs: tuple[str, str]) -> ModuleType:
    """`source` (a `.c` file) compiled into `where` with each (right, wrong) swapped in, and
    imported under its own name."""
    text = source.read_text()
    for right, wrong in bugs:
        assert text.count(right) == 1  # the bug is planted, not silently missed
        text = text.replace(right, wrong)
    copy = where / source.name
    copy.write_text(text)
    target = where / f"{source.stem}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    include = sysconfig.get_paths()["include"]
    flags = ["-shared", "-fPIC", "-O2", f"-I{include}", f"-I{source.parent}"]
    subprocess.run([*compiler, *flags, str(copy), "-o", str(target)], check=True)
    spec = importlib.util.spec_from_file_location(source.stem, target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
