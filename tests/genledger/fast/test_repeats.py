"""The duplicate rules' walk in C (genledger/fast/_repeats.c) equals the definition,
`genledger.rules.rows._repeats` and `_first_lines`: the same count, the same first repeats in
file and line order, and where each one's key was first seen (the first file holding it, its
earliest line there), over many files of ids (any bytes, empty ones, ones equal but for a
prefix or suffix) and of int64 keys (the extremes too), with repeats within and across
files, lines out of order, and the examples' limit reached or not; the rules give the same
stats with and without it on every real dataset; natives with planted bugs are caught by the
same checks.

The extension is built by the package's install (`pip install -e .`; CI does it), so these
tests FAIL, never skip, when it is missing: the rules would fall back to the definition.
"""

from __future__ import annotations

import copy
from array import array
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from genledger.fast import repeats
from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.tally import FileTally
from genledger.refresh.count import tally_blocks
from genledger.refresh.dataset import duplicate_failures
from genledger.rules import rows
from genledger.rules.result import MAX_EXAMPLES
from genledger.tail.lines import Block

from .builds import current_build
from .planted import planted as compiled
from .realfiles import FILES, SHARED

SOURCE = Path(repeats.__file__).with_name("_repeats.c")
# ids made of few pieces, so that many are equal, or equal but for a prefix or suffix
# (`a`, `a\x00`, `\x00a`), across the hash's 8-byte words; and any bytes at all
PIECES = [b"", b"a", b"\x00", b"ab", b"\xc3\xa9", b"12345678", b"\xff", b" "]
ID = st.lists(st.sampled_from(PIECES), max_size=4).map(b"".join) | st.binary(max_size=20)
INT = st.integers(-3, 3) | st.sampled_from([-(2**63), 2**63 - 1]) | st.integers(-(2**63), 2**63 - 1)
# lines as files hold them: mostly in order, some out of it (a stream listed when it
# settles), ties (records of one line), the int64 extremes
LINE = st.integers(1, 12) | st.sampled_from([-(2**63), 2**63 - 1])
Files = list[list[tuple[int, Any]]]


def _files(key: st.SearchStrategy[Any]) -> st.SearchStrategy[Files]:
    """Files of (line, key) pairs, each in line order or not."""
    one = st.lists(st.tuples(LINE, key), max_size=30)
    return st.lists(st.one_of(one, one.map(sorted)), max_size=8)


ID_FILES = _files(ID)
INT_FILES = _files(INT)
Walk = tuple[int, list[tuple[int, int, Any, int, int]]]


def _native() -> ModuleType:
    from genledger.fast import _repeats  # an ImportError here fails the test, never skips

    return _repeats


def _id_buffers(files: Files) -> list[tuple[bytes, array[int], array[int]]]:
    return [
        (
            b"".join(k for _, k in f),
            array("q", (len(k) for _, k in f)),
            array("q", (n for n, _ in f)),
        )
        for f in files
    ]


def _int_buffers(files: Files) -> list[tuple[array[int], array[int]]]:
    return [(array("q", (k for _, k in f)), array("q", (n for n, _ in f))) for f in files]


def _named(files: Files) -> list[tuple[str, list[Any], list[int]]]:
    return [(str(i), [k for _, k in f], [n for n, _ in f]) for i, f in enumerate(files)]


def _first_places(files: Files, keys: set[Any]) -> dict[Any, tuple[str, int]]:
    """`rows._first_lines`, the definition of where a key was first seen, for any keys."""
    listed = [(str(i), _Keys(f)) for i, f in enumerate(files)]
    return rows._first_lines(listed, keys)  # type: ignore[arg-type]


class _Keys:
    """A file's keys and lines as `rows.Keys`, for keys of any type."""

    def __init__(self, pairs: list[tuple[int, Any]]) -> None:
        self.keys = [k for _, k in pairs]
        self.lines = [n for n, _ in pairs]


def _as_definition(files: Files, walk: Walk) -> tuple[tuple[int, list[Any]], dict[Any, Any]]:
    """A native walk in the definition's terms: (count, first (file, line, key)) and each
    example key's first place (file, line)."""
    count, found = walk
    first = [(str(f), files[f][at][0], key) for f, at, key, _, _ in found]
    for f, at, key, _, _ in found:
        assert files[f][at][1] == key  # the place holds the key reported
    places = {key: (str(f), files[f][at][0]) for _, _, key, f, at in found}
    return (count, first), places


