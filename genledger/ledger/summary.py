"""The short human summary `genledger collect` prints on stderr."""

from __future__ import annotations

from typing import Any


def _count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def worst_failure(quality: dict[str, Any]) -> str:
    """The first (most severe) failure as 'check count', or '' when clean."""
    failures = quality.get("failures") or []
    if not failures:
        return ""
    top = failures[0]
    return f"{top['check'].replace('_', ' ')} {top['count']:,}"


def dataset_line(name: str, data: dict[str, Any]) -> str:
    """One dataset: done/expected, tokens, status and its worst failure."""
    progress = data.get("progress")
    pct = f" ({progress:.1%})" if progress is not None else ""
    if data["kind"] == "pretokenized":
        work = f"{data['n_tokenized']:,} tokenized, {data['total_tokens']:,} tokens"
    else:
        work = (
            f"{data['n_done']:,}/{_count(data['n_prompts'])} done{pct}, "
            f"{data['total_comp']:,} completion tokens"
        )
    status = data["quality"]["status"].upper()
    failure = worst_failure(data["quality"])
    return f"{name}: {work}  [{status}]{'  ' + failure if failure else ''}"


SHOWN_PATHS = 5  # unrecognised files named per line (the count says how many in all)


def unrecognised_line(where: str, block: dict[str, Any] | None) -> str | None:
    """`  where: N unrecognised files: a, b, ...` (None when there is none)."""
    if not block or not block.get("count"):
        return None
    count, paths = block["count"], block.get("paths", [])[:SHOWN_PATHS]
    more = f", ... ({count - len(paths)} more)" if count > len(paths) else ""
    noun = "file" if count == 1 else "files"
    return f"  {where}: {count} unrecognised {noun} (matching no pattern): {', '.join(paths)}{more}"


BY_REASON = (
    ("failed_request_reasons", "failed requests"),
    ("empty_output_reasons", "empty outputs (no visible answer), by finish"),
)


def reason_lines(data: dict[str, Any]) -> list[str]:
    """Indented lines naming failed requests and empty outputs by reason, and the records whose
    own usage numbers disagree, when there are any."""
    lines = []
    for key, label in BY_REASON:
        counts = data.get(key) or {}
        if counts:
            top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            lines.append(f"  {label}: " + ", ".join(f"{reason} {n:,}" for reason, n in top))
    audit = audit_line(data.get("quality") or {})
    return lines + ([audit] if audit else [])


AUDIT = "usage_inconsistent"


def audit_line(quality: dict[str, Any]) -> str | None:
    """`  usage inconsistent 3 (numbers of a record disagree), e.g. <first reason>`."""
    count = quality.get(AUDIT)
    if not count:
        return None
    found = [f for f in quality.get("failures") or [] if f.get("check") == AUDIT]
    examples = found[0].get("examples") or [] if found else []
    first = f", e.g. {examples[0]['reason']}" if examples else ""
    return f"  usage inconsistent {count:,} (a record's own numbers disagree){first}"


def render(stats: dict[str, Any]) -> str:
    """All datasets (with failed requests and empty outputs by reason, and unrecognised
    files), the files outside every dataset, then the totals."""
    lines: list[str] = []
    for name, data in stats["datasets"].items():
        lines.append(dataset_line(name, data))
        lines.extend(reason_lines(data))
        extra = unrecognised_line(name, data.get("unrecognised"))
        if extra:
            lines.append(extra)
    outside = unrecognised_line("outside every dataset", stats.get("unrecognised"))
    if outside:
        lines.append(outside)
    totals = stats["totals"]
    lines.append(
        f"total: {totals['n_done']:,}/{_count(totals['n_prompts'])} done, "
        f"{totals['total_comp']:,} completion tokens, {totals['n_tokenized']:,} tokenized "
        f"[{totals['quality']['status'].upper()}]"
    )
    return "\n".join(lines)


def failing_checks(quality: dict[str, Any]) -> str:
    """Every failing check as 'name SEVERITY count', most severe first; 'none' when clean."""
    failures = quality.get("failures") or []
    if not failures:
        return "none"
    return ", ".join(f"{f['check']} {f['severity'].upper()} {f['count']:,}" for f in failures)


def refresh_line(stats: dict[str, Any]) -> str:
    """One line for one refresh: datasets, progress, tokens and the failing checks."""
    totals = stats["totals"]
    progress = totals.get("progress")
    pct = f" ({progress:.1%})" if progress is not None else ""
    return (
        f"{len(stats['datasets'])} datasets, "
        f"{totals['n_done']:,}/{_count(totals['n_prompts'])} done{pct}, "
        f"{totals['total_comp']:,} completion tokens, {totals['n_tokenized']:,} tokenized "
        f"[{totals['quality']['status'].upper()}]; failing: {failing_checks(totals['quality'])}"
    )
