"""The duplicate rules' count in C (genledger/fast/_repeats.c) equals the definition's,
`genledger.rules.rows._repeats`, over many files of ids (any bytes, empty ones, ones equal
but for a prefix or suffix) and of int64 keys (the extremes too), with repeats within and
across files; the rules give the same stats with and without it on every real dataset; a
native variant with a planted bug is caught by the same checks.

The extension is built by the package's install (`pip install -e .`; CI does it), so these
tests FAIL, never skip, when it is missing: the rules would fall back to the definition.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from genledger.fast import repeats
from genledger.ledger.hashlist import HashList
from genledger.ledger.tally import FileTally
from genledger.refresh.count import tally_blocks
from genledger.refresh.dataset import duplicate_failures
from genledger.rules import rows
from genledger.tail.lines import Block

from .planted import planted as compiled
from .realfiles import FILES, SHARED

SOURCE = Path(repeats.__file__).with_name("_repeats.c")
IdFiles = list[list[bytes]]
# ids made of few pieces, so that many are equal, or equal but for a prefix or suffix
# (`a`, `a\x00`, `\x00a`), across the hash's 8-byte words; and any bytes at all
PIECES = [b"", b"a", b"\x00", b"ab", b"\xc3\xa9", b"12345678", b"\xff", b" "]
ID = st.lists(st.sampled_from(PIECES), max_size=4).map(b"".join) | st.binary(max_size=20)
ID_FILES = st.lists(st.lists(ID, max_size=30), max_size=8)
INT = st.integers(-3, 3) | st.sampled_from([-(2**63), 2**63 - 1]) | st.integers(-(2**63), 2**63 - 1)
INT_FILES = st.lists(st.lists(INT, max_size=30), max_size=8)


def _native() -> ModuleType:
    from genledger.fast import _repeats  # an ImportError here fails the test, never skips

    return _repeats


def _id_buffers(files: IdFiles) -> list[tuple[bytes, array[int]]]:
    return [(b"".join(ids), array("q", map(len, ids))) for ids in files]


def _definition(files: list[list[Any]]) -> int:
    return rows._repeats((str(i), keys, range(len(keys))) for i, keys in enumerate(files))[0]


def _ids_differ(native: ModuleType, files: IdFiles) -> bool:
    return bool(native.repeated_ids(_id_buffers(files)) != _definition(files))


def _ints_differ(native: ModuleType, files: list[list[int]]) -> bool:
    return bool(native.repeated_ints([array("q", keys) for keys in files]) != _definition(files))


def test_the_extension_is_built_from_the_current_source() -> None:
    assert repeats.NATIVE, (
        "genledger.fast._repeats is not importable: build it with `pip install -e .` "
        "(needs a C compiler); the duplicate rules would fall back to the Python definition"
    )
    built = Path(_native().__file__ or "")
    assert built.stat().st_mtime >= SOURCE.stat().st_mtime, (
        "genledger/fast/_repeats.c is newer than its build: run `pip install -e .`"
    )


@settings(max_examples=2000, deadline=None)
@given(ID_FILES)
def test_ids_repeat_as_the_definition_counts(files: IdFiles) -> None:
    assert not _ids_differ(_native(), files)


@settings(max_examples=2000, deadline=None)
@given(INT_FILES)
def test_int64_keys_repeat_as_the_definition_counts(files: list[list[int]]) -> None:
    assert not _ints_differ(_native(), files)


def test_many_keys_fill_the_table_past_its_first_sizes() -> None:
    keys = [f"id-{k % 70_001}".encode() for k in range(200_000)]
    files = [keys[:1], keys[1:150_000], [], keys[150_000:]]
    assert _native().repeated_ids(_id_buffers(files)) == 200_000 - 70_001
    ints = [array("q", range(k, 100_000, 3)) for k in range(3)] + [array("q", range(-5, 5))]
    assert _native().repeated_ints(ints) == 5


def test_bad_buffers_are_refused_with_an_error() -> None:
    native = _native()
    assert native.repeated_ids([]) == 0 and native.repeated_ints([]) == 0
    with pytest.raises(ValueError, match="add up"):
        native.repeated_ids([(b"abc", array("q", [1, 1]))])  # a byte left over
    with pytest.raises(ValueError, match="add up"):
        native.repeated_ids([(b"abc", array("q", [4]))])  # past the end
    with pytest.raises(ValueError, match="add up"):
        native.repeated_ids([(b"abc", array("q", [4, -1]))])
    with pytest.raises(ValueError, match="int64"):
        native.repeated_ids([(b"ab", array("i", [1, 1]))])
    with pytest.raises(ValueError, match="int64"):
        native.repeated_ints([array("d", [1.0])])
    with pytest.raises(TypeError):
        native.repeated_ints([[1, 2]])
    with pytest.raises(TypeError):
        native.repeated_ids([b"ab"])
    # lists the C count cannot read go to the definition
    assert repeats.repeated_ints([[1, 1]]) is None
    assert repeats.repeated_ids([(b"ab", [1, 1])]) is None


def _definition_rules(files: list[tuple[str, FileTally]]) -> dict[str, Any]:
    """The duplicate rules' stats of a dataset's files by the definition alone."""
    found = rows.id_failures([(name, t.ids) for name, t in files])
    found.update(rows.prompt_id_failures([(name, t.ids) for name, t in files]))
    found.update(rows.answer_failures([(n, t.hashes["answers"]) for n, t in files]))
    return {name: (t.count, t.examples) for name, t in found.items()}


def _refresh_rules(files: list[tuple[str, FileTally]]) -> dict[str, Any]:
    """The same stats as a refresh finds them (the counts in C)."""
    ids = [(name, t.ids) for name, t in files]
    found = duplicate_failures(ids, ids, [(n, t.hashes["answers"]) for n, t in files])
    return {name: (t.count, t.examples) for name, t in found.items()}


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_every_real_dataset_gets_the_same_duplicate_stats() -> None:
    datasets: dict[Path, list[tuple[str, FileTally]]] = {}
    for path in FILES:
        data = path.read_bytes()
        # each file twice: every id and answer repeats, and the examples are reached
        for copy in ("a", "b"):
            tally = tally_blocks([Block(data, 0, 0, len(data))], path.name, "responses")
            tally.hashes.setdefault("answers", HashList())
            datasets.setdefault(path.parent, []).append((f"{copy}-{path.name}", tally))
    assert repeats.NATIVE
    for folder, files in datasets.items():
        once = files[::2]  # each file once: the usual dataset, ids mostly distinct
        assert _refresh_rules(once) == _definition_rules(once), folder
        assert _refresh_rules(files) == _definition_rules(files), folder
    assert sum(bool(_definition_rules(f)) for f in datasets.values()) > len(datasets) // 2


def _caught(strategy: st.SearchStrategy[Any], differs: Callable[[Any], bool]) -> Any:
    return find(strategy, differs, settings=settings(max_examples=3000, database=None))


def test_a_table_that_ignores_the_ids_length_is_caught(tmp_path: Path) -> None:
    # the hash leaves the length out and the comparison reads the shorter key's bytes only:
    # `a` is then `a\x00` (the hash pads a key's last word with zeros)
    planted = compiled(
        SOURCE,
        tmp_path,
        ("0x9e3779b97f4a7c15ULL ^ (uint64_t)size;", "0x9e3779b97f4a7c15ULL;"),
        (
            "other->size == id->size\n                && memcmp(other->start, id->start, "
            "(size_t)id->size) == 0",
            "memcmp(other->start, id->start, "
            "(size_t)(id->size < other->size ? id->size : other->size)) == 0",
        ),
    )
    assert not _ids_differ(planted, [[b"ab", b"cd"], [b"ab"]])  # it works but for its bug
    found = _caught(ID_FILES, lambda files: _ids_differ(planted, files))
    assert len({len(key) for file in found for key in file}) > 1, found


def test_a_table_that_drops_each_files_last_key_is_caught(tmp_path: Path) -> None:
    planted = compiled(
        SOURCE,
        tmp_path,
        (
            "Py_ssize_t n = view->len / 8, repeats = 0;",
            "Py_ssize_t n = view->len / 8 - 1, repeats = 0;",
        ),
        ("(Py_ssize_t)sizeof(int64_t), at = 0", "(Py_ssize_t)sizeof(int64_t) - 1, at = 0"),
    )
    assert not _ints_differ(planted, [[1, 2, 3], [2, 4, 5]])  # it works but for its bug
    found = _caught(INT_FILES, lambda files: _ints_differ(planted, files))
    assert any(file and file[-1] in found_before(found, i) for i, file in enumerate(found)), found
    assert not _ids_differ(planted, [[b"a", b"b"], [b"a", b"c"]])
    found_ids = _caught(ID_FILES, lambda files: _ids_differ(planted, files))
    assert any(file and file[-1] in found_before(found_ids, i) for i, file in enumerate(found_ids))


def found_before(files: list[list[Any]], at: int) -> set[Any]:
    """The keys before the last one of file `at`."""
    return {key for file in files[:at] for key in file} | set(files[at][:-1])
