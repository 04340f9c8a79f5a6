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


def usd(value: float | None) -> str:
    """Dollars for people: cents, or four significant digits below a cent."""
    if value is None:
        return "?"
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4g}"


def cost_line(where: str, data: dict[str, Any]) -> str | None:
    """`  where: cost $1.20 spent, $3.40 projected; 12 records unpriced (models: x, y)`, or
    None when nothing was priced and nothing is unpriced (no responses)."""
    spent, projected = data.get("cost_usd"), data.get("cost_projected_usd")
    unpriced = data.get("cost_unpriced") or {}
    n_unpriced = unpriced.get("n_records") or 0
    if spent is None and not n_unpriced:
        return None
    parts = [f"{usd(spent)} spent" if spent is not None else "nothing priced"]
    if projected is not None:
        parts.append(f"{usd(projected)} projected")
    text = f"  {where}: cost {', '.join(parts)}"
    if n_unpriced:
        models = unpriced.get("models") or []
        shown = ", ".join(models[:SHOWN_PATHS]) + (", ..." if len(models) > SHOWN_PATHS else "")
        noun = "record" if n_unpriced == 1 else "records"
        text += f"; {n_unpriced:,} {noun} unpriced, not in the cost (models: {shown})"
    return text


def render(stats: dict[str, Any]) -> str:
    """All datasets (with failed requests and empty outputs by reason, unrecognised files and
    what they cost), the files outside every dataset, then the totals."""
    lines: list[str] = []
    # a cost is shown once something is priced, and then beside what is not
    priced = stats["totals"].get("cost_usd") is not None
    for name, data in stats["datasets"].items():
        lines.append(dataset_line(name, data))
        lines.extend(reason_lines(data))
        extra = unrecognised_line(name, data.get("unrecognised"))
        if extra:
            lines.append(extra)
        cost = cost_line(name, data) if priced else None
        if cost:
            lines.append(cost)
    outside = unrecognised_line("outside every dataset", stats.get("unrecognised"))
    if outside:
        lines.append(outside)
    totals = stats["totals"]
    lines.append(
        f"total: {totals['n_done']:,}/{_count(totals['n_prompts'])} done, "
        f"{totals['total_comp']:,} completion tokens, {totals['n_tokenized']:,} tokenized "
        f"[{totals['quality']['status'].upper()}]"
    )
    cost = cost_line("total", totals) if priced else None
    if cost:
        lines.append(cost)
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
