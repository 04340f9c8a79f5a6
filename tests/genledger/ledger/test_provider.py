"""The provider's own books: real recorded batch outputs (../shared/realworld) with status
objects built by the SDKs' own models beside them, agreeing and disagreeing; the numbers
expected are read from the records themselves."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Config
from genledger.ledger.provider import StatusError, parse_status
from genledger.refresh.collect import refresh
from tests.genledger.ledger.batch_objects import anthropic_batch, openai_batch

REALWORLD = Path(__file__).resolve().parents[4] / "shared" / "realworld" / "data"


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _dataset(tmp_path: Path, source: str) -> Path:
    """A data root holding a copy of one real recorded batch output."""
    if not (REALWORLD / source).is_dir():
        pytest.skip(f"../shared/realworld/data/{source} is not here")
    root = tmp_path / "data"
    shutil.copytree(REALWORLD / source, root / "batch")
    return root


def _stats(tmp_path: Path, root: Path) -> dict[str, Any]:
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    return refresh(config).stats["datasets"]["batch"]


def _openai_usage(records: list[dict[str, Any]]) -> tuple[int, int]:
    usages = [r["response"]["body"]["usage"] for r in records if r.get("response")]
    return sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)


def test_an_openai_batch_whose_books_agree(tmp_path: Path) -> None:
    root = _dataset(tmp_path, "openai_batch_chat")
    records = _records(root / "batch" / "raw_responses.jsonl")
    prompt, completion = _openai_usage(records)
    status = openai_batch(len(records), 0, prompt, completion)
    (root / "batch" / "batch_6790e4c8f8a4.json").write_bytes(status)
    block = _stats(tmp_path, root)
    books = block["provider_books"]
    assert books["agree"] is True, books
    assert books["source"] == "batch_6790e4c8f8a4.json" and books["provider"] == "openai"
    assert books["requests"] == [len(records), len(records)]
    assert books["failed"] == [0, 0]
    assert books["input_tokens"] == [prompt, prompt]
    assert books["output_tokens"] == [completion, completion]
    assert block["quality"]["provider_mismatch"] == 0
    assert "batch_6790e4c8f8a4.json" not in block["unrecognised"]["paths"]


def test_an_openai_batch_whose_books_disagree_names_both_numbers(tmp_path: Path) -> None:
    root = _dataset(tmp_path, "openai_batch_chat")
    records = _records(root / "batch" / "raw_responses.jsonl")
    prompt, completion = _openai_usage(records)
    # the provider finished one more request than the output file holds (a lost shard)
    status = openai_batch(len(records) + 1, 0, prompt, completion + 57)
    (root / "batch" / "batch_abc.json").write_bytes(status)
    block = _stats(tmp_path, root)
    books = block["provider_books"]
    assert books["agree"] is False
    assert books["requests"] == [len(records) + 1, len(records)]
    assert books["output_tokens"] == [completion + 57, completion]
    assert block["quality"]["provider_mismatch"] == 2
    failure = next(f for f in block["quality"]["failures"] if f["check"] == "provider_mismatch")
    assert failure["severity"] == "warn"
    reasons = [e["reason"] for e in failure["examples"]]
    assert (
        f"requests: the provider reports {len(records) + 1}, genledger counted {len(records)}"
        in reasons
    )
    assert any(str(completion + 57) in r and str(completion) in r for r in reasons)


def test_an_openai_batch_before_usage_existed_has_no_token_pairs(tmp_path: Path) -> None:
    root = _dataset(tmp_path, "openai_batch_chat")
    records = _records(root / "batch" / "raw_responses.jsonl")
    (root / "batch" / "batch_old.json").write_bytes(openai_batch(len(records)))
    books = _stats(tmp_path, root)["provider_books"]
    assert books["agree"] is True
    assert "input_tokens" not in books and "output_tokens" not in books


def test_an_anthropic_message_batch_agreeing_then_disagreeing(tmp_path: Path) -> None:
    root = _dataset(tmp_path, "anthropic_batch")
    records = _records(root / "batch" / "raw_responses.jsonl")
    succeeded = sum(r["result"]["type"] == "succeeded" for r in records)
    errored = len(records) - succeeded
    status = root / "batch" / "msgbatch_013Zva2C.message_batch.json"
    status.write_bytes(anthropic_batch(succeeded, errored=errored))
    books = _stats(tmp_path, root)["provider_books"]
    assert books["provider"] == "anthropic" and books["status"] == "ended"
    assert books["agree"] is True and books["requests"] == [len(records), len(records)]
    assert "input_tokens" not in books  # a message batch reports no usage
    status.write_bytes(anthropic_batch(succeeded, errored=errored, expired=3))
    again = _stats(tmp_path, root)
    assert again["provider_books"]["failed"] == [errored + 3, errored]
    assert again["quality"]["provider_mismatch"] == 2  # requests and failed


def test_without_a_status_object_the_books_are_null(tmp_path: Path) -> None:
    root = _dataset(tmp_path, "openai_batch_chat")
    assert _stats(tmp_path, root)["provider_books"] is None


def test_a_file_named_like_a_status_object_that_is_not_one_is_unrecognised(
    tmp_path: Path,
) -> None:
    root = _dataset(tmp_path, "openai_batch_chat")
    (root / "batch" / "batch_config.json").write_text('{"model": "gpt-4o", "n": 3}')
    block = _stats(tmp_path, root)
    assert block["provider_books"] is None
    assert "batch_config.json" in block["unrecognised"]["paths"]
    assert block["quality"]["unrecognised_files"] == 1


def test_several_status_objects_are_summed(tmp_path: Path) -> None:
    root = _dataset(tmp_path, "openai_batch_chat")
    records = _records(root / "batch" / "raw_responses.jsonl")
    prompt, completion = _openai_usage(records)
    (root / "batch" / "batch_a.json").write_bytes(openai_batch(1, 0, 5, 1))
    (root / "batch" / "batch_b.json").write_bytes(
        openai_batch(len(records) - 1, 0, prompt - 5, completion - 1)
    )
    books = _stats(tmp_path, root)["provider_books"]
    assert books["source"] == "batch_a.json, batch_b.json"
    assert books["agree"] is True and books["status"] is None


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_anything_that_is_not_a_status_object_is_a_clear_error(data: bytes) -> None:
    try:
        parse_status(data)
    except StatusError as exc:
        assert str(exc)


@pytest.mark.parametrize(
    "broken",
    [
        b'{"object": "batch"}',
        b'{"object": "batch", "request_counts": {"total": -1, "failed": 0}}',
        b'{"object": "batch", "request_counts": {"total": "3", "failed": 0}}',
        b'{"type": "message_batch", "request_counts": {"succeeded": 1}}',
        b"[1, 2]",
    ],
)
def test_a_damaged_status_object_says_what_is_wrong(broken: bytes) -> None:
    with pytest.raises(StatusError):
        parse_status(broken)
