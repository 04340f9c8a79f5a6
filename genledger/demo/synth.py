"""Synthetic records in every known format, for the demo, the benchmarks and the tests.

Shapes follow docs/formats.md. Every generator takes the counts to write, so callers know the
expected totals exactly.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

VOCAB = 163_840


def _ids(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(VOCAB) for _ in range(n)]


def sglang_generate(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """SGLang native /generate output."""
    return {
        "text": "def solve(): return 42",
        "output_ids": _ids(rng, completion),
        "meta_info": {
            "id": rid,
            "finish_reason": {"type": "stop", "matched": 163586},
            "prompt_tokens": prompt,
            "weight_version": "default",
            "completion_tokens": completion,
            "cached_tokens": 0,
            "e2e_latency": 0.21,
        },
    }


def flat(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """Pipeline-flattened /generate output."""
    return {
        "id": rid,
        "input_ids": _ids(rng, prompt),
        "output_ids": _ids(rng, completion),
        "text": "def add(a, b): return a + b",
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "finish_reason": "stop",
    }


def openai_chat(
    rid: str, prompt: int, completion: int, rng: random.Random, content: str = "4."
) -> dict[str, Any]:
    """OpenAI chat completion, reasoning parsed into reasoning_content."""
    return {
        "id": rid,
        "object": "chat.completion",
        "created": 1724858089,
        "model": "kimi-k2.5",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "reasoning_content": "2 + 2",
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def think_leak(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """A chat completion whose reasoning leaked into content (no reasoning parser)."""
    record = openai_chat(rid, prompt, completion, rng, content="2 + 2 ...</think>4.")
    record["choices"][0]["message"]["reasoning_content"] = None
    return record


def openai_batch(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """OpenAI Batch API output line."""
    return {
        "id": f"batch_req_{rid}",
        "custom_id": rid,
        "response": {
            "status_code": 200,
            "request_id": f"req_{rid}",
            "body": openai_chat(f"chatcmpl-{rid}", prompt, completion, rng),
        },
        "error": None,
    }


def tgi(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """TGI /generate output with details."""
    return {
        "generated_text": " Paris is the capital.",
        "details": {"finish_reason": "eos_token", "generated_tokens": completion, "seed": None},
    }


def openai_completion(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """Legacy /v1/completions output: `text_completion`, `choices[].text`."""
    return {
        "id": rid,
        "object": "text_completion",
        "model": "kimi-k2.5",
        "choices": [{"index": 0, "text": " 4.", "finish_reason": "length"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def wrapped_openai(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """A chat completion wrapped by a pipeline under `response`."""
    return {"id": rid, "response": openai_chat(f"chatcmpl-{rid}", prompt, completion, rng)}


def vllm(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """A vLLM offline `RequestOutput` dump: the count is Σ `len(outputs[i].token_ids)`."""
    return {
        "request_id": rid,
        "prompt_token_ids": _ids(rng, prompt),
        "outputs": [
            {
                "index": 0,
                "text": "...",
                "token_ids": _ids(rng, completion),
                "finish_reason": "length",
                "stop_reason": None,
            }
        ],
        "finished": True,
    }


def failed_batch(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """An OpenAI Batch line whose request failed without a response."""
    return {
        "id": f"batch_req_{rid}",
        "custom_id": rid,
        "response": None,
        "error": {"code": "batch_expired", "message": "not completed in time"},
    }


def no_tokens(rid: str, prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """The seed's bug: a response whose token count is nowhere a reader looks."""
    return {"id": rid, "text": "an answer", "meta": {"tokens": completion}}


def tokenized(prompt: int, completion: int, rng: random.Random) -> dict[str, Any]:
    """A SpecForge-style training sample: loss on the completion only."""
    return {
        "input_ids": _ids(rng, prompt + completion),
        "loss_mask": [0] * prompt + [1] * completion,
    }


WRITERS = {
    "sglang_generate": sglang_generate,
    "flat": flat,
    "openai_chat": openai_chat,
    "openai_batch": openai_batch,
    "tgi": tgi,
    "think_leak": think_leak,
    "no_tokens": no_tokens,
    "openai_completion": openai_completion,
    "wrapped_openai": wrapped_openai,
    "vllm": vllm,
    "failed_batch": failed_batch,
}


def line(record: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    """One JSONL line."""
    return orjson.dumps(record) + b"\n"


def write_sample_tree(root: Path, records: int = 40, seed: int = 7) -> Path:
    """A small finished run: clean, warn and error datasets plus a pre-tokenized one."""
    rng = random.Random(seed)
    plans = {
        "clean_chat_then_flat": ["openai_chat"] * (records // 2) + ["flat"] * (records // 2),
        "warn_think_leaks": ["sglang_generate"] * (records - 3) + ["think_leak"] * 3,
        "error_missing_tokens": ["no_tokens"] * records,
    }
    for name, kinds in plans.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            line(WRITERS[kind](f"{name}-{i}", rng.randint(5, 40), rng.randint(5, 60), rng))
            for i, kind in enumerate(kinds)
        ]
        (folder / "raw_responses.jsonl").write_bytes(b"".join(lines))
        (folder / "prompts.jsonl").write_bytes(
            b"".join(line({"id": i, "prompt": "q"}) for i in range(len(kinds) + 10))
        )
    pre = root / "A1_pretokenized"
    pre.mkdir(parents=True, exist_ok=True)
    (pre / "tokenized_data.jsonl").write_bytes(
        b"".join(
            line(tokenized(rng.randint(5, 30), rng.randint(5, 30), rng)) for _ in range(records)
        )
    )
    return root
