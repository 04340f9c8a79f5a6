"""The small finished run the tests share: clean, warn and error datasets, a tokenized one."""

from __future__ import annotations

import random
from pathlib import Path

from genledger.synth.records import WRITERS, line, tokenized


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
