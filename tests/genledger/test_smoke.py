"""A first end-to-end pass of collect over the sample tree (detailed tests live beside)."""

from __future__ import annotations

from pathlib import Path

from genledger.refresh.collect import refresh


def test_collect_sample_tree_flags_each_dataset_by_its_defect(
    sample_root: Path, config_for
) -> None:
    stats = refresh(config_for(sample_root)).stats
    status = {name: d["quality"]["status"] for name, d in stats["datasets"].items()}
    assert status == {
        "A1_pretokenized": "ok",
        "clean_chat_then_flat": "ok",
        "error_missing_tokens": "error",
        "warn_think_leaks": "warn",
    }
