"""How notifications word the run-health rules: what, from what to what, which threshold."""

from __future__ import annotations

from genledger.config import Config
from genledger.notify.wording import detail

BLOCK = {
    "n_done": 4000,
    "n_tokenized": 300,
    "health": {
        "truncated": 312, "truncated_share": 0.078, "answers": 1000, "duplicate_outputs": 52,
        "duplicate_share": 0.052, "drift": ["truncated share 2.0% → 31.0%"],
    },
    "quality": {
        "prompt_not_masked": 60,
        "failures": [{"check": c} for c in (
            "truncated_outputs", "duplicate_outputs", "output_drift", "prompt_not_masked")],
    },
}  # fmt: skip


class Settings:
    truncated_share = 0.05
    duplicate_share = 0.01
    max_seq_len = 8192


def test_each_failing_health_rule_says_what_moved_and_against_which_threshold() -> None:
    assert detail(["truncated_outputs"], BLOCK, Settings()) == (
        "312 of 4,000 records (7.8%) stopped at the token limit; threshold 5.0%"
    )
    assert detail(["duplicate_outputs"], BLOCK, Settings()) == (
        "52 of 1,000 answers (5.2%) repeat an earlier one; threshold 1.0%"
    )
    assert detail(["output_drift"], BLOCK, Settings()) == (
        "truncated share 2.0% → 31.0% (first window → latest)"
    )
    assert detail(["prompt_not_masked"], BLOCK, Settings()) == (
        "60 of 300 samples train on every token"
    )


def test_a_passing_or_other_rule_adds_no_words() -> None:
    assert detail(["over_length", "failed_requests"], BLOCK, Config()) == ""
