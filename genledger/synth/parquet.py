"""Tokenized Parquet shards as HF `datasets` writes them, for the sealed-file benchmark.

Rows of 1-8k int64 ids (Zipf-distributed ranks over a 151,936-token vocabulary, as natural
text's tokens fall off) and an int64 0/1 `loss_mask`, the prompt part of each 0, in row groups
of 1,000 rows (`to_parquet` writes 1,000 a batch).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from genledger.synth.corpus import QWEN_VOCAB

ZIPF = 1.1  # token frequencies fall off like natural text's
GROUP_ROWS = 1_000
SCHEMA = pa.schema([("input_ids", pa.list_(pa.int64())), ("loss_mask", pa.list_(pa.int64()))])


def zipf_ids(rng: np.random.Generator, count: int) -> npt.NDArray[np.int64]:
    """Zipf-distributed token ranks over the vocabulary, each rank a fixed random token id."""
    ranks = np.arange(1, QWEN_VOCAB + 1, dtype=np.float64)
    cdf = np.cumsum(ranks**-ZIPF)
    cdf /= cdf[-1]
    ids = np.random.default_rng(0).permutation(QWEN_VOCAB)
    return ids[np.searchsorted(cdf, rng.random(count))].astype(np.int64)


def tokenized_group(rng: np.random.Generator, rows: int = GROUP_ROWS) -> pa.Table:
    """One row group of samples of 1-8k tokens, int64 ids and mask (as `datasets` infers
    Python ints), the prompt part of each mask (up to half the sample) 0."""
    lengths = rng.integers(1000, 8000, rows)
    offsets = pa.array(np.concatenate(([0], np.cumsum(lengths))).astype(np.int32))
    total = int(lengths.sum())
    prompt = rng.integers(0, lengths // 2 + 1)
    mask = np.ones(total, np.int64)
    starts = offsets.to_numpy()[:-1]
    for start, size in zip(starts.tolist(), prompt.tolist(), strict=True):
        mask[start : start + size] = 0
    return pa.Table.from_arrays(
        [
            pa.ListArray.from_arrays(offsets, pa.array(zipf_ids(rng, total))),
            pa.ListArray.from_arrays(offsets, pa.array(mask)),
        ],
        schema=SCHEMA,
    )


def write_tokenized_parquet(
    out: Path, mb: float, files: int = 2, seed: int = 3, **options: Any
) -> int:
    """One `tokenized_data.parquet` per dataset under `out` (replacing it), about `mb` MB
    decoded (Arrow bytes) in all, written with pyarrow's `options`; returns the decoded bytes.
    The same seed gives the same rows whatever the options."""
    shutil.rmtree(out, ignore_errors=True)
    rng = np.random.default_rng(seed)
    decoded = 0
    for index in range(files):
        path = out / f"tok{index}" / "tokenized_data.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(path, SCHEMA, **options) as sink:
            written = 0
            while written < mb * 1e6 / files:
                table = tokenized_group(rng)
                sink.write_table(table)
                written += table.nbytes
        decoded += written
    return decoded
