"""Generated code compiled once an install (`genledger.codecache`): a process that reads the
cache gets the very code objects a process that compiles everything gets, for every method of
every dataclass of the package and every generated function; a damaged, stale or unwritable
cache only costs a compile; another package's `exec` is left alone."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import MAGIC_NUMBER
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger import codecache

# Every generated piece of code one process holds, by where it lives: the dataclasses'
# methods, the typed decoders' fact constructors, the books' pass, the settle function.
DUMP = r"""
import hashlib, json, sys, types
import genledger.config, genledger.refresh.collect, genledger.refresh.parallel
import genledger.refresh.count, genledger.parse.usage
from genledger import codecache
from genledger.ledger.books import account
from genledger.fast import shapes
account("responses"); account("tokenized")
def norm(c):
    if not isinstance(c, types.CodeType):
        return repr(c)
    parts = [getattr(c, a) for a in ATTRS]
    return repr((parts, [norm(k) for k in c.co_consts]))
ATTRS = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_filename",
         "co_name", "co_qualname", "co_firstlineno", "co_argcount", "co_posonlyargcount",
         "co_kwonlyargcount", "co_flags", "co_linetable", "co_exceptiontable", "co_stacksize")
def digest(c):
    return hashlib.sha256(norm(c).encode()).hexdigest()
out = {}
for name, module in sorted(sys.modules.items()):
    if not name.startswith("genledger"):
        continue
    for attr, value in sorted(vars(module).items()):
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename.startswith("<"):
            out[f"{name}.{attr}"] = digest(code)
        for method in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
            fn = vars(value).get(method) if isinstance(value, type) else None
            if getattr(value, "__module__", None) == name and hasattr(fn, "__code__"):
                out[f"{name}.{attr}.{method}"] = digest(fn.__code__)
print(json.dumps({"codes": out, "added": codecache._added, "path": str(codecache.cache_path())}))
codecache.save()
"""


def _dump(prefix: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-c", DUMP], env=env, capture_output=True, text=True, check=True
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_a_process_reading_the_cache_gets_the_code_a_compiling_one_gets(tmp_path: Path) -> None:
    first = _dump(tmp_path)
    assert Path(str(first["path"])).is_relative_to(tmp_path)
    assert Path(str(first["path"])).exists()
    second = _dump(tmp_path)
    codes = first["codes"]
    assert isinstance(codes, dict)
    # the dataclasses' methods and the generated functions are there, and all came cached
    assert "genledger.ledger.records.DatasetRecord.__init__" in codes
    assert "genledger.fast.shapes._SGLANG" in codes  # a typed decoder's fact constructor
    assert first["added"] and second["added"] == 0
    assert second["codes"] == codes


SOURCES = st.lists(st.sampled_from(["a", "b", "c1", "_x"]), min_size=1, max_size=4, unique=True)


@settings(max_examples=100, deadline=None)
@given(SOURCES, st.sampled_from(["<string>", "<books of responses>", "<usage.settle>"]))
def test_compiled_is_compile(names: list[str], filename: str) -> None:
    source = f"def f({', '.join(names)}):\n    return ({', '.join(names)},)\n"
    code = codecache.compiled(source, filename)
    assert code == compile(source, filename, "exec")
    assert marshal.loads(marshal.dumps(code)) == code


def test_the_same_text_under_another_name_is_another_code() -> None:
    source = "def g():\n    return 1\n"
    one, two = codecache.compiled(source, "<one>"), codecache.compiled(source, "<two>")
    assert (one.co_filename, two.co_filename) == ("<one>", "<two>")


@pytest.mark.parametrize(
    "content",
    [b"", MAGIC_NUMBER, b"\x00\x00\x00\x00" + marshal.dumps({}), MAGIC_NUMBER + b"\xff" * 9,
     MAGIC_NUMBER + marshal.dumps([1, 2]), MAGIC_NUMBER + marshal.dumps({"k": 1, 2: "x"})],
)  # fmt: skip
def test_a_damaged_or_stale_cache_is_compiled_anew(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "generated.marshal"
    path.write_bytes(content)
    assert codecache._read(path) == {}


def test_a_cache_that_cannot_be_written_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    monkeypatch.setattr(codecache, "cache_path", lambda: blocker / "sub" / "generated.marshal")
    monkeypatch.setattr(codecache, "_added", 1)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    codecache.save()  # no error
    assert not (tmp_path / "sub").exists()


def test_a_cache_is_written_whole_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c" / "generated.marshal"
    monkeypatch.setattr(codecache, "cache_path", lambda: path)
    monkeypatch.setattr(codecache, "_codes", {})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    code = codecache.compiled("def h():\n    return 2\n", "<h>")
    codecache.save()
    read = codecache._read(path)
    assert list(read.values()) == [code]
    assert codecache._added == 0
    assert [p.name for p in path.parent.iterdir()] == ["generated.marshal"]


def test_a_full_cache_keeps_what_its_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "generated.marshal"
    old = {f"0\0<old>\0{i}": compile(str(i), "<old>", "exec") for i in range(3)}
    path.write_bytes(MAGIC_NUMBER + marshal.dumps(old))
    monkeypatch.setattr(codecache, "cache_path", lambda: path)
    monkeypatch.setattr(codecache, "_codes", None)
    monkeypatch.setattr(codecache, "_used", set())
    monkeypatch.setattr(codecache, "MAX_ENTRIES", 3)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    kept = codecache.compiled("x = 1\n", "<new>")
    codecache.save()
    assert list(codecache._read(path).values()) == [kept]


def test_only_the_packages_own_dataclasses_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = codecache.compiled
    monkeypatch.setattr(codecache, "compiled", lambda s, f: made.append(s) or real(s, f))

    @dataclass(frozen=True)
    class Outside:  # this test module's: the built-in exec compiles it
        x: int

    assert made == []
    assert Outside(1) == Outside(1)
    with pytest.raises(AttributeError):
        Outside(1).x = 2  # type: ignore[misc]
    ours = type("Ours", (), {"__module__": "genledger.codecache", "__annotations__": {"y": int}})
    Made = dataclass(frozen=True)(ours)
    assert made  # a genledger module's: through the cache
    assert Made(3) == Made(3) and repr(Made(3)) == "Ours(y=3)"
    with pytest.raises(AttributeError):
        Made(3).y = 4


def test_a_collect_writes_the_cache_and_the_next_reads_it(tmp_path: Path) -> None:
    """`genledger collect` ends with `os._exit`: it saves before it, and a second collect of
    the same root (the scanning half, the books' pass) finds all it needs."""
    from .test_cli_collect import GENLEDGER, build_clean

    prefix, root = tmp_path / "prefix", tmp_path / "root"
    build_clean(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENLEDGER_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env |= {"PYTHONPYCACHEPREFIX": str(prefix), "HOME": str(tmp_path)}
    out = ["-o", str(tmp_path / "stats.json"), "--state", str(tmp_path / "state"), "-q"]
    for full in (["--full"], ["--full"]):
        done = subprocess.run([str(GENLEDGER), "collect", str(root), *out, *full], env=env)
        assert done.returncode in (0, 1)
    (cache,) = prefix.rglob("generated.*.marshal")
    before = cache.stat().st_mtime_ns, cache.read_bytes()
    done = subprocess.run([str(GENLEDGER), "collect", str(root), *out, "--full"], env=env)
    assert done.returncode in (0, 1)
    assert (cache.stat().st_mtime_ns, cache.read_bytes()) == before  # nothing new to save
    assert any(b"<books of responses>" in key.encode() for key in codecache._read(cache))
