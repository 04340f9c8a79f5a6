"""The SIMD UTF-8 check of a read (genledger.fast.utf8) against Python's strict decoder."""

from __future__ import annotations

import json
import threading

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast import utf8

TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
# Integers within int64: a bigger one in the first line of a read stops simdjson's stage 2 with
# a number error, which then reads as "cannot tell" (slower, never wrong).
INTS = st.integers(-(1 << 63), (1 << 63) - 1)
RECORDS = st.dictionaries(st.sampled_from(["text", "id", "a"]), TEXTS | INTS, max_size=3)
BAD_BYTES = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe4\xb8", b"\x80"]


def _read(records: list[dict[str, object]], ascii_only: bool) -> bytes:
    lines = [json.dumps(r, ensure_ascii=ascii_only).encode() for r in records]
    return b"".join(line + b"\n" for line in lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(RECORDS, min_size=1, max_size=6), st.booleans())
def test_valid_jsonl_reads_are_valid(records: list[dict[str, object]], ascii_only: bool) -> None:
    # The reads genledger checks are whole JSON lines: there the check always tells.
    data = _read(records, ascii_only)
    assert utf8.valid_utf8(data) is True
    assert utf8.valid_utf8(memoryview(data + b"{partial")[: len(data)]) is True


@settings(max_examples=300, deadline=None)
@given(
    st.lists(RECORDS, min_size=1, max_size=6),
    st.sampled_from(BAD_BYTES),
    st.integers(0, 1 << 16),
)
def test_invalid_bytes_anywhere_are_never_valid(
    records: list[dict[str, object]], bad: bytes, where: int
) -> None:
    data = _read(records, False)
    at = where % (len(data) + 1)
    broken = data[:at] + bad + data[at:]
    assert not utf8.by_decode(broken)
    assert utf8.valid_utf8(broken) is False


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_a_valid_answer_is_the_decoders_answer(data: bytes) -> None:
    # Any bytes at all: True only where the strict decoder agrees (False may mean: cannot tell).
    if utf8.valid_utf8(data):
        assert utf8.by_decode(data)


def test_texts_inside_strings_are_checked_in_the_middle_of_a_big_read() -> None:
    line = orjson.dumps({"text": "数据 équation — “quoted” " * 200, "output_ids": list(range(500))})
    data = (line + b"\n") * 300
    assert utf8.valid_utf8(data)
    middle = len(data) // 2
    middle = data.index(b"\xe2\x80\x9c", middle)  # a 3-byte character: cut it short
    assert not utf8.valid_utf8(data[:middle] + data[middle + 1 :])


def test_a_checker_that_fails_its_probe_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # If pysimdjson ever reports multiple documents another way, Python's decoder decides.
    utf8._checker.cache_clear()
    monkeypatch.setattr(utf8, "PASSED_STAGE_1", "SOMETHING_ELSE")
    try:
        assert utf8._checker() is utf8.by_decode
    finally:
        monkeypatch.undo()
        utf8._checker.cache_clear()
    assert utf8._checker() is not utf8.by_decode  # pysimdjson is a dependency


def test_threads_check_with_their_own_parsers() -> None:
    good = _read([{"text": "é" * 50}] * 200, False)
    bad = good[:-10] + b"\xff" + good[-10:]
    wrong: list[bytes] = []

    def check() -> None:
        for _ in range(200):
            if not utf8.valid_utf8(good) or utf8.valid_utf8(bad):
                wrong.append(b"x")

    threads = [threading.Thread(target=check) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong
