"""Counting a read's lines: the run reader (`FastDecoder.run_reader`, lines in the shape of the
line before) gives exactly the tally of the general path, on every real recorded line
(../shared/realworld*/data) and on the hard lines, however the lines are mixed, ordered and
cut into reads; a planted bug in it is caught."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Switches
from genledger.fast import chatline
from genledger.fast import lines as fastlines
from genledger.ledger.tally import FileTally
from genledger.refresh.count import tally_blocks
from genledger.refresh.reading import Reading
from genledger.synth.records import openai_chat
from genledger.tail.lines import Block

from ..blocks import blocks_of
from ..hard_lines import LIFT_RESPONSE_LINES, RESPONSE_LINES, RNG

SHARED = Path(__file__).resolve().parents[4] / "shared"
FILES = sorted(SHARED.glob("realworld*/data/*/*.jsonl"))
FAST = Reading()
GENERAL = Reading(switches=Switches(typed_shapes=False, stand_ins=False, lift=False))


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _chat(text: str) -> bytes:
    record = openai_chat("c", 3, 4, RNG)
    message = record["choices"][0]["message"]
    message["content"] = text
    message.pop("reasoning_content", None)  # beside a given trace, a tag in the text is no leak
    return orjson.dumps(record)


# chat lines whose texts make `plain_line` differ line by line (a think tag, an ASCII escape)
TAGGED = [_chat("<think>hm</think> 4"), _chat("x\u003cthink>"), _chat("4"), _chat("a\n\nb  c ")]
ESCAPED = [line.replace(b"<", b"\\u003c") for line in TAGGED]
POOL = [*RESPONSE_LINES, *TAGGED, *ESCAPED, b"", b"  ", b"{not json", b"[]"]
RUN = 20  # lines in a run: past the lines read one by one before a run reader
REAL = [line for path in FILES for line in _lines(path)]


def tally(lines: list[bytes], cuts: list[int], reading: Reading) -> dict[str, object]:
    """The tally of `lines` read in blocks ending after the line numbers in `cuts`."""
    found: FileTally = tally_blocks(blocks_of(lines, cuts), "f.jsonl", "responses", reading)
    return found.to_dict()


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parents[2].name}/{p.parent.name}" for p in FILES])
def test_every_real_file_counts_as_the_general_path_counts(path: Path) -> None:
    lines = _lines(path)
    cuts = list(range(0, len(lines), 7))  # many reads: each starts a run reader
    assert tally(lines, cuts, FAST) == tally(lines, cuts, GENERAL)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mixed_lines_in_any_order_and_reads_count_as_the_general_path(data: st.DataObject) -> None:
    pool = POOL + REAL if REAL else POOL
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=60))
    # runs of one line repeated, as files hold long runs of one shape
    repeats = data.draw(st.lists(st.integers(1, 20), min_size=len(picks), max_size=len(picks)))
    lines = [pool[i] for i, n in zip(picks, repeats, strict=True) for _ in range(n)]
    cuts = data.draw(st.lists(st.integers(0, len(lines)), max_size=6))
    assert tally(lines, cuts, FAST) == tally(lines, cuts, GENERAL)


def test_runs_of_lines_with_lifted_id_arrays_count_as_the_general_path() -> None:
    lines = [line for line in LIFT_RESPONSE_LINES for _ in range(RUN)]
    assert tally(lines, [len(lines) // 2], FAST) == tally(lines, [len(lines) // 2], GENERAL)


def test_a_run_reader_that_ignores_the_lines_flags_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # planted bug: every line of a read taken as plain, a think tag's line too
    lines = [TAGGED[2]] * 30 + [TAGGED[0]] + [TAGGED[2]] * 5  # a run, then a tag
    assert tally(lines, [], FAST) == tally(lines, [], GENERAL)
    # the typed run reader's own (the native tier, which would take the run, refuses a tag)
    monkeypatch.setattr(chatline, "BUILT", {})
    monkeypatch.setattr(fastlines, "read_plain", lambda flags: 3)
    fastlines.fast_decoder.cache_clear()
    try:
        assert tally(lines, [], FAST) != tally(lines, [], GENERAL)
    finally:
        fastlines.fast_decoder.cache_clear()


def test_a_walked_read_knows_its_line_count() -> None:
    # the native walk notes the lines of a read it took whole (`Block.walked`): the next read's
    # first line number is the one a count of the read's newlines gives
    lines = [_chat(f"answer {i}") for i in range(50)]
    data = b"".join(line + b"\n" for line in lines)
    blocks = [Block(data, 0, 7, len(data))]
    tally_blocks(blocks, "f.jsonl", "responses", FAST)
    assert blocks[0]._count == 50  # set by the walk (a fresh block counts on demand)
    assert blocks[0].next_number == 7 + data.count(b"\n")
