"""Generate a realistic benchmark corpus: 10 datasets, formats switching mid-file, big id arrays.

    python benchmarks/corpus.py OUT_DIR [--mb 800] [--seed 1]

Records are ~10 kB like a real Kimi/SGLang run: a long `text` (unicode and escapes included),
`output_ids` of a few hundred to a few thousand ids, `input_ids` on flat and tokenized rows.
A few defects (zero counts, think-tag leaks, failed batch requests) keep the quality path busy.
Every response record has a valid integer count, so DuckDB's totals are comparable to ours.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

VOCAB = 163_840
BYTES_PER_RECORD = 10_000
WORDS = [
    *[
        "the",
        "model",
        "writes",
        "code",
        "def",
        "solve",
        "return",
        "tokens",
        "reasoning",
        "step",
        "first",
        "then",
        "verify",
    ],
    *["answer", "équation", "解", "数据", "函数", "—", "“quoted”", "{json}", "[1,", "2]"],
    "tab\there\nnew line",
    "```python\nprint(x)\n```",
]

Record = dict[str, Any]
Maker = Callable[[str, np.random.Generator], Record]


def _text(rng: np.random.Generator, mean_chars: int) -> str:
    n = max(8, int(rng.normal(mean_chars, mean_chars / 4)) // 6)
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n))


def _ids(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, VOCAB, n, dtype=np.int64)


def _lengths(rng: np.random.Generator) -> tuple[int, int]:
    return int(rng.integers(40, 400)), int(rng.integers(200, 1400))


def sglang(rid: str, rng: np.random.Generator) -> Record:
    """SGLang /generate with its output ids."""
    prompt, comp = _lengths(rng)
    return {
        "text": _text(rng, 3000),
        "output_ids": _ids(rng, comp),
        "meta_info": {
            "id": rid,
            "finish_reason": {"type": "stop", "matched": 163586},
            "prompt_tokens": prompt,
            "weight_version": "default",
            "completion_tokens": comp if rng.random() > 0.001 else 0,
            "cached_tokens": 0,
            "e2e_latency": float(rng.random() * 30),
        },
    }


def flat(rid: str, rng: np.random.Generator) -> Record:
    """A pipeline-flattened /generate line with input and output ids."""
    prompt, comp = _lengths(rng)
    return {
        "id": rid,
        "input_ids": _ids(rng, prompt),
        "output_ids": _ids(rng, comp),
        "text": _text(rng, 2500),
        "prompt_tokens": prompt,
        "completion_tokens": comp,
        "finish_reason": "stop" if rng.random() > 0.1 else "length",
    }


def chat(rid: str, rng: np.random.Generator) -> Record:
    """An OpenAI chat completion with reasoning; a few leak `</think>` into content."""
    prompt, comp = _lengths(rng)
    leak = rng.random() < 0.002
    content = _text(rng, 4000) + ("</think>done" if leak else "")
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
                    "reasoning_content": None if leak else _text(rng, 4000),
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": comp,
            "total_tokens": prompt + comp,
        },
    }


def batch(rid: str, rng: np.random.Generator) -> Record:
    """An OpenAI Batch output line; a few failed without a response."""
    if rng.random() < 0.002:
        return {"id": f"batch_req_{rid}", "custom_id": rid, "response": None,
                "error": {"code": "server_error", "message": "boom"}}  # fmt: skip
    body = chat(f"chatcmpl-{rid}", rng)
    return {
        "id": f"batch_req_{rid}",
        "custom_id": rid,
        "response": {"status_code": 200, "request_id": f"req_{rid}", "body": body},
        "error": None,
    }


def wrapped(rid: str, rng: np.random.Generator) -> Record:
    """A chat completion wrapped by a pipeline."""
    return {"id": rid, "response": chat(f"chatcmpl-{rid}", rng)}


def tgi(rid: str, rng: np.random.Generator) -> Record:
    """TGI /generate with details (no ids), padded with token details like real dumps."""
    _, comp = _lengths(rng)
    return {
        "generated_text": _text(rng, 6000),
        "details": {"finish_reason": "eos_token", "generated_tokens": comp, "seed": None},
    }


def derived(rid: str, rng: np.random.Generator) -> Record:
    """A vLLM-ish dump whose only count is len(output_ids)."""
    _, comp = _lengths(rng)
    return {"request_id": rid, "text": _text(rng, 3000), "output_ids": _ids(rng, comp),
            "finish_reason": "length"}  # fmt: skip


def responses_api(rid: str, rng: np.random.Generator) -> Record:
    """An OpenAI Responses API record with reasoning and cached tokens."""
    prompt, comp = _lengths(rng)
    message = {
        "type": "message",
        "id": f"msg_{rid}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": _text(rng, 3000), "annotations": []}],
    }
    return {
        "id": rid, "object": "response", "created_at": 1764000000, "model": "o3",
        "status": "completed", "error": None, "incomplete_details": None,
        "output": [{"type": "reasoning", "id": f"rs_{rid}", "summary": []}, message],
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": prompt // 2},
                  "output_tokens": comp, "output_tokens_details": {"reasoning_tokens": comp // 3},
                  "total_tokens": prompt + comp},
    }  # fmt: skip


def anthropic(rid: str, rng: np.random.Generator) -> Record:
    """An Anthropic Message with a thinking block."""
    prompt, comp = _lengths(rng)
    return {
        "id": rid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": _text(rng, 2000), "signature": "Eq1"},
                    {"type": "text", "text": _text(rng, 2000), "citations": None}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": prompt, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 64, "output_tokens": comp,
                  "output_tokens_details": {"thinking_tokens": comp // 2}},
    }  # fmt: skip


def gemini(rid: str, rng: np.random.Generator) -> Record:
    """A Gemini response (REST camelCase) with a thought part."""
    prompt, comp = _lengths(rng)
    parts = [{"text": _text(rng, 2000), "thought": True}, {"text": _text(rng, 2000)}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "modelVersion": "gemini-2.5-pro", "responseId": rid,
        "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": 0,
                          "candidatesTokenCount": comp // 2, "thoughtsTokenCount": comp - comp // 2,
                          "totalTokenCount": prompt + comp},
    }  # fmt: skip


def cohere(rid: str, rng: np.random.Generator) -> Record:
    """A Cohere v2 chat response (float counts, as the SDK types them)."""
    prompt, comp = _lengths(rng)
    return {
        "id": rid, "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": _text(rng, 3500)}]},
        "usage": {"billed_units": {"input_tokens": float(prompt), "output_tokens": float(comp)},
                  "tokens": {"input_tokens": float(prompt), "output_tokens": float(comp)}},
    }  # fmt: skip


def vllm_n4(rid: str, rng: np.random.Generator) -> Record:
    """A vLLM offline RequestOutput with SamplingParams(n=4): every sample counts."""
    prompt, _ = _lengths(rng)
    outputs = [
        {"index": i, "text": _text(rng, 700), "token_ids": _ids(rng, int(rng.integers(50, 350))),
         "cumulative_logprob": None, "logprobs": None, "finish_reason": "stop",
         "stop_reason": None}
        for i in range(4)
    ]  # fmt: skip
    return {"request_id": rid, "prompt": "...", "prompt_token_ids": _ids(rng, prompt),
            "outputs": outputs, "finished": True, "num_cached_tokens": 0}  # fmt: skip


def tokenized(rid: str, rng: np.random.Generator) -> Record:
    """A SpecForge training sample: loss on the completion only."""
    prompt, comp = _lengths(rng)
    mask = np.concatenate([np.zeros(prompt, np.int64), np.ones(comp, np.int64)])
    return {"id": rid, "input_ids": _ids(rng, prompt + comp), "loss_mask": mask}


# (dataset, file, [(maker, share of the file), ...]); formats switch mid-file in order.
PLAN: tuple[tuple[str, str, tuple[tuple[Maker, float], ...]], ...] = (
    ("B1_sglang", "raw_responses.jsonl", ((sglang, 1.0),)),
    ("B2 chat→flat", "raw_responses.jsonl", ((chat, 0.5), (flat, 0.5))),
    ("B3_batch_api", "raw_responses.jsonl", ((batch, 1.0),)),
    ("B4_wrapped_then_sglang", "raw_responses.jsonl", ((wrapped, 0.4), (sglang, 0.6))),
    ("B5_tgi_then_derived", "raw_responses.jsonl", ((tgi, 0.3), (derived, 0.7))),
    ("B6_sharded", "raw_responses_00.jsonl", ((flat, 1.0),)),
    ("B6_sharded", "raw_responses_01.jsonl", ((flat, 1.0),)),
    ("B7_sglang_batches", "raw_responses.jsonl", ((sglang, 1.0),)),
    ("B8_chat", "raw_responses.jsonl", ((chat, 1.0),)),
    (
        "B9_other_apis",
        "raw_responses.jsonl",
        ((responses_api, 0.25), (anthropic, 0.2), (gemini, 0.2), (cohere, 0.1), (vllm_n4, 0.25)),
    ),
    ("A1_pretokenized", "tokenized_data.jsonl", ((tokenized, 1.0),)),
    ("A2_pretokenized", "tokenized_data.jsonl", ((tokenized, 1.0),)),
)
BATCHED = {"B7_sglang_batches"}
OPT = orjson.OPT_SERIALIZE_NUMPY


# --- the second shape: a distillation run's records as Python's json writes them ----------


def _long(rng: np.random.Generator) -> tuple[int, int]:
    """~1,000 completion tokens on average."""
    return int(rng.integers(100, 600)), int(rng.integers(400, 1600))


def _content(rng: np.random.Generator, comp: int) -> str:
    """An answer of about 4 characters a token; ~2 % carry a `<think>` block."""
    text = _text(rng, 4 * comp)
    return f"<think>{_text(rng, 400)}</think>{text}" if rng.random() < 0.02 else text


def chat2(rid: str, rng: np.random.Generator) -> Record:
    """OpenAI chat, reasoning split out, no usage details."""
    prompt, comp = _long(rng)
    message = {"role": "assistant", "content": _content(rng, comp), "reasoning_content": None}
    return {"id": rid, "object": "chat.completion", "created": 1724858089, "model": "kimi-k2.5",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": comp,
                      "total_tokens": prompt + comp}}  # fmt: skip


def wrapped2(rid: str, rng: np.random.Generator) -> Record:
    """OpenAI chat wrapped as `{"id", "response": {...}}`."""
    return {"id": rid, "response": chat2(f"chatcmpl-{rid}", rng)}


def sglang2(rid: str, rng: np.random.Generator) -> Record:
    """SGLang `meta_info` records with `output_ids`."""
    prompt, comp = _long(rng)
    meta = {"id": rid, "finish_reason": {"type": "stop", "matched": 163586},
            "prompt_tokens": prompt, "weight_version": "default", "completion_tokens": comp,
            "cached_tokens": 0, "e2e_latency": 12.5}  # fmt: skip
    return {"text": _content(rng, comp), "output_ids": _ids(rng, comp).tolist(), "meta_info": meta}


def flat2(rid: str, rng: np.random.Generator) -> Record:
    """Flat `/generate` records with `input_ids` and `output_ids`."""
    prompt, comp = _long(rng)
    return {"id": rid, "input_ids": _ids(rng, prompt).tolist(),
            "output_ids": _ids(rng, comp).tolist(), "text": _content(rng, comp),
            "prompt_tokens": prompt, "completion_tokens": comp,
            "finish_reason": "stop"}  # fmt: skip


def batch2(rid: str, rng: np.random.Generator) -> Record:
    """Batch API lines."""
    body = chat2(f"chatcmpl-{rid}", rng)
    return {"id": f"batch_req_{rid}", "custom_id": rid,
            "response": {"status_code": 200, "request_id": f"req_{rid}", "body": body},
            "error": None}  # fmt: skip


SECOND: tuple[tuple[str, str, tuple[tuple[Maker, float], ...]], ...] = (
    ("C1_wrapped_chat", "raw_responses.jsonl", ((wrapped2, 1.0),)),
    ("C2_sglang_meta", "raw_responses.jsonl", ((sglang2, 1.0),)),
    ("C3_flat_generate", "raw_responses.jsonl", ((flat2, 1.0),)),
    ("C4_batch_api", "raw_responses.jsonl", ((batch2, 1.0),)),
)
PLANS = {"reference": PLAN, "second": SECOND}


def _dumps(shape: str, value: Any) -> bytes:
    if shape == "second":  # Python's writer: `ensure_ascii=False`, spaces after separators
        return json.dumps(value, ensure_ascii=False).encode()
    return orjson.dumps(value, option=OPT)


def file_lines(
    dataset: str,
    prefix: str,
    plan: tuple[tuple[Maker, float], ...],
    n: int,
    rng: np.random.Generator,
    shape: str = "reference",
) -> Iterator[bytes]:
    """The JSONL lines of one file: `n` records, formats in plan order."""
    i = 0
    for maker, share in plan:
        for _ in range(round(n * share)):
            if dataset in BATCHED:
                group = [maker(f"{prefix}-{i + k}", rng) for k in range(4)]
                i += 4
                yield _dumps(shape, group) + b"\n"
            else:
                yield _dumps(shape, maker(f"{prefix}-{i}", rng)) + b"\n"
                i += 1


def write_corpus(
    out: Path, mb: float = 800.0, seed: int = 1, shape: str = "reference"
) -> dict[str, int]:
    """Write the corpus of `shape` under `out` (replacing it); returns bytes per file key."""
    if out.exists():
        shutil.rmtree(out)
    rng = np.random.default_rng(seed)
    plans = PLANS[shape]
    per_file = int(mb * 1e6 / BYTES_PER_RECORD / len(plans))
    sizes: dict[str, int] = {}
    for dataset, name, plan in plans:
        folder = out / dataset
        folder.mkdir(parents=True, exist_ok=True)
        n = per_file // 4 if dataset in BATCHED else per_file
        path = folder / name
        with path.open("wb") as fh:
            for chunk in file_lines(dataset, f"{dataset}/{name}", plan, n, rng, shape):
                fh.write(chunk)
        sizes[f"{dataset}/{name}"] = path.stat().st_size
        if not dataset.startswith("A"):
            prompts = folder / "prompts.jsonl"
            if not prompts.exists():
                prompts.write_bytes(b"".join(b'{"i": %d}\n' % k for k in range(per_file * 2)))
    return sizes


def append_share(root: Path, share: float = 0.01, seed: int = 2, shape: str = "reference") -> int:
    """Append about `share` of each data file's records in its last format; returns bytes."""
    rng = np.random.default_rng(seed)
    added = 0
    for dataset, name, plan in PLANS[shape]:
        path = root / dataset / name
        n = max(1, round(path.stat().st_size * share / BYTES_PER_RECORD))
        if dataset in BATCHED:
            n = max(1, n // 4)
        data = b"".join(
            file_lines(dataset, f"{dataset}/{name}+{seed}", ((plan[-1][0], 1.0),), n, rng, shape)
        )
        with path.open("ab") as fh:
            fh.write(data)
        added += len(data)
    return added


def main() -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=800.0, help="target size in MB")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shape", choices=sorted(PLANS), default="reference")
    args = parser.parse_args()
    sizes = write_corpus(args.out, args.mb, args.seed, args.shape)
    print(f"{len(sizes)} files, {sum(sizes.values()) / 1e6:.0f} MB in {args.out}")


if __name__ == "__main__":
    main()