def _differs(walk: Callable[[Files], Walk], files: Files) -> bool:
    """Whether a native walk differs from the definition in anything it reports."""
    expected = rows._repeats(_named(files))
    places = _first_places(files, {key for _, _, key in expected[1]})
    return _as_definition(files, walk(files)) != (expected, places)


def _ids_walk(native: ModuleType) -> Callable[[Files], Walk]:
    return lambda files: native.first_ids(_id_buffers(files), MAX_EXAMPLES)  # type: ignore[no-any-return]


def _ints_walk(native: ModuleType) -> Callable[[Files], Walk]:
    return lambda files: native.first_ints(_int_buffers(files), MAX_EXAMPLES)  # type: ignore[no-any-return]


def test_the_extension_is_built_from_the_current_source() -> None:
    current_build("_repeats")
    assert repeats.NATIVE


@settings(max_examples=2000, deadline=None)
@given(ID_FILES)
def test_ids_repeat_as_the_definition_walks_them(files: Files) -> None:
    assert not _differs(_ids_walk(_native()), files)


@settings(max_examples=2000, deadline=None)
@given(INT_FILES)
def test_int64_keys_repeat_as_the_definition_walks_them(files: Files) -> None:
    assert not _differs(_ints_walk(_native()), files)


def _id_lists(files: Files) -> list[tuple[str, IdList]]:
    return [
        (str(i), IdList.of((n, k.decode(errors="replace")) for n, k in f))
        for i, f in enumerate(files)
    ]


def _hash_lists(files: Files) -> list[tuple[str, HashList]]:
    out = []
    for i, f in enumerate(files):
        keys = HashList()
        for line, key in f:
            keys.append(line, key)
        out.append((str(i), keys))
    return out


@settings(max_examples=500, deadline=None)
@given(ID_FILES, INT_FILES)
def test_the_rules_give_the_same_tallies_with_the_native_walk(ids: Files, keys: Files) -> None:
    listed, answers = _id_lists(ids), _hash_lists(keys)
    found = repeats.repeated_ids([(i.data, i.lengths, i.lines) for _, i in listed], MAX_EXAMPLES)
    assert found is not None
    assert rows.id_failures(listed, found) == rows.id_failures(listed)
    assert rows.prompt_id_failures(listed, found) == rows.prompt_id_failures(listed)
    walked = repeats.repeated_ints([(h.keys, h.lines) for _, h in answers], MAX_EXAMPLES)
    assert walked is not None
    assert rows.answer_failures(answers, walked) == rows.answer_failures(answers)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_the_examples_stop_at_their_limit(extra: int) -> None:
    repeated = MAX_EXAMPLES + extra  # one key and its repeats, the last ones on earlier lines
    files = [[(9, 7), (1, 5)], [(n, 7) for n in range(repeated + 1, 1, -1)], [], [(1, 5)]]
    expected = rows._repeats(_named(files))
    assert expected[0] == repeated + 1 and len(expected[1]) == min(MAX_EXAMPLES, repeated + 1)
    assert not _differs(_ints_walk(_native()), files)
    as_ids = [[(n, str(k).encode()) for n, k in f] for f in files]
    assert not _differs(_ids_walk(_native()), as_ids)


def test_many_keys_fill_the_table_past_its_first_sizes() -> None:
    ids = [(k, f"id-{k % 70_001}".encode()) for k in range(200_000)]
    files = [ids[:1], ids[1:150_000], [], ids[150_000:]]
    assert not _differs(_ids_walk(_native()), files)
    assert _ids_walk(_native())(files)[0] == 200_000 - 70_001
    ints = [[(n, n) for n in range(k, 100_000, 3)] for k in range(3)] + [
        [(1, n) for n in range(-5, 5)]
    ]
    assert _ints_walk(_native())(ints)[0] == 5
    assert not _differs(_ints_walk(_native()), ints)


