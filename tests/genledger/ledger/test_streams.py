"""Streams assembled into requests (ledger/streams.py): one request per stream whatever the
cut — pieces of a file read apart, or a file read across refreshes while it grows — with
usage merged over its events. Every expected number is the usage the generated events carry
(the providers' documented stream shapes), never what genledger printed."""

from __future__ import annotations

import itertools
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genledger.config import Config
from genledger.fast.events import decoded
from genledger.ledger.streambooks import StreamBooks
from genledger.ledger.streams import StreamState
from genledger.ledger.tally import FileTally
from genledger.parse.streams import FAMILIES, Family, event_family, read_event
from genledger.refresh.collect import refresh
from genledger.refresh.count import tally_blocks
from genledger.tail.lines import Block

from ..fast.realfiles import FILES
from ..fast.test_events import objects

SUMS = ("records", "total_comp", "total_prompt", "stream_chunks")
OLD = 1_700_000_000  # a file time long settled


@dataclass
class Request:
    """One request's lines and the counts its usage states."""

    lines: list[dict[str, Any]]
    completion: int
    prompt: int


def anthropic(rid: str, prompt: int, completion: int) -> Request:
    """Anthropic's documented stream: message_start carries the input count, message_delta
    only the output (as Vertex AI's and Bedrock's Claude streams do)."""
    usage = {"input_tokens": prompt, "output_tokens": 1}
    message = {"id": rid, "type": "message", "role": "assistant", "content": [], "usage": usage}
    delta = {"type": "text_delta", "text": "Hi"}
    return Request(
        [
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": completion},
            },
            {"type": "message_stop"},
        ],
        completion,
        prompt,
    )


def chunk(rid: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """An OpenAI chat.completion.chunk."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": rid, "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


def openai(rid: str, prompt: int, completion: int) -> Request:
    """OpenAI chunks with `stream_options.include_usage`: the usage on a last chunk of no
    choices, after the one with the finish reason."""
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    last = {
        "id": rid,
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [],
        "usage": usage,
    }
    return Request(
        [
            chunk(rid, {"role": "assistant", "content": ""}),
            chunk(rid, {"content": "Par"}),
            chunk(rid, {"content": "is"}, "stop"),
            last,
        ],
        completion,
        prompt,
    )


def gemini(prompt: int, completion: int) -> Request:
    """Gemini streamGenerateContent chunks: running usageMetadata, the last with the
    finishReason holds the request's totals."""

    def one(text: str, done: bool, candidates: int) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if done:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": candidates}
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "g"}

    return Request([one("Pa", False, 1), one("ris", True, completion)], completion, prompt)


def ollama(prompt: int, completion: int) -> Request:
    """Ollama /api/chat: `done: false` objects, then the last with the counts."""
    base = {"model": "llama3", "created_at": "2026-01-01T00:00:00Z"}
    part = {**base, "message": {"role": "assistant", "content": "Hi"}, "done": False}
    last = {
        **base,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "eval_count": completion,
        "prompt_eval_count": prompt,
    }
    return Request([part, part, last], completion, prompt)


def reply(rid: str, prompt: int, completion: int) -> Request:
    """A chat completion that was never streamed."""
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": "ok"},
        "finish_reason": "stop",
    }
    record = {"id": rid, "object": "chat.completion", "choices": [choice], "usage": usage}
    return Request([record], completion, prompt)


BUILD = {
    "anthropic": anthropic,
    "openai": openai,
    "gemini": lambda rid, p, c: gemini(p, c),
    "ollama": lambda rid, p, c: ollama(p, c),
    "reply": reply,
}


def interleaved(a: Request, b: Request, rng: random.Random) -> list[dict[str, Any]]:
    """Two streams' events merged in a random order, each stream's own order kept."""
    left, right, out = list(a.lines), list(b.lines), []
    while left or right:
        source = left if right == [] or (left and rng.random() < 0.5) else right
        out.append(source.pop(0))
    return out


def corpus(seed: int) -> tuple[list[bytes], int, int, int, int]:
    """Lines of several requests of every shape, and (requests, completion, prompt, events)."""
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    requests, completion, prompt, events = 0, 0, 0, 0
    for n in range(rng.randint(1, 6)):
        kind = rng.choice(("anthropic", "openai", "gemini", "ollama", "reply", "interleaved"))
        p, c = rng.randint(1, 900), rng.randint(1, 900)
        if kind == "interleaved":
            other = openai(f"x{n}", c, p)
            found = openai(f"o{n}", p, c)
            lines += interleaved(found, other, rng)
            requests, completion, prompt = requests + 2, completion + p + c, prompt + p + c
            events += len(found.lines) + len(other.lines)
            continue
        request = BUILD[kind](f"{kind[0]}{n}", p, c)
        lines += request.lines
        requests, completion, prompt = requests + 1, completion + c, prompt + p
        events += 0 if kind == "reply" else len(request.lines)
    return [orjson.dumps(line) + b"\n" for line in lines], requests, completion, prompt, events


