"""One record of each known format (docs/formats.md), written from the counts it is given.

Every writer takes `(rid, prompt, completion, rng)`, so a caller knows the expected totals
exactly; texts are short stand-ins unless the caller passes its own (`synth.corpus` passes
long ones). Ids come from `rng`: a `random.Random` gives lists (the demo's and the tests' small
records, the same bytes for the same seed), a numpy `Generator` gives arrays (a corpus's long
id lists, written by `line` or orjson's `OPT_SERIALIZE_NUMPY`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Rng = random.Random | np.random.Generator
    Ids = list[int] | npt.NDArray[np.int64]

VOCAB = 163_840  # Kimi's vocabulary
Record = dict[str, Any]


def _own(text: str | None, stand_in: str, rid: str) -> str:
    """The caller's text, else a short stand-in made the record's own (a different answer
    per record: repeated answers are a defect, `duplicate_outputs`)."""
    return text if text is not None else f"{stand_in} [{rid}]"


def ids(rng: Rng, n: int, vocab: int = VOCAB) -> Ids:
    """`n` token ids below `vocab`: a list from a `random.Random`, else a numpy array."""
    if isinstance(rng, random.Random):
        return [rng.randrange(vocab) for _ in range(n)]
    return rng.integers(0, vocab, n, dtype="int64")


def sglang_generate(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    text: str | None = None,
    reported: int | None = None,
    latency: float = 0.21,
) -> Record:
    """SGLang native /generate output; `reported` overrides the stated completion count."""
    return {
        "text": _own(text, "def solve(): return 42", rid),
        "output_ids": ids(rng, completion),
        "meta_info": {
            "id": rid,
            "finish_reason": {"type": "stop", "matched": 163586},
            "prompt_tokens": prompt,
            "weight_version": "default",
            "completion_tokens": completion if reported is None else reported,
            "cached_tokens": 0,
            "e2e_latency": latency,
        },
    }


def flat(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    text: str | None = None,
    finish_reason: str = "stop",
) -> Record:
    """Pipeline-flattened /generate output, with input and output ids."""
    return {
        "id": rid,
        "input_ids": ids(rng, prompt),
        "output_ids": ids(rng, completion),
        "text": _own(text, "def add(a, b): return a + b", rid),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "finish_reason": finish_reason,
    }


def openai_chat(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    content: str | None = None,
    reasoning: str | None = "2 + 2",
    finish_reason: str = "stop",
) -> Record:
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
                    "content": _own(content, "4.", rid),
                    "reasoning_content": reasoning,
                },
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def think_leak(rid: str, prompt: int, completion: int, rng: Rng) -> Record:
    """A chat completion whose reasoning leaked into content (no reasoning parser)."""
    content = f"2 + 2 ...</think>4 [{rid}]."
    return openai_chat(rid, prompt, completion, rng, content=content, reasoning=None)


def openai_batch(rid: str, prompt: int, completion: int, rng: Rng, **chat: Any) -> Record:
    """OpenAI Batch API output line; `chat` goes to the body's `openai_chat`."""
    return {
        "id": f"batch_req_{rid}",
        "custom_id": rid,
        "response": {
            "status_code": 200,
            "request_id": f"req_{rid}",
            "body": openai_chat(f"chatcmpl-{rid}", prompt, completion, rng, **chat),
        },
        "error": None,
    }


def tgi(rid: str, prompt: int, completion: int, rng: Rng, *, text: str | None = None) -> Record:
    """TGI /generate output with details (no ids)."""
    return {
        "generated_text": _own(text, " Paris is the capital.", rid),
        "details": {"finish_reason": "eos_token", "generated_tokens": completion, "seed": None},
    }


