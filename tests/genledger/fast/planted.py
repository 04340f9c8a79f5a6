"""A C extension of genledger.fast compiled from its source with bugs planted, for the tests
that show their properties catch such bugs."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType


def planted(source: Path, where: Path, *bugs: tuple[str, str]) -> ModuleType:
    """`source` (a `.c` file) compiled into `where` with each (right, wrong) swapped in, in
    the source or in a header of its own folder it includes, and imported under its own name."""
    texts = {source.name: source.read_text()}
    for header in re.findall(r'#include "([^"]+)"', texts[source.name]):
        texts[header] = (source.parent / header).read_text()
    for right, wrong in bugs:
        holders = [name for name, text in texts.items() if right in text]
        # the bug is planted once, not silently missed
        assert len(holders) == 1 and texts[holders[0]].count(right) == 1
        texts[holders[0]] = texts[holders[0]].replace(right, wrong)
    for name, text in texts.items():  # the copies: a quoted include finds its folder's first
        (where / name).write_text(text)
    copy = where / source.name
    target = where / f"{source.stem}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    include = sysconfig.get_paths()["include"]
    flags = ["-shared", "-fPIC", "-O2", f"-I{include}"]
    subprocess.run([*compiler, *flags, str(copy), "-o", str(target)], check=True)
    spec = importlib.util.spec_from_file_location(source.stem, target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