def tally_of(data: bytes, start: int = 0) -> FileTally:
    """The tally of the lines of `data`, read from file offset `start`."""
    return tally_blocks([Block(data, start, 0, len(data))], "f.jsonl", "responses")


def sums(tally: FileTally) -> tuple[int, ...]:
    """The counts a stream changes, after the file settled."""
    settled = tally.settle_streams(StreamBooks("f.jsonl"))
    return tuple(settled[key] for key in SUMS)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.lists(st.integers(0, 10**6), max_size=4))
def test_pieces_cut_at_any_line_assemble_as_one_pass(seed: int, cuts: list[int]) -> None:
    lines, requests, completion, prompt, events = corpus(seed)
    whole = tally_of(b"".join(lines))
    assert sums(whole) == (requests, completion, prompt, events)
    at = sorted({cut % (len(lines) + 1) for cut in cuts} | {0, len(lines)})
    total, offset, before = FileTally(), 0, 0
    for start, stop in itertools.pairwise(at):
        data = b"".join(lines[start:stop])
        total = total + tally_of(data, offset).shifted(before)
        offset, before = offset + len(data), before + stop - start
    assert sums(total) == sums(whole)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(0, 10**6), st.lists(st.integers(1, 10**6), min_size=1, max_size=3))
def test_a_growing_file_cut_at_any_byte_counts_as_a_full_scan(
    tmp_path_factory: Any, seed: int, cuts: list[int]
) -> None:
    lines, requests, completion, prompt, events = corpus(seed)
    data = b"".join(lines)
    root = tmp_path_factory.mktemp("grow")
    path = root / "data" / "ds" / "raw_responses.jsonl"
    path.parent.mkdir(parents=True)
    config = Config(data_root=root / "data", stats_path=root / "s.json", state_dir=root / "st")
    written = 0
    for cut in sorted({c % len(data) for c in cuts}):
        with path.open("ab") as out:
            out.write(data[written:cut])
        written = cut
        refresh(config)  # the stream is open here: pending, kept in the state
    with path.open("ab") as out:
        out.write(data[written:])
    os.utime(path, (OLD, OLD))  # the file settled: an open stream is a request now
    block = refresh(config).stats["datasets"]["ds"]
    full = refresh(config, full=True).stats["datasets"]["ds"]
    got = (block["n_done"], block["total_comp"], block["total_prompt"], block["stream_chunks"])
    assert got == (requests, completion, prompt, events)
    assert got == (full["n_done"], full["total_comp"], full["total_prompt"], full["stream_chunks"])


def test_a_stream_cut_short_is_one_failed_request_once_its_file_settles(tmp_path: Path) -> None:
    request = anthropic("m1", 40, 7)
    path = tmp_path / "data" / "ds" / "raw_responses.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in request.lines[:3]))
    config = Config(data_root=tmp_path / "data", stats_path=tmp_path / "s.json",
                    state_dir=tmp_path / "st")  # fmt: skip
    pending = refresh(config).stats["datasets"]["ds"]
    assert (pending["n_done"], pending["quality"]["missing_tokens"]) == (0, 0)
    os.utime(path, (OLD, OLD))
    block = refresh(config).stats["datasets"]["ds"]
    assert block["n_done"] == 1
    assert block["stream_chunks"] == 3
    failure = next(f for f in block["quality"]["failures"] if f["check"] == "failed_requests")
    assert failure["examples"][0]["reason"].endswith("stream ended without its final event")


def test_a_prompt_count_no_event_reports_is_missing_never_a_zero(tmp_path: Path) -> None:
    # a stream saved without its message_start: message_delta reports only the output
    events = anthropic("m1", 40, 7).lines[1:] + anthropic("m2", 25, 3).lines
    path = tmp_path / "data" / "ds" / "raw_responses.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in events))
    os.utime(path, (OLD, OLD))
    config = Config(
        data_root=tmp_path / "data", stats_path=tmp_path / "s.json", state_dir=tmp_path / "st"
    )
    block = refresh(config).stats["datasets"]["ds"]
    assert (block["n_done"], block["total_comp"], block["total_prompt"]) == (2, 7 + 3, 25)
    assert (block["n_prompt_counted"], block["quality"]["prompt_missing"]) == (1, 1)


