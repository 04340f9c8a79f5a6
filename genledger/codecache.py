"""Generated Python compiled once an install, as Python keeps a module's bytecode.

genledger generates source at start-up: the methods of its ~100 dataclasses (`dataclasses`
writes and compiles ~500 small functions), the typed decoders' fact constructors, the path
getters, the books' pass. Compiling them was ~30 ms of a 0.14 s no-op refresh. Here a
source's code object is kept by its exact text in one marshal file beside the package's
bytecode (`__pycache__/generated.<interpreter>.marshal`, headed by the interpreter's magic
number), so a later process compiles only what is new. The code is what `compile` gives for
the same text (tested equal); a missing, stale or damaged file is compiled anew, and one that
cannot be written (a read-only install, `PYTHONDONTWRITEBYTECODE`) is not written.

`dataclasses` compiles with the built-in `exec`; `install` makes its module's `exec` this
module's, which looks up the cache for a source made for a genledger module and hands every
other call to the built-in unchanged.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

# Sources a file keeps: past it, a save keeps only what its process used (sources of an
# older genledger, or of settings no longer used, are dropped then, not kept without end).
MAX_ENTRIES = 4096
PACKAGE = "genledger"

_codes: dict[str, CodeType] | None = None  # None: the file not read yet
_added = 0  # sources compiled in this process, not in the file
_used: set[str] = set()  # the keys this process asked for


def cache_path() -> Path:
    """The file of this interpreter's compiled sources (under `sys.pycache_prefix` if set)."""
    here = Path(__file__).resolve().parent
    name = f"generated.{sys.implementation.cache_tag}.marshal"
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix, *here.parts[1:], name)
    return here / "__pycache__" / name


def _loaded() -> dict[str, CodeType]:
    global _codes
    if _codes is None:
        _codes = _read(cache_path())
    return _codes


def _read(path: Path) -> dict[str, CodeType]:
    """The file's sources and code; empty when it is missing, stale or damaged."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(MAGIC_NUMBER):
        return {}
    try:
        found = marshal.loads(data[len(MAGIC_NUMBER) :])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if type(k) is str and type(v) is CodeType}


def compiled(source: str, filename: str) -> CodeType:
    """`compile(source, filename, "exec")`, from the cache when this text was compiled before."""
    global _added
    codes = _loaded()
    key = f"{sys.flags.optimize}\0{filename}\0{source}"
    _used.add(key)
    code = codes.get(key)
    if code is None:
        code = codes[key] = compile(source, filename, "exec")
        _added += 1
    return code


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
    """The built-in `exec`, with a genledger module's generated source from the cache."""
    if type(source) is str and not kwargs and _ours(globals):
        source = compiled(source, "<string>")
    builtins.exec(source, globals, locals, **kwargs)


def _ours(scope: Any) -> bool:
    name = scope.get("__name__") if isinstance(scope, dict) else None
    return isinstance(name, str) and (name == PACKAGE or name.startswith(PACKAGE + "."))


def install() -> None:
    """Let `dataclasses` compile genledger's dataclass methods through the cache."""
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(save)  # a collect, which ends with os._exit, saves by itself


def save() -> None:
    """Write the cache when this process compiled sources it lacked (atomically; quietly not
    where it cannot be written)."""
    global _added
    if not _added or _codes is None or sys.dont_write_bytecode:
        return
    path = cache_path()
    on_disk = _read(path)  # another process may have added its own since
    merged = {**on_disk, **_codes}
    if len(merged) > MAX_ENTRIES:
        merged = {key: _codes[key] for key in _used}
    import tempfile  # only a process that compiled something new pays for it

    with contextlib.suppress(OSError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".generated.")
        try:
            os.fchmod(fd, 0o644)  # readable by all, as Python's own bytecode files
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC_NUMBER + marshal.dumps(merged))
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    _added = 0
