"""The duplicate-answer rule counts repeats with set operations and walks only the files that
hold one: the same count and examples as walking every answer key in order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger.hashlist import HashList
from genledger.rules import rows
from genledger.rules.result import MAX_EXAMPLES

# per file: (line, answer key) pairs; lines out of order, as a stream settles after later lines
KEYS = st.integers(-3, 3) | st.integers(-(2**63), 2**63 - 1)  # few keys: repeats everywhere
FILES = st.lists(st.lists(st.tuples(st.integers(1, 40), KEYS), max_size=12), max_size=5)


def _hashes(pairs: list[tuple[int, int]]) -> HashList:
    found = HashList()
    for line, key in pairs:
        found.append(line, key)
    return found


@settings(max_examples=400, deadline=None)
@given(FILES)
def test_answer_repeats_equal_a_walk_of_every_key(files: list[list[tuple[int, int]]]) -> None:
    listed = [(f"raw_responses_{i}.jsonl", _hashes(pairs)) for i, pairs in enumerate(files)]
    walk = [
        (name, line, key)
        for name, pairs in zip((n for n, _ in listed), files, strict=True)
        for line, key in sorted(pairs, key=lambda pair: pair[0])
    ]
    firsts: dict[int, tuple[str, int]] = {}
    repeats = []
    for name, line, key in walk:
        if key in firsts:
            repeats.append((name, line, key))
        else:
            firsts[key] = (name, line)
    found = rows.answer_failures(listed).get("duplicate_outputs")
    if not repeats:
        assert found is None
        return
    assert found is not None and found.count == len(repeats)
    assert [(e["file"], e["line"]) for e in found.examples] == [
        r[:2] for r in repeats[:MAX_EXAMPLES]
    ]
    for example, (name, _, key) in zip(found.examples, repeats, strict=False):
        where, line = firsts[key]
        # the earliest line of that answer in the file where it was first seen
        earliest = min(n for n, k in files[int(where.split("_")[-1].split(".")[0])] if k == key)
        assert example["reason"] == f"the same answer as line {earliest}" + (
            "" if where == name else f" of {where}"
        )
