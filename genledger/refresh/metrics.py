"""The metrics file of a refresh: rendered only when an exported number changed; otherwise
the text written last is kept as it is, without importing prometheus_client or rendering
(docs/metrics.md#what-it-costs).

A memo in the state dir, one per metrics path, holds the digests of the numbers and of the
text written. The kept text equals `genledger.ledger.openmetrics.exposition(stats,
max_models, changed)` with the changed-at time it holds (tests/genledger/refresh/
test_metrics.py); a text changed or gone since, or a memo unreadable, is rendered again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from genledger.ledger.metrics import generated_seconds, samples


def memo_path(state_dir: Path, metrics_path: Path) -> Path:
    """The memo of one metrics file: in the state dir, named after the file's absolute path."""
    key = hashlib.sha256(str(metrics_path.absolute()).encode()).hexdigest()[:16]
    return state_dir / f"metrics-{key}.json"


def digest(data: bytes) -> str:
    """The digest a memo keeps of the numbers or of a text."""
    return hashlib.sha256(data).hexdigest()


def numbers_digest(stats: Mapping[str, Any], max_models: int) -> str:
    """The digest of every exported sample (the changed-at time apart) and the model limit."""
    return digest(orjson.dumps([max_models, samples(stats, max_models)]))


def is_kept(memo: Path, metrics_path: Path, numbers: str) -> bool:
    """Whether the text written last holds `numbers` and the file still holds that text."""
    try:
        record = orjson.loads(memo.read_bytes())
        if not isinstance(record, dict) or record.get("numbers") != numbers:
            return False
        return bool(record.get("text") == digest(metrics_path.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return False


def metrics_files(
    stats: Mapping[str, Any], max_models: int, metrics_path: Path, state_dir: Path
) -> list[tuple[Path, bytes]]:
    """The files to write for the metrics: none when no number changed (the kept text is
    only touched: its mtime, node_exporter's `node_textfile_mtime_seconds`, says the
    refresh ran), else the rendered text and its new memo, the memo last."""
    numbers = numbers_digest(stats, max_models)
    memo = memo_path(state_dir, metrics_path)
    if is_kept(memo, metrics_path, numbers) and _touched(metrics_path):
        return []
    # only now: prometheus_client's import (its HTTP server, urllib) is most of the cost
    from genledger.ledger.openmetrics import exposition

    text = exposition(stats, max_models, generated_seconds(stats))
    record = {"numbers": numbers, "text": digest(text)}
    return [(metrics_path, text), (memo, orjson.dumps(record))]


def _touched(path: Path) -> bool:
    """Whether the file's mtime moved to now (no write, no fsync: the same bytes stay); a
    file this process may not touch (another owner's) is written anew instead."""
    try:
        os.utime(path)
    except OSError:
        return False
    return True
