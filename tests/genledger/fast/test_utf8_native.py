"""The UTF-8 check in C (genledger/fast/_utf8.c), its AVX2 scan and its byte-by-byte path,
equals Python's strict decoder (`genledger.fast.utf8.by_decode`, the definition) on any
bytes, on texts of every sequence length cut and broken anywhere across the scan's 32-byte
blocks, and on every file of the real recorded responses; a variant with a planted bug is
caught by the same checks.

The extension is built by the package's install (`pip install -e .`; CI does it), so these
tests FAIL, never skip, when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from genledger.fast import utf8

from .builds import current_build
from .planted import planted as compiled
from .realfiles import FILES, SHARED

SOURCE = Path(utf8.__file__).with_name("_utf8.c")
# Whole sequences of every length and range edge, and the ways to break one: overlong forms,
# surrogates, past U+10FFFF, lone leads and continuations, bytes UTF-8 never holds; runs of
# ASCII between them move them across the 32-byte blocks.
PIECES = st.sampled_from(
    [b"a", b"\x00", b"\x7f", b"\xc2\x80", b"\xdf\xbf", b"\xc3\xa9", b"\xe0\xa0\x80",
     b"\xe6\x95\xb0", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf", b"\xf0\x90\x80\x80",
     b"\xf0\x9f\x98\x80", b"\xf4\x8f\xbf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80",
     b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80",
     b"\xf5\x80\x80\x80", b"\xf8", b"\xff", b"\x80", b"\xbf", b"\xc3", b"\xe6\x95", b"\xf0\x9f",
     b"\xf0\x9f\x98"]
)  # fmt: skip
ASCII = st.integers(0, 40).map(lambda n: b"x" * n)
TEXTS = st.lists(st.one_of(PIECES, ASCII), max_size=40).map(b"".join)
Valid = Callable[..., bool]


def _native() -> Any:
    from genledger.fast import _utf8  # an ImportError here fails the test, never skips

    return _utf8


def _differs(module: Any, data: bytes) -> bool:
    """Whether either path of `module` disagrees with the decoder on `data`, given as bytes
    or as a view inside a larger buffer."""
    expected = utf8.by_decode(data)
    for given_ in (data, memoryview(b"\xe6" + data + b"\x80")[1:-1]):
        if module.valid(given_) != expected or module.valid(given_, False) != expected:
            return True
    return False


def test_the_extension_is_built_from_the_current_source_and_used() -> None:
    module = current_build("_utf8")
    # where the CPU has AVX2 the reads take the C scan (else simdjson's or the decoder)
    assert (utf8.NATIVE is not None) == module.vectorised()


@settings(max_examples=3000, deadline=None)
@given(TEXTS)
def test_texts_of_every_sequence_broken_anywhere_are_judged_as_the_decoder_judges(
    data: bytes,
) -> None:
    assert not _differs(_native(), data)


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_judged_as_the_decoder_judges(data: bytes) -> None:
    assert not _differs(_native(), data)


def test_the_edges_are_judged_alike() -> None:
    module = _native()
    for n in range(0, 70):
        for tail in (b"", b"\xc3", b"\xe6\x95", b"\xf0\x9f\x98", b"\x80", b"\xc3\xa9"):
            assert not _differs(module, b"x" * n + tail), (n, tail)
            assert not _differs(module, tail + b"x" * n), (n, tail)
    with pytest.raises(TypeError):
        module.valid("a str is no buffer")


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_every_real_file_is_judged_as_the_decoder_judges() -> None:
    module = _native()
    for path in FILES:
        data = path.read_bytes()
        assert module.valid(data) == utf8.by_decode(data), path
        assert not _differs(module, data[: len(data) // 2]), path  # cut anywhere


def test_a_native_check_with_a_planted_bug_is_caught(tmp_path: Path) -> None:
    # planted bug: a surrogate's lead (`ED`) no longer flags `ED A0..BF`
    right = "CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,"
    planted = compiled(SOURCE, tmp_path, (right, "CARRY | TOO_LARGE | TOO_LARGE_1000,"))
    if not planted.vectorised():
        pytest.fail("this test needs a CPU with AVX2, as the benchmarks' machine has")
    assert not _differs(planted, "a surrogate-free text: é 数".encode())
    found = find(
        TEXTS,
        lambda data: planted.valid(data) != utf8.by_decode(data),
        settings=settings(max_examples=5000, database=None),
    )
    assert b"\xed" in found, found
