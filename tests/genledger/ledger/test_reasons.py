"""Failed requests and empty outputs by reason: the stats JSON, the stderr summary, alerts."""

from __future__ import annotations

from pathlib import Path

from genledger.ledger.summary import render
from genledger.notify.decide import _alert
from genledger.notify.model import CheckOutcome, Kind
from genledger.notify.render import alert_line

from ..parse import sdk_records as sdk
from ..parse.test_sdk_formats import collect


def test_the_stats_and_the_summary_name_failed_requests_and_empty_outputs_by_reason(
    tmp_path: Path,
) -> None:
    batch = sdk.anthropic_batch_dataset(sdk.PYDANTIC_DUMPS["model_dump_json"])
    chat = sdk.openai_chat_dataset(sdk.PYDANTIC_DUMPS["exclude_none"])
    stats = collect(tmp_path, batch.lines + chat.lines)
    block = stats["datasets"]["ds"]
    assert block["failed_request_reasons"] == {"canceled": 1, "errored": 1, "expired": 1}
    assert block["empty_output_reasons"] == {"length": 1}
    assert stats["totals"]["failed_request_reasons"] == block["failed_request_reasons"]
    text = render(stats)
    assert "  failed requests: canceled 1, errored 1, expired 1" in text
    assert "  empty outputs (no visible answer), by finish: length 1" in text


def test_the_summary_counts_the_records_whose_numbers_disagree(tmp_path: Path) -> None:
    compat = (
        b'{"choices": [{"message": {"content": "4"}}], "usage": {"prompt_tokens": 35, '
        b'"completion_tokens": 12, "total_tokens": 109}}'
    )
    stats = collect(tmp_path, [compat, compat])
    assert (
        "  usage inconsistent 2 (a record's own numbers disagree), e.g. openai_chat: total_tokens "
        "109 ≠ prompt 35 + completion 12: 62 more output counted as reasoning"
    ) in render(stats).splitlines()


def test_a_clean_dataset_has_no_reason_lines(tmp_path: Path) -> None:
    stats = collect(tmp_path, sdk.vllm_dataset().lines)
    assert render(stats).count("\n") == 1  # the dataset line and the totals line


def test_an_alert_says_why_its_requests_failed() -> None:
    outcome = CheckOutcome(
        dataset="ds",
        asset_key="ds/raw_responses",
        check="requests_succeeded",
        passed=False,
        severity="warn",
        failure_count=4,
        rows_checked=10,
        examples=(),
        run_id="r1",
        reasons="errored 3, expired 1",
    )
    line = alert_line(_alert(Kind.FAILING, outcome, None, 4))
    assert line.endswith("— 4 of 10 rows (errored 3, expired 1)")
