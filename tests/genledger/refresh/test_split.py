"""A read cut into pieces at line starts and joined back equals the whole read."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from genledger.ledger.tally import FileTally
from genledger.refresh import split
from genledger.refresh.filescan import FileScan
from genledger.refresh.scan import scan_file
from genledger.tail.checkpoint import Checkpoint

from ..hard_lines import RESPONSE_LINES, TOKENIZED_LINES
from .canonical import canonical


def pieces_of(path: Path, role: str, cp: Checkpoint | None, size: int) -> FileScan | None:
    """Plan, scan every piece in place, join; None when the plan keeps the read whole."""
    plan = split.plan(path, cp, size)
    if plan is None:
        return None
    scans = [scan_file(path, path.name, role, plan.checkpoint, span) for span in plan.spans]
    one_by_one, lines = FileTally(), plan.checkpoint.lines if plan.start else 0
    for scan in scans:  # the pieces added one by one, as the join did before it chained them
        if scan.read is not None:
            one_by_one, lines = (
                one_by_one + scan.delta.shifted(lines),
                lines + scan.read.checkpoint.lines,
            )
    joined = split.join(plan, scans)
    # the chain keeps the exact order of the one-by-one sum (a stream settled at a cut too)
    assert joined is None or joined.delta.to_dict() == one_by_one.to_dict()
    # pieces taken as they come in, last first, join as the ones taken in order
    joining = split.Joining(plan)
    for index, span in reversed(list(enumerate(plan.spans))):
        joining.take(index, scan_file(path, path.name, role, plan.checkpoint, span))
    late = joining.result()
    assert (late is None) == (joined is None)
    assert late is None or joined is None or same(late, joined)
    return joined


def same(a: FileScan, b: FileScan) -> bool:
    # Dicts compare whatever the order their keys were merged in (the stats JSON sorts them).
    # (a stream crossing a cut is listed where the join settles it: canonical order)
    return canonical(a.delta.to_dict()) == canonical(b.delta.to_dict()) and a.read == b.read


def test_hard_lines_cut_anywhere_join_to_the_whole_read(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    body = b"\n".join(RESPONSE_LINES * 3) + b"\n"
    path.write_bytes(b"\xef\xbb\xbf" + body.replace(b"\n", b"\r\n", 7) + b"\n\n" + b'{"torn')
    whole = scan_file(path, path.name, "responses", None)
    assert whole.delta.failures and whole.delta.ids  # examples and ids are compared too
    for size in (64, 500, 4096, len(body) // 2):
        joined = pieces_of(path, "responses", None, size)
        assert joined is not None and same(joined, whole), size


def test_a_resumed_read_is_cut_after_its_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "tokenized_data.jsonl"
    body = b"\n".join(TOKENIZED_LINES) + b"\n"
    path.write_bytes(body)
    first = scan_file(path, path.name, "tokenized", None)
    assert first.read is not None
    with path.open("ab") as out:
        out.write(body * 5)
    whole = scan_file(path, path.name, "tokenized", first.read.checkpoint)
    joined = pieces_of(path, "tokenized", first.read.checkpoint, 300)
    assert joined is not None and same(joined, whole)
    assert joined.read is not None and not joined.read.restarted
    assert joined.delta.failures["malformed_lines"].examples[0]["line"] > len(TOKENIZED_LINES)


def test_a_file_replaced_between_plan_and_pieces_voids_the_join(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_bytes(b"\n".join(RESPONSE_LINES * 4) + b"\n")
    plan = split.plan(path, None, 256)
    assert plan is not None and len(plan.spans) > 2
    scans = [scan_file(path, path.name, "responses", None, plan.spans[0])]
    path.write_bytes(b'{"completion_tokens": 1}\n' * 10)  # shorter: later pieces end early
    scans += [scan_file(path, path.name, "responses", None, s) for s in plan.spans[1:]]
    assert split.join(plan, scans) is None


def test_a_file_rotated_between_plan_and_pieces_voids_the_join(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    body = b"\n".join(RESPONSE_LINES * 4) + b"\n"
    path.write_bytes(body)
    first = scan_file(path, path.name, "responses", None)
    assert first.read is not None
    path.write_bytes(body * 2)  # grown: the plan resumes after the first read
    plan = split.plan(path, first.read.checkpoint, 256)
    assert plan is not None and plan.start > 0
    rotated = tmp_path / "new.jsonl"
    rotated.write_bytes(body * 2)  # same bytes, new inode: a whole read would start over
    os.replace(rotated, path)
    scans = [scan_file(path, path.name, "responses", None, s) for s in plan.spans]
    assert split.join(plan, scans) is None


def test_small_reads_and_unopenable_files_are_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_bytes(RESPONSE_LINES[0] + b"\n")
    assert split.plan(path, None) is None
    assert split.plan(tmp_path / "gone.jsonl", None, 1) is None


def test_a_line_longer_than_the_cut_window_is_never_cut_inside(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    long = b'{"completion_tokens": 1, "text": "' + b"x" * (3 * split.CUT_WINDOW) + b'"}\n'
    path.write_bytes(long * 3)
    plan = split.plan(path, None, len(long) // 2)
    assert plan is None or all(
        s.start % len(long) == 0 for s in plan.spans
    )  # every piece starts at a line start


START = (
    b'{"type": "message_start", "message": {"id": "m", "type": "message", "content": [], '
    b'"usage": {"input_tokens": 30, "output_tokens": 1}}}'
)
DELTA = b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "4"}}'
LINE = st.sampled_from(
    [*RESPONSE_LINES, b"", b"  ", b"{", b'{"id": "dup", "completion_tokens": 2}']
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(LINE, min_size=1, max_size=40),
    tail=st.sampled_from([b"", b'{"torn']),
    crlf=st.booleans(),
    size=st.integers(16, 400),
    resume_at=st.integers(0, 39),
)
@example(  # an id-less event cut from its stream's start: the join's `seen` was not canonical
    lines=[RESPONSE_LINES[0], START, DELTA], tail=b"", crlf=False, size=16, resume_at=1
)
@example(  # an id-less request takes its id from a later start event: the id was not `seen`
    lines=[RESPONSE_LINES[0], DELTA, START], tail=b"", crlf=False, size=16, resume_at=1
)
@example(  # a finish before its request's start event: the join kept the start's flags
    lines=[
        b'{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": '
        b'{"output_tokens": 15, "input_tokens": 30, "cache_read_input_tokens": 4}}',
        b'{"type": "message_start", "message": {"id": "m", "type": "message", "content": [], '
        b'"usage": {"input_tokens": 30, "output_tokens": 1}}}',
    ],
    tail=b"",
    crlf=False,
    size=16,
    resume_at=0,
)
@example(  # a finished request of a stretch not anchored, ended at a join: it waits (one pass)
    lines=[
        RESPONSE_LINES[0],
        b'{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": '
        b'{"output_tokens": 15, "input_tokens": 30, "cache_read_input_tokens": 4}}',
        b'{"type": "content_block_delta", "index": 0, '
        b'"delta": {"type": "text_delta", "text": "4"}}',
    ],
    tail=b"",
    crlf=False,
    size=16,
    resume_at=1,
)
@example(  # a stream settles after a later failed record: examples are listed by line
    lines=[
        RESPONSE_LINES[0],
        b'{"type": "response.created", "sequence_number": 0, "response": {"id": "r", '
        b'"object": "response", "status": "in_progress", "output": [], "usage": null}}',
        b'{"recordId": "r4", "modelInput": {}, "error": {"errorCode": 400, "errorMessage": "bad"}}',
        b'{"type": "response.created", "sequence_number": 0, "response": {"id": "r", '
        b'"object": "response", "status": "in_progress", "output": [], "usage": null}}',
    ],
    tail=b"",
    crlf=False,
    size=229,
    resume_at=0,
)
def test_cut_and_joined_equals_whole_for_any_file(
    tmp_path_factory: object,
    lines: list[bytes],
    tail: bytes,
    crlf: bool,
    size: int,
    resume_at: int,
) -> None:
    root = Path(os.environ.get("TMPDIR", "/tmp"))
    path = root / f"genledger-split-{os.getpid()}.jsonl"
    try:
        end = b"\r\n" if crlf else b"\n"
        head = lines[: min(resume_at, len(lines))]
        path.write_bytes(b"".join(x + end for x in head))
        first = scan_file(path, path.name, "responses", None)
        cp = first.read.checkpoint if first.read is not None and head else None
        with path.open("ab") as out:
            out.write(b"".join(x + end for x in lines[len(head) :]) + tail)
        whole = scan_file(path, path.name, "responses", cp)
        joined = pieces_of(path, "responses", cp, size)
        assert joined is None or same(joined, whole)
    finally:
        path.unlink(missing_ok=True)
