"""Every real recorded file (../shared/realworld*/data) read in pieces counts as one whole
read: cut at each line into two pieces, and at chosen lines into three, joined as a growing
file's refreshes join them (`FileTally.__add__`) and as the split joins its pieces (`Chain`),
with the fast decoders on and off. Compared field by field: sums, counters, failures and
their examples, every id and answer list with its lines, the priced groups, the quantile
summaries. One field is compared without its order: the priced groups are a map (price key
to sums), whose keys' order is the order they were first met and means nothing."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config, Switches
from genledger.ledger.chain import Chain
from genledger.ledger.streambooks import StreamBooks
from genledger.ledger.tally import FileTally
from genledger.refresh.collect import refresh
from genledger.refresh.count import tally_blocks
from genledger.refresh.reading import DEFAULT_READING, Reading
from genledger.tail.lines import Block

from ..fast.realfiles import FILES

TWO_CUTS_UP_TO = 60  # every two-piece cut of a file's first lines; hypothesis picks the rest
OFF = replace(DEFAULT_READING, switches=Switches(typed_shapes=False, stand_ins=False, lift=False))
OLD = 1_700_000_000  # a file time long settled


def tally_of(data: bytes, start: int, reading: Reading) -> FileTally:
    """The tally of the lines of `data`, read from file offset `start`."""
    return tally_blocks([Block(data, start, 0, len(data))], "f.jsonl", "responses", reading)


def fields(tally: FileTally) -> dict[str, Any]:
    """Everything a settled file's tally keeps, the priced groups as a map."""
    settled = tally.settle_streams(StreamBooks("f.jsonl")).to_dict()
    settled.pop("streams")  # what is still open: nothing, once settled
    settled["groups"] = {k: sorted(map(repr, v)) for k, v in settled["groups"].items()}
    return settled


def pieces(lines: list[bytes], at: list[int], reading: Reading) -> tuple[FileTally, FileTally]:
    """The tally of `lines` cut before each line of `at`: joined by `+` and by `Chain`."""
    total, chain, offset = FileTally(), Chain(), 0
    for start, stop in zip([0, *at], [*at, len(lines)], strict=True):
        data = b"".join(lines[start:stop])
        piece = tally_of(data, offset, reading)
        total = total + piece.shifted(start)
        chain.add(piece, start)
        offset += len(data)
    return total, chain.tally()


def differing(lines: list[bytes], at: list[int], reading: Reading, whole: dict[str, Any]) -> Any:
    """The fields a cut read gets wrong, by join, else nothing."""
    out = {}
    for how, tally in zip(("add", "chain"), pieces(lines, at, reading), strict=True):
        got = fields(tally)
        wrong = [key for key in whole if got[key] != whole[key]]
        if wrong:
            out[how] = wrong
    return out


def test_every_real_file_cut_in_two_at_its_first_lines_counts_as_one_read() -> None:
    """A Gemini Interactions read cut after its first line counted 9 requests for 8 (a start
    without an id ended the request before the cut, which the head's join had ended); vLLM's
    and Gemini's ids and answer keys came out of line order (a request the join settled was
    listed before all the later piece's rows)."""
    wrong = {}
    for path in FILES:
        lines = path.read_bytes().splitlines(keepends=True)
        for reading in (DEFAULT_READING, OFF):
            whole = fields(tally_of(b"".join(lines), 0, reading))
            for cut in range(1, min(len(lines), TWO_CUTS_UP_TO)):
                found = differing(lines, [cut], reading, whole)
                if found:
                    wrong[f"{path.parent.name} {cut} {reading is OFF}"] = found
    assert not wrong


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FILES), st.lists(st.integers(1, 10**6), min_size=1, max_size=2))
def test_a_real_file_cut_in_three_anywhere_counts_as_one_read(path: Path, cuts: list[int]) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    at = sorted({1 + cut % max(len(lines) - 1, 1) for cut in cuts})
    whole = fields(tally_of(b"".join(lines), 0, DEFAULT_READING))
    assert not differing(lines, at, DEFAULT_READING, whole)


STREAMS = [p for p in FILES if "stream" in p.parent.name or "interactions" in p.parent.name]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(STREAMS), st.integers(1, 10**6), st.data())
def test_a_growing_real_stream_file_counts_as_a_full_scan(
    tmp_path_factory: Any, path: Path, cut: int, data: st.DataObject
) -> None:
    """Refreshes of the file while it grows, cut at a line, then once it settled."""
    lines = path.read_bytes().splitlines(keepends=True)
    at = 1 + cut % max(len(lines) - 1, 1)
    root = tmp_path_factory.mktemp("grow")
    out = root / "data" / path.parent.name / path.name
    out.parent.mkdir(parents=True)
    config = Config(data_root=root / "data", stats_path=root / "s.json", state_dir=root / "st")
    out.write_bytes(b"".join(lines[:at]))
    refresh(config)
    with out.open("ab") as more:
        more.write(b"".join(lines[at:]))
    os.utime(out, (OLD, OLD))
    grown = refresh(config).stats["datasets"][path.parent.name]
    full = refresh(config, full=True).stats["datasets"][path.parent.name]
    keys = ("n_done", "total_comp", "total_prompt", "stream_chunks", "n_failed")
    assert {k: grown.get(k) for k in keys} == {k: full.get(k) for k in keys}
