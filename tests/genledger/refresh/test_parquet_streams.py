"""Streams saved in Parquet shards are requests, as in JSONL (genledger/refresh/sealed.py):
each row of a stream event goes to the same assembler as a JSONL line, across row groups;
a Parquet null of the shard's union schema is a key the event did not have."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from genledger.config import Config
from genledger.refresh.collect import refresh

from ..shards import jsonl, write

REALWORLD = [
    Path(__file__).resolve().parents[4] / "shared" / name / "data"
    for name in ("realworld", "realworld2")
]
# What a dataset's counts are, beside where they were read from (duplicates aside: a Parquet
# struct keeps its fields in the schema's order, so a tool call's arguments may be reordered).
NUMBERS = ("n_done", "stream_chunks", "total_comp", "total_prompt", "total_reasoning",
           "total_cached_prompt", "total_cache_write", "n_samples", "n_counted",
           "n_prompt_counted")  # fmt: skip
RULES = ("failed_requests", "empty_outputs", "missing_tokens", "usage_inconsistent",
         "prompt_missing", "truncated_outputs", "think_tag_leaks")  # fmt: skip


def union_parquet(records: list[dict[str, Any]], row_group_size: int) -> bytes:
    """The records as one Parquet file whose schema is the union of their keys (absent keys
    null), as pyarrow and pandas write a list of JSON objects."""
    out = io.BytesIO()
    table = pa.Table.from_struct_array(pa.array(records))
    pq.write_table(table, out, row_group_size=row_group_size)
    return out.getvalue()


def collect(root: Path, tmp: Path) -> dict[str, Any]:
    config = Config(data_root=root, stats_path=tmp / "out" / "s.json", state_dir=tmp / "state")
    return refresh(config, now=None).stats["datasets"]  # type: ignore[no-any-return]


def counts(block: dict[str, Any]) -> dict[str, Any]:
    """The numbers a dataset's stream requests give, and its rules' counters."""
    return {**{k: block[k] for k in NUMBERS}, **{r: block["quality"][r] for r in RULES}}


def _chunks(stream: int, words: list[str], prompt: int) -> list[dict[str, Any]]:
    """A chat stream as the OpenAI SDK yields it with `include_usage`: a role chunk, a chunk
    per word, the finish, then a usage-only chunk."""
    from openai.types.chat import ChatCompletionChunk

    def chunk(choices: list[Any], usage: Any = None) -> dict[str, Any]:
        made = ChatCompletionChunk.model_validate(
            {
                "id": f"chatcmpl-{stream}",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": choices,
                "usage": usage,
            }
        )
        return made.model_dump(mode="json", exclude_none=True)

    events = [chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
    events += [chunk([{"index": 0, "delta": {"content": w}}]) for w in words]
    events.append(chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    usage = {"prompt_tokens": prompt, "completion_tokens": len(words),
             "total_tokens": prompt + len(words)}  # fmt: skip
    events.append(chunk([], usage))
    return events


@pytest.mark.parametrize("row_group_size", [1, 3, 1000])
def test_chat_chunks_in_parquet_are_one_request_per_stream(
    tmp_path: Path, row_group_size: int
) -> None:
    streams = [(["Hello", " there"], 11), (["A", " longer", " answer", "."], 23), (["Ok"], 5)]
    events = [e for i, (words, prompt) in enumerate(streams) for e in _chunks(i, words, prompt)]
    write(tmp_path / "data" / "ds" / "raw_responses.parquet", union_parquet(events, row_group_size))
    block = collect(tmp_path / "data", tmp_path)["ds"]
    # one request per stream, every chunk an event; counts from each stream's usage chunk
    assert block["n_done"] == len(streams)
    assert block["stream_chunks"] == len(events)
    assert block["total_comp"] == sum(len(words) for words, _ in streams)
    assert block["total_prompt"] == sum(prompt for _, prompt in streams)
    assert block["quality"]["duplicate_outputs"] == 0
    assert block["quality"]["status"] == "ok"


def _realworld_files() -> list[Path]:
    found = []
    for root in REALWORLD:
        if root.is_dir():
            found += sorted(
                p for d in sorted(root.iterdir()) for p in d.glob("raw_responses*.jsonl")
            )
    return found


@pytest.mark.parametrize("path", _realworld_files(), ids=lambda p: p.parent.name)
def test_a_real_recording_in_parquet_counts_as_in_jsonl(tmp_path: Path, path: Path) -> None:
    records = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    if not all(isinstance(r, dict) for r in records):
        pytest.skip("lines that are no single object (arrays) are not Parquet rows")
    try:
        shard = union_parquet(records, row_group_size=7)  # streams cross row groups
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError) as exc:
        pytest.skip(f"no Parquet of these records: {exc}")
    write(tmp_path / "a" / "ds" / "raw_responses.jsonl", jsonl(records))
    write(tmp_path / "b" / "ds" / "raw_responses.parquet", shard)
    plain = collect(tmp_path / "a", tmp_path / "a-out")["ds"]
    sealed = collect(tmp_path / "b", tmp_path / "b-out")["ds"]
    assert counts(sealed) == counts(plain)
