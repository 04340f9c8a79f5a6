"""Realistic corpora for the benchmarks (docs/performance.md), in three shapes.

- `reference`: every format, ~10 kB records like a Kimi/SGLang run (a long `text` with unicode
  and escapes, `output_ids` of 200-1400 ids), formats switching mid-file, written by orjson.
- `second`: a distillation run's responses as Python's `json` writes them (`ensure_ascii=False`,
  spaces after separators): wrapped chat, SGLang `meta_info`, flat `/generate`, Batch lines,
  ~1,000 completion tokens on average.
- `tokens`: a draft-model distillation run, three quarters of its bytes tokenized samples (one
  a line, 2-8k ids from a 150k vocabulary, a 0/1 loss mask), the rest `second`'s responses.
- `variants`: `tokens` as other pipelines write their samples: compact or spaced, masks
  first, Hugging Face keys (`attention_mask`, `labels` of -100s), 8-30k-id lines of 50-200 kB,
  texts beside the ids (raw UTF-8 or `\\u` escapes), 10-digit ids and `position_ids`.

A maker draws one record's counts, texts and rare defects with numpy and hands them to its
`records` writer; a shape's plan says which makers fill which file; `write_corpus` and
`append_share` lay the files out. Every response has a valid integer count or a planted
defect the peers count the same way, so DuckDB's totals are comparable to genledger's.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from genledger.synth import records
from genledger.synth.records import Record

QWEN_VOCAB = 151_936  # the tokenized samples' vocabulary
WORDS = [
    *["the", "model", "writes", "code", "def", "solve", "return", "tokens", "reasoning"],
    *["step", "first", "then", "verify", "answer", "équation", "解", "数据", "函数", "—"],
    *["“quoted”", "{json}", "[1,", "2]", "tab\there\nnew line", "```python\nprint(x)\n```"],
]
Maker = Callable[[str, np.random.Generator], Record]


def text(rng: np.random.Generator, mean_chars: int) -> str:
    """Words (unicode, quotes, tabs and newlines among them) of about `mean_chars` characters."""
    n = max(8, int(rng.normal(mean_chars, mean_chars / 4)) // 6)
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n))


# --- the reference shape: ~10 kB records of every format ---------------------------------


def _lengths(rng: np.random.Generator) -> tuple[int, int]:
    return int(rng.integers(40, 400)), int(rng.integers(200, 1400))


def _chat_texts(rng: np.random.Generator) -> dict[str, Any]:
    """Content and reasoning; 0.2 % leak `</think>` into content (no reasoning parsed)."""
    leak = rng.random() < 0.002
    content = text(rng, 4000) + ("</think>done" if leak else "")
    return {"content": content, "reasoning": None if leak else text(rng, 4000)}


def sglang(rid: str, rng: np.random.Generator) -> Record:
    """SGLang /generate with its output ids; 0.1 % state a zero count."""
    prompt, comp = _lengths(rng)
    reported = 0 if rng.random() < 0.001 else None
    answer, latency = text(rng, 3000), float(rng.random() * 30)
    return records.sglang_generate(
        rid, prompt, comp, rng, text=answer, reported=reported, latency=latency
    )


def flat(rid: str, rng: np.random.Generator) -> Record:
    """A pipeline-flattened /generate line with input and output ids."""
    prompt, comp = _lengths(rng)
    finish = "stop" if rng.random() > 0.1 else "length"
    return records.flat(rid, prompt, comp, rng, text=text(rng, 2500), finish_reason=finish)


def chat(rid: str, rng: np.random.Generator) -> Record:
    """An OpenAI chat completion with reasoning."""
    prompt, comp = _lengths(rng)
    return records.openai_chat(rid, prompt, comp, rng, **_chat_texts(rng))


def batch(rid: str, rng: np.random.Generator) -> Record:
    """An OpenAI Batch output line; 0.2 % failed without a response."""
    if rng.random() < 0.002:
        return records.failed_batch(rid, 0, 0, rng, code="server_error", message="boom")
    prompt, comp = _lengths(rng)
    return records.openai_batch(rid, prompt, comp, rng, **_chat_texts(rng))


def wrapped(rid: str, rng: np.random.Generator) -> Record:
    """A chat completion wrapped by a pipeline."""
    prompt, comp = _lengths(rng)
    return records.wrapped_openai(rid, prompt, comp, rng, **_chat_texts(rng))


def tgi(rid: str, rng: np.random.Generator) -> Record:
    """TGI /generate with details (no ids), padded with text like real dumps."""
    prompt, comp = _lengths(rng)
    return records.tgi(rid, prompt, comp, rng, text=text(rng, 6000))


def derived(rid: str, rng: np.random.Generator) -> Record:
    """A vLLM-ish dump whose only count is len(output_ids)."""
    prompt, comp = _lengths(rng)
    return records.derived(rid, prompt, comp, rng, text=text(rng, 3000))


def responses_api(rid: str, rng: np.random.Generator) -> Record:
    """An OpenAI Responses API record with reasoning and cached tokens."""
    prompt, comp = _lengths(rng)
    return records.openai_responses(rid, prompt, comp, rng, text=text(rng, 3000))


def anthropic(rid: str, rng: np.random.Generator) -> Record:
    """An Anthropic Message with a thinking block."""
    prompt, comp = _lengths(rng)
    thinking, answer = text(rng, 2000), text(rng, 2000)
    return records.anthropic_message(rid, prompt, comp, rng, thinking=thinking, text=answer)


def gemini(rid: str, rng: np.random.Generator) -> Record:
    """A Gemini response (REST camelCase) with a thought part."""
    prompt, comp = _lengths(rng)
    return records.gemini(rid, prompt, comp, rng, thought=text(rng, 2000), text=text(rng, 2000))


def cohere(rid: str, rng: np.random.Generator) -> Record:
    """A Cohere v2 chat response (float counts)."""
    prompt, comp = _lengths(rng)
    return records.cohere_chat(rid, prompt, comp, rng, text=text(rng, 3500))


def vllm_n4(rid: str, rng: np.random.Generator) -> Record:
    """A vLLM offline RequestOutput with SamplingParams(n=4): every sample counts."""
    prompt, comp = _lengths(rng)
    return records.vllm(rid, prompt, comp, rng, samples=4, text=text(rng, 700))


def tokenized(rid: str, rng: np.random.Generator) -> Record:
    """A SpecForge training sample with an id: loss on the completion only."""
    prompt, comp = _lengths(rng)
    return records.tokenized(prompt, comp, rng, rid=rid)


# --- the second shape: a distillation run's responses, ~1,000 completion tokens -----------


def _long(rng: np.random.Generator) -> tuple[int, int]:
    return int(rng.integers(100, 600)), int(rng.integers(400, 1600))


def _answer(rng: np.random.Generator, comp: int) -> str:
    """An answer of about 4 characters a token; 2 % carry a `<think>` block."""
    answer = text(rng, 4 * comp)
    return f"<think>{text(rng, 400)}</think>{answer}" if rng.random() < 0.02 else answer


def wrapped_long(rid: str, rng: np.random.Generator) -> Record:
    """OpenAI chat wrapped as `{"id", "response": {...}}`, reasoning not split out."""
    prompt, comp = _long(rng)
    content = _answer(rng, comp)
    return records.wrapped_openai(rid, prompt, comp, rng, content=content, reasoning=None)


def sglang_long(rid: str, rng: np.random.Generator) -> Record:
    """SGLang `meta_info` records with `output_ids`."""
    prompt, comp = _long(rng)
    return records.sglang_generate(rid, prompt, comp, rng, text=_answer(rng, comp), latency=12.5)


def flat_long(rid: str, rng: np.random.Generator) -> Record:
    """Flat `/generate` records with `input_ids` and `output_ids`."""
    prompt, comp = _long(rng)
    return records.flat(rid, prompt, comp, rng, text=_answer(rng, comp))


def batch_long(rid: str, rng: np.random.Generator) -> Record:
    """Batch API lines."""
    prompt, comp = _long(rng)
    content = _answer(rng, comp)
    return records.openai_batch(rid, prompt, comp, rng, content=content, reasoning=None)


# --- the tokens shape: tokenized samples of a draft-model distillation run --------------------


def token_sample(rid: str, rng: np.random.Generator) -> Record:
    """One training sample of 2-8k ids, the prompt's 10-50 % masked out (no id)."""
    length = int(rng.integers(2000, 8001))
    prompt = int(rng.integers(length // 10, length // 2))
    return records.tokenized(prompt, length - prompt, rng, vocab=QWEN_VOCAB)


# --- the variants shape: tokenized samples as other pipelines write them ------------------


def _sample(rng: np.random.Generator, low: int = 2000, high: int = 8001) -> tuple[Any, int, int]:
    """A sample's ids (a 150k vocabulary), its length and its masked prompt's length."""
    length = int(rng.integers(low, high))
    prompt = int(rng.integers(length // 10, length // 2))
    return records.ids(rng, length, QWEN_VOCAB), length, prompt


def masks_first(rid: str, rng: np.random.Generator) -> Record:
    """`{"loss_mask", "input_ids", "id"}`: the mask written first, an integer id."""
    ids, length, prompt = _sample(rng)
    return {"loss_mask": [0] * prompt + [1] * (length - prompt), "input_ids": ids,
            "id": int(rng.integers(0, 1 << 40))}  # fmt: skip


def hugging_face(rid: str, rng: np.random.Generator) -> Record:
    """A `transformers`-style sample: `attention_mask`, `labels` with -100 on the prompt."""
    ids, length, prompt = _sample(rng)
    labels = [-100] * prompt + ids[prompt:].tolist()
    return {"input_ids": ids, "attention_mask": [1] * length, "labels": labels,
            "loss_mask": [0] * prompt + [1] * (length - prompt)}  # fmt: skip


def long_sample(rid: str, rng: np.random.Generator) -> Record:
    """A long-context sample of 8-30k ids (lines of 50-200 kB)."""
    ids, length, prompt = _sample(rng, 8000, 30001)
    return {"id": rid, "input_ids": ids, "loss_mask": [0] * prompt + [1] * (length - prompt)}


def text_sample(rid: str, rng: np.random.Generator) -> Record:
    """A sample with its conversation text beside the ids and a token count."""
    ids, length, prompt = _sample(rng)
    return {"id": rid, "text": text(rng, 3000), "input_ids": ids,
            "loss_mask": [0] * prompt + [1] * (length - prompt), "num_tokens": length}  # fmt: skip


def positions(rid: str, rng: np.random.Generator) -> Record:
    """10-digit ids (a packed vocabulary) with `position_ids`."""
    length = int(rng.integers(2000, 8001))
    prompt = int(rng.integers(length // 10, length // 2))
    return {"input_ids": records.ids(rng, length, 1 << 33), "position_ids": list(range(length)),
            "loss_mask": [0] * prompt + [1] * (length - prompt)}  # fmt: skip


# --- plans: which makers fill which file --------------------------------------------------


@dataclass(frozen=True)
class FilePlan:
    """One data file of a corpus: its makers in order, each for its share of the records."""

    dataset: str
    name: str
    mix: tuple[tuple[Maker, float], ...]
    weight: float = 1.0  # its part of the corpus's bytes, relative to the other files'
    record_bytes: int = 10_000  # about how many bytes a record takes: bytes into counts
    batch: int = 1  # records a line (SGLang's batch dumps write JSON arrays)
    writer: str = ""  # "orjson", "json", "json-ascii" (escapes); "": the shape's

    @property
    def role(self) -> str:
        """`tokenized` or `responses`, as the file's name tells genledger."""
        return "tokenized" if self.name.startswith("tokenized") else "responses"


@dataclass(frozen=True)
class Shape:
    """A corpus shape: its files and how its lines are written."""

    name: str
    files: tuple[FilePlan, ...]
    python_writer: bool = False  # `json.dumps(ensure_ascii=False)`, else orjson

    def dumps(self, value: Any, writer: str = "") -> bytes:
        """One value as this shape's writer (or `writer`) writes it (no newline)."""
        writer = writer or ("json" if self.python_writer else "orjson")
        if writer == "orjson":
            return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
        return json.dumps(value, ensure_ascii=writer == "json-ascii", default=_listed).encode()

    def counts(self, mb: float) -> dict[FilePlan, int]:
        """Records per file for a corpus of about `mb` MB (a multiple of the file's batch)."""
        total = sum(f.weight for f in self.files)
        counts = {}
        for f in self.files:
            n = int(mb * 1e6 * f.weight / total / f.record_bytes)
            counts[f] = n // f.batch * f.batch
        return counts

    def makers(self, role: str) -> list[Maker]:
        """Every maker of this shape's files of `role`, once each, in plan order."""
        found = [m for f in self.files if f.role == role for m, _ in f.mix]
        return list(dict.fromkeys(found))


def _listed(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


R = "raw_responses.jsonl"
OTHER_APIS = (
    (responses_api, 0.25),
    (anthropic, 0.2),
    (gemini, 0.2),
    (cohere, 0.1),
    (vllm_n4, 0.25),
)
REFERENCE = Shape(
    "reference",
    (
        FilePlan("B1_sglang", R, ((sglang, 1.0),)),
        FilePlan("B2 chat→flat", R, ((chat, 0.5), (flat, 0.5))),
        FilePlan("B3_batch_api", R, ((batch, 1.0),)),
        FilePlan("B4_wrapped_then_sglang", R, ((wrapped, 0.4), (sglang, 0.6))),
        FilePlan("B5_tgi_then_derived", R, ((tgi, 0.3), (derived, 0.7))),
        FilePlan("B6_sharded", "raw_responses_00.jsonl", ((flat, 1.0),)),
        FilePlan("B6_sharded", "raw_responses_01.jsonl", ((flat, 1.0),)),
        FilePlan("B7_sglang_batches", R, ((sglang, 1.0),), batch=4),
        FilePlan("B8_chat", R, ((chat, 1.0),)),
        FilePlan("B9_other_apis", R, OTHER_APIS),
        FilePlan("A1_pretokenized", "tokenized_data.jsonl", ((tokenized, 1.0),)),
        FilePlan("A2_pretokenized", "tokenized_data.jsonl", ((tokenized, 1.0),)),
    ),
)
SECOND = Shape(
    "second",
    (
        FilePlan("C1_wrapped_chat", R, ((wrapped_long, 1.0),)),
        FilePlan("C2_sglang_meta", R, ((sglang_long, 1.0),)),
        FilePlan("C3_flat_generate", R, ((flat_long, 1.0),)),
        FilePlan("C4_batch_api", R, ((batch_long, 1.0),)),
    ),
    python_writer=True,
)
TOKENIZED_SHARE, SAMPLE_BYTES = 0.75, 51_500
_TOKENIZED_FILES = (
    ("D1_distill_math", "tokenized_data.jsonl"),
    ("D2_distill_code", "tokenized_data.jsonl"),
    ("D3_distill_chat", "tokenized_data.jsonl"),
    ("D4 long-context.v2", "tokenized_data.jsonl"),
    ("D5_multilingual", "tokenized_data.jsonl"),
    ("D6_agentic", "tokenized_data.jsonl"),
    ("D7_sharded", "tokenized_data_00.jsonl"),
    ("D7_sharded", "tokenized_data_01.jsonl"),
)
_RESPONSE_FILES = (  # (dataset, maker, about how many bytes a record takes)
    ("R1_wrapped_chat", wrapped_long, 5_400),
    ("R2_flat_generate", flat_long, 14_800),
    ("R3_batch_api", batch_long, 5_400),
)


def _tokens_files() -> tuple[FilePlan, ...]:
    """10 datasets: tokenized samples in 8 files (three quarters of the bytes), 3 of responses."""
    sample_weight = TOKENIZED_SHARE / len(_TOKENIZED_FILES)
    response_weight = (1 - TOKENIZED_SHARE) / len(_RESPONSE_FILES)
    return (
        *(
            FilePlan(dataset, name, ((token_sample, 1.0),), sample_weight, SAMPLE_BYTES)
            for dataset, name in _TOKENIZED_FILES
        ),
        *(
            FilePlan(dataset, R, ((maker, 1.0),), response_weight, size)
            for dataset, maker, size in _RESPONSE_FILES
        ),
    )


TOKENS = Shape("tokens", _tokens_files(), python_writer=True)
_VARIANT_FILES = (  # (dataset, maker, writer, about how many bytes a sample takes)
    ("V1_compact", token_sample, "orjson", 42_000),
    ("V2_masks_first", masks_first, "json", 56_000),
    ("V3_hugging_face", hugging_face, "json", 105_000),
    ("V4_long_context", long_sample, "orjson", 152_000),
    ("V5_with_text", text_sample, "json", 63_000),
    ("V6_escaped_text", text_sample, "json-ascii", 54_000),
    ("V7_positions", positions, "json", 116_000),
    ("V8_hf_compact", hugging_face, "orjson", 84_000),
)


def _variant_files() -> tuple[FilePlan, ...]:
    """`tokens`' plan with each tokenized file written as another pipeline writes it."""
    weight = TOKENIZED_SHARE / len(_VARIANT_FILES)
    samples = tuple(
        FilePlan(dataset, "tokenized_data.jsonl", ((maker, 1.0),), weight, size, writer=writer)
        for dataset, maker, writer, size in _VARIANT_FILES
    )
    return samples + tuple(f for f in _tokens_files() if f.role == "responses")


VARIANTS = Shape("variants", _variant_files(), python_writer=True)
SHAPES = {shape.name: shape for shape in (REFERENCE, SECOND, TOKENS, VARIANTS)}


def file_lines(
    shape: Shape,
    plan: FilePlan,
    n: int,
    rng: np.random.Generator,
    prefix: str,
    mix: tuple[tuple[Maker, float], ...] | None = None,
) -> Iterator[bytes]:
    """The JSONL lines of exactly `n` records of `plan` (`plan.batch` a line, `n` a multiple
    of it), makers in mix order, each up to its cumulative share."""
    i = done = 0
    cumulative = 0.0
    steps = mix or plan.mix
    for k, (maker, share) in enumerate(steps):
        cumulative += share
        end = n if k == len(steps) - 1 else round(n * cumulative)
        for _ in range((end - done) // plan.batch):
            group = [maker(f"{prefix}-{i + j}", rng) for j in range(plan.batch)]
            i += plan.batch
            yield shape.dumps(group if plan.batch > 1 else group[0], plan.writer) + b"\n"
        done = end


def write_corpus(
    out: Path, mb: float = 800.0, seed: int = 1, shape: str = "reference"
) -> dict[str, int]:
    """Write the corpus of `shape` under `out` (replacing it); returns bytes per file key."""
    if out.exists():
        shutil.rmtree(out)
    rng = np.random.default_rng(seed)
    spec = SHAPES[shape]
    sizes: dict[str, int] = {}
    for plan, n in spec.counts(mb).items():
        folder = out / plan.dataset
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / plan.name
        with path.open("wb") as fh:
            for chunk in file_lines(spec, plan, n, rng, f"{plan.dataset}/{plan.name}"):
                fh.write(chunk)
        sizes[f"{plan.dataset}/{plan.name}"] = path.stat().st_size
        prompts = folder / "prompts.jsonl"
        if plan.role == "responses" and not prompts.exists():  # each prompt answered twice
            prompts.write_bytes(b"".join(b'{"i": %d}\n' % k for k in range(n * 2)))
    return sizes


def append_share(root: Path, share: float = 0.01, seed: int = 2, shape: str = "reference") -> int:
    """Append about `share` of each data file's records in its last format; returns bytes."""
    rng = np.random.default_rng(seed)
    spec = SHAPES[shape]
    added = 0
    for plan in spec.files:
        path = root / plan.dataset / plan.name
        n = max(1, round(path.stat().st_size * share / plan.record_bytes))
        n = max(1, n // plan.batch) * plan.batch
        last = ((plan.mix[-1][0], 1.0),)
        prefix = f"{plan.dataset}/{plan.name}+{seed}"
        data = b"".join(file_lines(spec, plan, n, rng, prefix, last))
        with path.open("ab") as fh:
            fh.write(data)
        added += len(data)
    return added
