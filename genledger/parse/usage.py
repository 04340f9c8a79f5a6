"""A record's usage in buckets that never overlap, and the audit of its own numbers.

Every declaration gives its counts one meaning (docs/formats.md): `completion_tokens` is
every generated or billed output token, `reasoning_tokens` a part of it; `prompt_tokens` every
input token, `cached_tokens` (read from a cache) and `cache_write_tokens` (written to one) parts
of it; `total_tokens` the record's own total, input and output. A source that keeps a part
beside its figure (Anthropic's cache, xAI's reasoning) is declared with a sum, so the
declared counts always mean the same. From them come the five buckets:

    input_uncached     = prompt - cached - cache_write
    input_cache_read   = cached
    input_cache_write  = cache_write
    output_visible     = completion - reasoning
    output_reasoning   = reasoning

The audit (`usage_inconsistent`) reads a record's numbers against each other. A part larger
than its whole cannot lie inside it: it is counted beside it. A total above prompt +
completion is output the format did not itemise: counted as reasoning, so the completion
holds every billed token. A total below it is only reported. Each finding is flagged with
the numbers; a declaration that states a quirk (with `a - b`, `a + b`) has nothing to flag.
"""

from __future__ import annotations

from typing import Any

Settled = tuple[Any, Any, Any, Any, Any, str | None]


def _count(value: Any) -> int | None:
    """A value the buckets can use: an int >= 0 (the facts hold ints or None already)."""
    return value if value is not None and value >= 0 else None


def settle(
    prompt: Any, completion: Any, reasoning: Any, cached: Any, write: Any, total: Any
) -> Settled:
    """(prompt, completion, reasoning, input_uncached, output_visible, finding) of a record
    whose declared counts are given (ints in int64 range, or None); `finding` is None when
    its numbers agree."""
    if (
        total is None
        and reasoning is None
        and cached is None
        and write is None
        and (completion is None or completion >= 0)
        and (prompt is None or prompt >= 0)
    ):
        return prompt, completion, None, prompt, completion, None  # nothing to compare
    # The common record: every count >= 0 or absent, and its numbers agree.
    if (
        (completion is None or completion >= 0)
        and (
            reasoning is None
            or (reasoning >= 0 and (completion is None or reasoning <= completion))
        )
        and (prompt is None or prompt >= 0)
        and (cached is None or cached >= 0)
        and (write is None or write >= 0)
    ):
        parts = (cached or 0) + (write or 0)
        if (prompt is None or parts <= prompt) and (
            total is None or prompt is None or completion is None or total == prompt + completion
        ):
            visible = None if completion is None else completion - (reasoning or 0)
            uncached = None if prompt is None else prompt - parts
            return prompt, completion, reasoning, uncached, visible, None
    return _audited(prompt, completion, reasoning, cached, write, total)


def _audited(
    prompt: Any, completion: Any, reasoning: Any, cached: Any, write: Any, total: Any
) -> Settled:
    findings = []
    out, part = _count(completion), _count(reasoning)
    if out is not None and part is not None and part > out:
        findings.append(f"reasoning_tokens {part} > completion {out}: counted beside it")
        out = completion = out + part
    into, read, written = _count(prompt), _count(cached), _count(write)
    parts = (read or 0) + (written or 0)
    if into is not None and parts > into:
        named = " + ".join(
            f"{name} {value}"
            for name, value in (("cached", read), ("cache_write", written))
            if value is not None
        )
        findings.append(f"{named} > prompt {into}: counted beside it")
        into = prompt = into + parts
    whole = _count(total)
    if whole is not None and into is not None and out is not None and whole != into + out:
        findings.append(f"total_tokens {whole} ≠ prompt {into} + completion {out}")
        if whole > into + out:  # billed output the format did not itemise
            extra = whole - into - out
            findings[-1] += f": {extra} more output counted as reasoning"
            out = completion = out + extra
            if reasoning is None or part is not None:  # an invalid figure stays as it is
                part = reasoning = (part or 0) + extra
    visible = None if out is None else out - (part or 0)
    uncached = None if into is None else into - parts
    return prompt, completion, reasoning, uncached, visible, "; ".join(findings) or None