def test_bad_buffers_are_refused_with_an_error() -> None:
    native = _native()
    q = array("q")
    assert native.first_ids([], 5) == (0, []) and native.first_ints([], 5) == (0, [])
    with pytest.raises(ValueError, match="add up"):
        native.first_ids([(b"abc", array("q", [1, 1]), array("q", [1, 2]))], 5)  # a byte left
    with pytest.raises(ValueError, match="add up"):
        native.first_ids([(b"abc", array("q", [4]), array("q", [1]))], 5)  # past the end
    with pytest.raises(ValueError, match="add up"):
        native.first_ids([(b"abc", array("q", [4, -1]), array("q", [1, 2]))], 5)
    with pytest.raises(ValueError, match="int64"):
        native.first_ids([(b"ab", array("i", [1, 1]), array("q", [1, 2]))], 5)
    with pytest.raises(ValueError, match="int64"):
        native.first_ints([(array("d", [1.0]), array("q", [1]))], 5)
    with pytest.raises(ValueError, match="int64"):
        native.first_ints([(array("q", [1]), array("i", [1]))], 5)
    with pytest.raises(ValueError, match="as many lines"):
        native.first_ints([(array("q", [1, 1]), array("q", [1]))], 5)
    with pytest.raises(ValueError, match="as many lines"):
        native.first_ids([(b"ab", array("q", [1, 1]), array("q", [1, 2, 3]))], 5)
    with pytest.raises(ValueError, match="negative"):
        native.first_ints([(array("q", [1, 1]), array("q", [1, 2]))], -1)
    with pytest.raises(TypeError):
        native.first_ints([[1, 2]], 5)
    with pytest.raises(TypeError):
        native.first_ints([(q, q, q)], 5)
    with pytest.raises(TypeError):
        native.first_ids([(b"ab", q)], 5)
    assert native.first_ints([(array("q", [1, 1]), array("q", [1, 2]))], 0) == (1, [])
    # lists the C walk cannot read go to the definition
    assert repeats.repeated_ints([([1, 1], array("q", [1, 2]))], 5) is None
    assert repeats.repeated_ints([(array("q", [1, 1]), [1, 2])], 5) is None
    assert repeats.repeated_ids([(b"ab", [1, 1], array("q", [1, 2]))], 5) is None


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
        for twin in ("a", "b"):
            tally = tally_blocks([Block(data, 0, 0, len(data))], path.name, "responses")
            tally.hashes.setdefault("answers", HashList())
            datasets.setdefault(path.parent, []).append((f"{twin}-{path.name}", tally))
    assert repeats.NATIVE
    # the lists a refresh holds are the arrays the C walk reads (else it would fall back)
    _, tally = datasets[FILES[0].parent][0]
    ids = tally.ids
    assert repeats.repeated_ids([(ids.data, ids.lengths, ids.lines)], 5) is not None
    answers = tally.hashes["answers"]
    assert repeats.repeated_ints([(answers.keys, answers.lines)], 5) is not None
    for folder, files in datasets.items():
        once = files[::2]  # each file once: the usual dataset, ids mostly distinct
        assert _refresh_rules(once) == _definition_rules(once), folder
        assert _refresh_rules(files) == _definition_rules(files), folder
        # the recorded files' lines are in order; a stream that settles late reorders them
        backwards = [(name, _lines_reversed(t)) for name, t in files]
        assert _refresh_rules(backwards) == _definition_rules(backwards), folder
    assert sum(bool(_definition_rules(f)) for f in datasets.values()) > len(datasets) // 2


def _lines_reversed(tally: FileTally) -> FileTally:
    """`tally` with the lines of its ids and answer keys in reverse (the keys in order)."""
    out = copy.copy(tally)
    out.ids = copy.copy(tally.ids)
    out.ids.lines = array("q", reversed(tally.ids.lines))
    answers = copy.copy(tally.hashes["answers"])
    answers.lines = array("q", reversed(answers.lines))
    out.hashes = {**tally.hashes, "answers": answers}
    return out


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
    walk = _ids_walk(planted)
    assert not _differs(walk, [[(1, b"ab"), (2, b"cd")], [(1, b"ab")]])  # it works but for its bug
    found = _caught(ID_FILES, lambda files: _differs(walk, files))
    assert len({len(key) for file in found for _, key in file}) > 1, found


