"""Generate a realistic benchmark corpus: 10 datasets, formats switching mid-file, big id arrays.

    python benchmarks/corpus.py OUT_DIR [--mb 800] [--seed 1]

Records are ~10 kB like a real Kimi/SGLang run: a long `text` (unicode and escapes included),
`output_ids` of a few hundred to a few thousand ids, `input_ids` on flat and tokenized rows.
A few defects (zero counts, think-tag leaks, failed batch requests) keep the quality path busy.
Every response record has a valid integer count, so DuckDB's totals are comparable to ours.
"""

from __future__ import annotations

import argparse
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
    ("A1_pretokenized", "tokenized_data.jsonl", ((tokenized, 1.0),)),
    ("A2_pretokenized", "tokenized_data.jsonl", ((tokenized, 1.0),)),
)
BATCHED = {"B7_sglang_batches"}
OPT = orjson.OPT_SERIALIZE_NUMPY


def file_lines(
    dataset: str,
    prefix: str,
    plan: tuple[tuple[Maker, float], ...],
    n: int,
    rng: np.random.Generator,
) -> Iterator[bytes]:
    """The JSONL lines of one file: `n` records, formats in plan order."""
    i = 0
    for maker, share in plan:
        for _ in range(round(n * share)):
            if dataset in BATCHED:
                group = [maker(f"{prefix}-{i + k}", rng) for k in range(4)]
                i += 4
                yield orjson.dumps(group, option=OPT) + b"\n"
            else:
                yield orjson.dumps(maker(f"{prefix}-{i}", rng), option=OPT) + b"\n"
                i += 1


def write_corpus(out: Path, mb: float = 800.0, seed: int = 1) -> dict[str, int]:
    """Write the corpus under `out` (replacing it); returns bytes per file key."""
    if out.exists():
        shutil.rmtree(out)
    rng = np.random.default_rng(seed)
    per_file = int(mb * 1e6 / BYTES_PER_RECORD / len(PLAN))
    sizes: dict[str, int] = {}
    for dataset, name, plan in PLAN:
        folder = out / dataset
        folder.mkdir(parents=True, exist_ok=True)
        n = per_file // 4 if dataset in BATCHED else per_file
        path = folder / name
        with path.open("wb") as fh:
            for chunk in file_lines(dataset, f"{dataset}/{name}", plan, n, rng):
                fh.write(chunk)
        sizes[f"{dataset}/{name}"] = path.stat().st_size
        if not dataset.startswith("A"):
            prompts = folder / "prompts.jsonl"
            if not prompts.exists():
                prompts.write_bytes(b"".join(b'{"i": %d}\n' % k for k in range(per_file * 2)))
    return sizes


def append_share(root: Path, share: float = 0.01, seed: int = 2) -> int:
    """Append about `share` of each data file's records in its last format; returns bytes."""
    rng = np.random.default_rng(seed)
    added = 0
    for dataset, name, plan in PLAN:
        path = root / dataset / name
        n = max(1, round(path.stat().st_size * share / BYTES_PER_RECORD))
        if dataset in BATCHED:
            n = max(1, n // 4)
        data = b"".join(
            file_lines(dataset, f"{dataset}/{name}+{seed}", ((plan[-1][0], 1.0),), n, rng)
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
    args = parser.parse_args()
    sizes = write_corpus(args.out, args.mb, args.seed)
    print(f"{len(sizes)} files, {sum(sizes.values()) / 1e6:.0f} MB in {args.out}")


if __name__ == "__main__":
    main()