# --- `extend`: an event carrying on the latest request, written in place, is what `feed` does -


def _fed(
    events: list[tuple[Family, dict[str, Any]]], fast: bool, taken: list[int] | None = None
) -> tuple[list[Any], Any]:
    """The requests each event settles and the state after them, read by `feed` alone or
    with `extend` first (as a refresh reads them); `taken`: extend's events counted."""
    state, done = StreamState(anchored=False), []
    for number, (family, obj) in enumerate(events, start=1):
        event = read_event(family, obj)
        if fast and not event.neutral and state.extend(family, event, number, 0):
            done.append([])
            if taken is not None:
                taken.append(number)
            continue
        if event.neutral:
            done.append([])
            continue
        done.append([p.to_list() for p in state.feed(family, obj, number, 0, None, event)])
    return done, (state.to_dict(), [p.to_list() for p in state.settle()])


def _set(obj: dict[str, Any], path: Any, value: str) -> dict[str, Any]:
    """`obj` with the plain path `path` (a family's id) set to `value`."""
    keys = [key for key, _ in path.steps]
    node = obj
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[keys[-1]] = value
    return obj


@st.composite
def _streams(draw: st.DrawFn) -> list[tuple[Family, dict[str, Any]]]:
    """Runs of objects near one or two families' events, each id one of two or none
    (interleaved requests, cut streams, usage and finishes anywhere)."""
    families = draw(st.lists(st.sampled_from(FAMILIES), min_size=1, max_size=2))
    out = []
    for _ in range(draw(st.integers(1, 12))):
        family = draw(st.sampled_from(families))
        obj = draw(objects(family))
        if family.key is not None and family.key.paths[0].get is not None and draw(st.booleans()):
            obj = _set(obj, family.key.paths[0], draw(st.sampled_from(["a", "b"])))
        out.append((family, obj))
    return out


@settings(max_examples=600, deadline=None)
@given(_streams())
def test_an_event_carried_on_in_place_is_fed_as_feed_reads_it(
    events: list[tuple[Family, dict[str, Any]]],
) -> None:
    assert _fed(events, fast=True) == _fed(events, fast=False)


def test_every_real_stream_is_fed_alike_with_and_without_extend() -> None:
    taken: list[int] = []
    for path in FILES:
        events = []
        for line in path.read_bytes().splitlines():
            obj = decoded(line)
            family = None if obj is None else event_family(obj)
            if obj is not None and family is not None:
                events.append((family, obj))
        assert _fed(events, fast=True, taken=taken) == _fed(events, fast=False), path
    assert len(taken) > 5_000 or not FILES  # most real events carry on a request


def _converse(text: str, tokens: tuple[int, int]) -> list[dict[str, Any]]:
    """One Bedrock ConverseStream request as boto3 yields its events (no request id)."""
    usage = {"inputTokens": tokens[0], "outputTokens": tokens[1],
             "totalTokens": sum(tokens)}  # fmt: skip
    deltas = [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": t}}} for t in text]
    return [
        {"messageStart": {"role": "assistant"}}, *deltas,
        {"contentBlockStop": {"contentBlockIndex": 0}}, {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 10}}},
    ]  # fmt: skip


def test_streams_without_ids_cut_at_any_line_assemble_as_one_pass() -> None:
    """A stretch that begins inside an id-less request and starts the next one: its first
    events carry on the request before it (its start comes after them), so the request
    before is not cut short at the join (two requests, not three with one failed)."""
    events = _converse("abc", (5, 3)) + _converse("de", (7, 2)) + _converse("f", (1, 1))
    lines = [orjson.dumps(e) + b"\n" for e in events]
    whole = tally_of(b"".join(lines)).settle_streams(StreamBooks("f.jsonl"))
    assert (whole["records"], whole["total_prompt"], whole["total_comp"]) == (3, 13, 6)
    for at in itertools.combinations(range(1, len(lines)), 2):
        total, offset, before = FileTally(), 0, 0
        for start, stop in itertools.pairwise((0, *at, len(lines))):
            data = b"".join(lines[start:stop])
            total = total + tally_of(data, offset).shifted(before)
            offset, before = offset + len(data), before + stop - start
        assert total.settle_streams(StreamBooks("f.jsonl")).sums == whole.sums, at
