"""Batch status objects built by the providers' own SDK models, serialised as their APIs
return them (what a pipeline saves beside a batch's output)."""

from __future__ import annotations

from datetime import UTC, datetime

from anthropic.types.messages import MessageBatch, MessageBatchRequestCounts
from openai.types import Batch
from openai.types.batch_request_counts import BatchRequestCounts
from openai.types.batch_usage import BatchUsage, InputTokensDetails, OutputTokensDetails

CREATED = 1_765_000_000


def openai_batch(
    total: int,
    failed: int = 0,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    status: str = "completed",
) -> bytes:
    """An OpenAI Batch object (`usage` only when both token counts are given)."""
    usage = None
    if input_tokens is not None and output_tokens is not None:
        usage = BatchUsage(
            input_tokens=input_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=0),
            output_tokens=output_tokens,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
            total_tokens=input_tokens + output_tokens,
        )
    batch = Batch(
        id="batch_6790e4c8f8a48190b2bd0fbd3a3b8f3c",
        object="batch",
        endpoint="/v1/chat/completions",
        input_file_id="file-JqDZmPjC3aWnmNstbUEfZ4",
        completion_window="24h",
        status=status,  # type: ignore[arg-type]
        output_file_id="file-Q4xQpM8dBtrxH1FWStTQJj",
        created_at=CREATED,
        completed_at=CREATED + 3600,
        request_counts=BatchRequestCounts(total=total, completed=total - failed, failed=failed),
        usage=usage,
    )
    return batch.model_dump_json(exclude_unset=True).encode()


def anthropic_batch(
    succeeded: int,
    errored: int = 0,
    canceled: int = 0,
    expired: int = 0,
    processing: int = 0,
) -> bytes:
    """An Anthropic Message Batch object as `client.messages.batches.retrieve` returns it."""
    batch = MessageBatch(
        id="msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
        type="message_batch",
        processing_status="ended" if not processing else "in_progress",
        request_counts=MessageBatchRequestCounts(
            processing=processing,
            succeeded=succeeded,
            errored=errored,
            canceled=canceled,
            expired=expired,
        ),
        created_at=datetime.fromtimestamp(CREATED, UTC),
        expires_at=datetime.fromtimestamp(CREATED + 86_400, UTC),
        ended_at=None if processing else datetime.fromtimestamp(CREATED + 600, UTC),
        archived_at=None,
        cancel_initiated_at=None,
        results_url="https://api.anthropic.com/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results",
    )
    return batch.model_dump_json().encode()