def openai_completion(
    rid: str, prompt: int, completion: int, rng: Rng, *, text: str | None = None
) -> Record:
    """Legacy /v1/completions output: `text_completion`, `choices[].text`."""
    return {
        "id": rid,
        "object": "text_completion",
        "model": "kimi-k2.5",
        "choices": [{"index": 0, "text": _own(text, " 4.", rid), "finish_reason": "length"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def wrapped_openai(rid: str, prompt: int, completion: int, rng: Rng, **chat: Any) -> Record:
    """A chat completion wrapped by a pipeline under `response`."""
    return {"id": rid, "response": openai_chat(f"chatcmpl-{rid}", prompt, completion, rng, **chat)}


def vllm(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    samples: int = 1,
    text: str | None = None,
) -> Record:
    """A vLLM offline `RequestOutput` dump of `samples` outputs sharing `completion` ids.

    The count is Σ `len(outputs[i].token_ids)`.
    """
    prompt_ids = ids(rng, prompt)
    share, extra = divmod(completion, samples)
    outputs = [
        {
            "index": i,
            "text": _own(text, "...", f"{rid}/{i}"),
            "token_ids": ids(rng, share + (i < extra)),
            "cumulative_logprob": None,
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
        }
        for i in range(samples)
    ]
    return {"request_id": rid, "prompt": "...", "prompt_token_ids": prompt_ids,
            "outputs": outputs, "finished": True, "num_cached_tokens": 0}  # fmt: skip


def derived(rid: str, prompt: int, completion: int, rng: Rng, *, text: str | None = None) -> Record:
    """A vLLM-ish dump whose only count is `len(output_ids)`."""
    return {"request_id": rid, "text": _own(text, "...", rid), "output_ids": ids(rng, completion),
            "finish_reason": "length"}  # fmt: skip


def openai_responses(
    rid: str, prompt: int, completion: int, rng: Rng, *, text: str | None = None
) -> Record:
    """OpenAI Responses API: half the prompt cached, a third of the output reasoning."""
    message = {
        "type": "message",
        "id": f"msg_{rid}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": _own(text, "4.", rid), "annotations": []}],
    }
    return {
        "id": rid, "object": "response", "created_at": 1764000000, "model": "o3",
        "status": "completed", "error": None, "incomplete_details": None,
        "output": [{"type": "reasoning", "id": f"rs_{rid}", "summary": []}, message],
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": prompt // 2},
                  "output_tokens": completion,
                  "output_tokens_details": {"reasoning_tokens": completion // 3},
                  "total_tokens": prompt + completion},
    }  # fmt: skip


def anthropic_message(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    thinking: str = "2 + 2",
    text: str | None = None,
) -> Record:
    """An Anthropic Message with a thinking block (half the output tokens)."""
    return {
        "id": rid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": thinking, "signature": "Eq1"},
                    {"type": "text", "text": _own(text, "4.", rid), "citations": None}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": prompt, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 64, "output_tokens": completion,
                  "output_tokens_details": {"thinking_tokens": completion // 2}},
    }  # fmt: skip


def gemini(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    thought: str = "2 + 2",
    text: str | None = None,
) -> Record:
    """A Gemini response (REST camelCase): `completion` = candidates + thoughts tokens."""
    parts = [{"text": thought, "thought": True}, {"text": _own(text, "4.", rid)}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "modelVersion": "gemini-2.5-pro", "responseId": rid,
        "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": 0,
                          "candidatesTokenCount": completion // 2,
                          "thoughtsTokenCount": completion - completion // 2,
                          "totalTokenCount": prompt + completion},
    }  # fmt: skip


def cohere_chat(
    rid: str, prompt: int, completion: int, rng: Rng, *, text: str | None = None
) -> Record:
    """A Cohere v2 chat response (float counts, as the SDK types them)."""
    counts = {"input_tokens": float(prompt), "output_tokens": float(completion)}
    answer = _own(text, "4.", rid)
    return {
        "id": rid,
        "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        "usage": {"billed_units": counts, "tokens": dict(counts)},
    }


def failed_batch(
    rid: str,
    prompt: int,
    completion: int,
    rng: Rng,
    *,
    code: str = "batch_expired",
    message: str = "not completed in time",
) -> Record:
    """An OpenAI Batch line whose request failed without a response."""
    return {
        "id": f"batch_req_{rid}",
        "custom_id": rid,
        "response": None,
        "error": {"code": code, "message": message},
    }


def no_tokens(rid: str, prompt: int, completion: int, rng: Rng) -> Record:
    """The seed's bug: a response whose token count is nowhere a reader looks."""
    return {"id": rid, "text": "an answer", "meta": {"tokens": completion}}


def tokenized(
    prompt: int, completion: int, rng: Rng, *, rid: str | None = None, vocab: int = VOCAB
) -> Record:
    """A SpecForge-style training sample: loss on the completion only (an `id` if `rid`)."""
    sample: Record = {} if rid is None else {"id": rid}
    sample["input_ids"] = ids(rng, prompt + completion, vocab)
    sample["loss_mask"] = [0] * prompt + [1] * completion
    return sample


Writer = Callable[..., Record]
# The responses writers by name (`tokenized` is the other role).
WRITERS: dict[str, Writer] = {
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
    "derived": derived,
    "openai_responses": openai_responses,
    "anthropic_message": anthropic_message,
    "gemini": gemini,
    "cohere_chat": cohere_chat,
}


def line(record: Record | list[Record]) -> bytes:
    """One JSONL line (numpy id arrays written as lists)."""
    return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