def test_a_walk_that_drops_each_files_last_key_is_caught(tmp_path: Path) -> None:
    planted = compiled(
        SOURCE,
        tmp_path,
        ("Py_ssize_t n = file->keys.len / 8;\n", "Py_ssize_t n = file->keys.len / 8 - 1;\n"),
        (
            "Py_ssize_t n = file->keys.len / 8, at = 0;",
            "Py_ssize_t n = file->keys.len / 8 - 1, at = 0;",
        ),
    )
    for walk, files in _both(planted):
        assert not _differs(walk, _keyed([[1, 2, 3], [1, 4, 5]], files))  # works but for its bug
        found = _caught(files, lambda files, walk=walk: _differs(walk, files))
        keys = [[k for _, k in file] for file in found]
        assert any(file and file[-1] in found_before(keys, i) for i, file in enumerate(keys)), found


def test_a_walk_that_ignores_line_order_is_caught(tmp_path: Path) -> None:
    # the files walked in index order whatever their lines: right for files in line order
    planted = compiled(SOURCE, tmp_path, ("if (k >= n)\n        return NULL;", "return NULL;"))
    for walk, files in _both(planted):
        assert not _differs(walk, _keyed([[1, 2, 1], [2]], files))  # it works but for its bug
        found = _caught(files, lambda files, walk=walk: _differs(walk, files))
        assert any(_out_of_order(file) for file in found), found


def test_a_scan_that_keeps_a_keys_latest_place_is_caught(tmp_path: Path) -> None:
    # a later copy in the first file holding a key taken as its first place (a repeat then
    # names its own line, or a copy after the first)
    planted = compiled(SOURCE, tmp_path, ("lines[k] >= r->first_line", "lines[k] < r->first_line"))
    for walk, files in _both(planted):
        assert not _differs(walk, _keyed([[5, 6], [6, 5]], files))  # it works but for its bug
        found = _caught(files, lambda files, walk=walk: _differs(walk, files))
        assert any(len({k for _, k in file}) < len(file) for file in found), found


def test_a_scan_that_takes_the_first_index_not_the_earliest_line_is_caught(
    tmp_path: Path,
) -> None:
    # right wherever a file's lines are in order
    planted = compiled(SOURCE, tmp_path, ("lines[k] >= r->first_line", "1"))
    for walk, files in _both(planted):
        assert not _differs(walk, _keyed([[5, 6, 5], [6, 5]], files))  # it works but for its bug
        found = _caught(files, lambda files, walk=walk: _differs(walk, files))
        assert any(_out_of_order(file) for file in found), found


def test_a_place_taken_in_walk_order_not_in_the_files_arrays_is_caught(tmp_path: Path) -> None:
    # an id's place is its index in its file's arrays, not its rank in line order
    planted = compiled(
        SOURCE, tmp_path, ("(Place){f, indices[k]}", "(Place){f, (uint32_t)(first + k)}")
    )
    walk = _ids_walk(planted)
    assert not _differs(walk, [[(1, b"a"), (2, b"a")], [(1, b"a")]])  # it works but for its bug
    found = _caught(ID_FILES, lambda files: _differs(walk, files))
    assert any(_out_of_order(file) for file in found), found


def test_examples_one_short_of_the_limit_are_caught(tmp_path: Path) -> None:
    planted = compiled(
        SOURCE, tmp_path, ("if (w->n_found < w->wanted)", "if (w->n_found < w->wanted - 1)")
    )
    walk = _ints_walk(planted)
    assert not _differs(walk, [[(1, 5), (2, 5)], [(1, 6), (2, 5)]])  # it works but for its bug
    found = _caught(INT_FILES, lambda files: _differs(walk, files))
    assert rows._repeats(_named(found))[0] >= MAX_EXAMPLES, found


def _both(native: ModuleType) -> Iterator[tuple[Callable[[Files], Walk], st.SearchStrategy[Files]]]:
    """`native`'s two walks, each with the files it walks."""
    yield _ints_walk(native), INT_FILES
    yield _ids_walk(native), ID_FILES


def _keyed(keys: list[list[int]], files: st.SearchStrategy[Files]) -> Files:
    """Files of `keys` on lines 1, 2, ...: ids (their digits) for the ids' walk."""
    as_id = files is ID_FILES
    return [[(n, str(k).encode() if as_id else k) for n, k in enumerate(f, 1)] for f in keys]


def _out_of_order(file: list[tuple[int, Any]]) -> bool:
    return any(b[0] < a[0] for a, b in pairwise(file))


def found_before(files: list[list[Any]], at: int) -> set[Any]:
    """The keys before the last one of file `at`."""
    return {key for file in files[:at] for key in file} | set(files[at][:-1])
