"""The benchmark corpora: every planned file and format, read back with nothing malformed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from genledger.config import Config
from genledger.parse.formats import response_facts
from genledger.refresh.collect import refresh
from genledger.synth.corpus import SHAPES, TOKENIZED_SHARE, TOKENS, append_share, write_corpus

FORMATS = {  # what genledger must find in each shape, by the makers the plans name
    "reference": {
        "sglang_generate", "openai_chat", "flat", "openai_batch", "wrapped_openai", "tgi",
        "derived", "openai_responses", "anthropic_message", "gemini", "cohere_chat",
        "vllm_offline",
    },
    "second": {"wrapped_openai", "sglang_generate", "flat", "openai_batch"},
    "tokens": {"wrapped_openai", "flat", "openai_batch"},
    "variants": {"wrapped_openai", "flat", "openai_batch"},
}  # fmt: skip


def collect(root: Path, tmp_path: Path) -> dict[str, Any]:
    """The stats JSON of `root`, from scratch."""
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    return refresh(config, full=True).stats


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_corpus_holds_every_planned_record_in_every_planned_format(
    shape: str, tmp_path: Path
) -> None:
    spec = SHAPES[shape]
    sizes = write_corpus(tmp_path / "c", 3, shape=shape)
    assert sizes == {
        f"{p.dataset}/{p.name}": (tmp_path / "c" / p.dataset / p.name).stat().st_size
        for p in spec.files
    }
    planned = {"responses": 0, "tokenized": 0}
    for plan, n in spec.counts(3).items():
        planned[plan.role] += n
    totals = collect(tmp_path / "c", tmp_path)["totals"]
    assert (totals["n_done"], totals["n_tokenized"]) == (planned["responses"], planned["tokenized"])
    assert set(totals["formats"]) == FORMATS[shape]
    assert totals["n_datasets"] == len({p.dataset for p in spec.files})
    assert totals["quality"]["malformed_lines"] == totals["quality"]["unreadable_files"] == 0


def test_the_tokens_corpus_is_three_quarters_tokenized_samples_of_2_to_8k_ids(
    tmp_path: Path,
) -> None:
    sizes = write_corpus(tmp_path / "c", 12, shape="tokens")
    tokenized = sum(n for key, n in sizes.items() if "/tokenized_data" in key)
    assert abs(tokenized / sum(sizes.values()) - TOKENIZED_SHARE) < 0.05
    assert len({key.split("/")[0] for key in sizes}) == 10
    tokens = loss = samples = 0
    for path in sorted((tmp_path / "c").glob("*/tokenized_data*.jsonl")):
        for raw in path.read_bytes().splitlines():
            sample = json.loads(raw)
            ids, mask = sample["input_ids"], sample["loss_mask"]
            assert 2000 <= len(ids) <= 8000 and len(mask) == len(ids)
            assert set(mask) == {0, 1} and all(0 <= i < 151_936 for i in ids)
            samples, tokens, loss = samples + 1, tokens + len(ids), loss + sum(mask)
    totals = collect(tmp_path / "c", tmp_path)["totals"]
    assert (totals["n_tokenized"], totals["total_tokens"], totals["total_loss_tokens"]) == (
        samples,
        tokens,
        loss,
    )
    responses = (tmp_path / "c" / "R1_wrapped_chat" / "raw_responses.jsonl").read_text()
    assert ", " in responses and "解" in responses  # Python's writer, ensure_ascii=False
    assert totals["avg_comp"] == pytest.approx(1000, rel=0.15)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_append_adds_records_of_each_files_last_format(shape: str, tmp_path: Path) -> None:
    write_corpus(tmp_path / "c", 3, shape=shape)
    before = {p: (tmp_path / "c" / p.dataset / p.name).read_bytes() for p in SHAPES[shape].files}
    added = append_share(tmp_path / "c", 0.05, seed=5, shape=shape)
    grown = 0
    for plan, old in before.items():
        data = (tmp_path / "c" / plan.dataset / plan.name).read_bytes()
        assert data.startswith(old) and data.endswith(b"\n")
        new_lines = data[len(old) :].splitlines()
        grown += len(data) - len(old)
        last = plan.mix[-1][0]
        assert new_lines, plan
        if plan.role == "responses":
            value = orjson.loads(new_lines[-1])
            record = value[0] if isinstance(value, list) else value
            expected = response_facts(last("r", np.random.default_rng(0)))
            assert response_facts(record).format == expected.format, plan
    assert grown == added


def test_the_reference_and_second_corpora_keep_their_record_counts() -> None:
    # Ratios stay comparable across sessions: 10 kB a record spread evenly over 12 and 4
    # files, SGLang batches of 4 (the bytes may change, the plan may not).
    reference, second = SHAPES["reference"].counts(800), SHAPES["second"].counts(800)
    per_file = int(800e6 / 10_000 / 12)
    assert len(reference) == 12 and set(reference.values()) == {per_file, per_file // 4 * 4}
    assert len(second) == 4 and set(second.values()) == {int(800e6 / 10_000 / 4)}
    assert len(TOKENS.files) == 11


def test_the_variants_corpus_writes_each_tokenized_file_as_another_pipeline_does(
    tmp_path: Path,
) -> None:
    write_corpus(tmp_path / "c", 40, shape="variants")
    first = {
        path.parent.name: path.read_bytes().split(b"\n", 1)[0]
        for path in (tmp_path / "c").glob("*/tokenized_data.jsonl")
    }
    assert first["V1_compact"].startswith(b'{"input_ids":[')  # orjson: compact
    assert first["V2_masks_first"].startswith(b'{"loss_mask": [')  # json: spaced
    assert b'"labels": [-100, ' in first["V3_hugging_face"]
    assert b'"attention_mask":[1,1' in first["V8_hf_compact"]
    assert len(first["V4_long_context"]) > 45_000
    assert "解".encode() in first["V5_with_text"] and b"\\u89e3" in first["V6_escaped_text"]
    assert max(json.loads(first["V7_positions"])["input_ids"]) >= 10**9
