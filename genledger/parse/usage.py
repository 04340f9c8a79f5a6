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
Where counting a part beside its whole would take a count beyond int64 (each number within
it, their sum not), the wholes stay as given and the rests are unknown, with the finding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from genledger import codecache
from genledger.parse.buckets import DECLARED, RESTS, SIDES, UNITEMISED, parts_of

# The declared parts in `settle`'s order (the buckets' table order), each with its side's
# position in `SIDES`; each rest with its side's; where the unitemised output goes.
PARTS: tuple[str, ...] = tuple(b.column for b in DECLARED)
_SIDE_AT = {side.name: i for i, side in enumerate(SIDES)}
_PART_SIDE = tuple(_SIDE_AT[b.side] for b in DECLARED)
_REST_SIDE = tuple(_SIDE_AT[b.side] for b in RESTS)
_UNITEMISED = DECLARED.index(UNITEMISED)
_OUTPUT = _SIDE_AT[UNITEMISED.side]
_UNITEMISED_WORD = UNITEMISED.name.removeprefix(f"{UNITEMISED.side}_")  # reasoning
# (side position, its parts' positions, how the audit names the whole and each part), in the
# order the audit reports a part above its whole: the side of the first declared part first.
_AUDITED = tuple(
    (_SIDE_AT[side.name], tuple(DECLARED.index(b) for b in parts_of(side)), side.audit)
    for side in sorted(
        SIDES, key=lambda s: min((DECLARED.index(b) for b in parts_of(s)), default=len(DECLARED))
    )
)
# What `settle` gives, in order: the facts columns it sets.
SETTLED: tuple[str, ...] = (
    *(side.column for side in SIDES), UNITEMISED.column, *(b.column for b in RESTS),
    "usage_detail",
)  # fmt: skip


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _count(value: Any) -> int | None:
    """A value the buckets can use: an int >= 0 (the facts hold ints or None already)."""
    return value if value is not None and value >= 0 else None


def _settle_source() -> str:
    """`settle`'s source, written from the table once: it runs for every record, and a loop
    over the buckets costs several times a plain expression (the rare audit is a loop)."""
    wholes = [side.column for side in SIDES]
    valid = [f"({n} is None or {n} >= 0)" for n in (*wholes, *PARTS)]
    inside = {
        side.name: " + ".join(f"({b.column} or 0)" for b in parts_of(side)) or "0" for side in SIDES
    }
    fits = [f"({w.column} is None or in_{w.name} <= {w.column})" for w in SIDES]
    agree = f"total is None or {' is None or '.join(wholes)} is None or total == " + " + ".join(
        wholes
    )
    rests = [
        f"None if {SIDES[i].column} is None else {SIDES[i].column} - in_{SIDES[i].name}"
        for i in _REST_SIDE
    ]
    nothing = " and ".join(f"{n} is None" for n in ("total", *PARTS))
    plain_rests = ", ".join(SIDES[i].column for i in _REST_SIDE)
    return "\n".join([
        f"def settle({', '.join(wholes)}, total, {', '.join(f'{n}=None' for n in PARTS)}):",
        f"    if {nothing} and {' and '.join(valid[:len(wholes)])}:",
        f"        return ({', '.join(wholes)}, None, {plain_rests}, None)",
        f"    if {' and '.join(valid)}:",
        *(f"        in_{name} = {text}" for name, text in inside.items()),
        f"        if {' and '.join(fits)} and ({agree}):",
        f"            return ({', '.join(wholes)}, {UNITEMISED.column}, {', '.join(rests)}, None)",
        f"    return _audited([{', '.join(wholes)}], total, [{', '.join(PARTS)}])",
        "",
    ])  # fmt: skip


def _compiled() -> Callable[..., tuple[Any, ...]]:
    scope: dict[str, Any] = {"_audited": _audited}
    exec(codecache.compiled(_settle_source(), "<usage.settle>"), scope)
    function: Callable[..., tuple[Any, ...]] = scope["settle"]
    function.__doc__ = (
        "The facts `SETTLED` names — (prompt, completion, the unitemised part, each rest, "
        "finding) — of a record whose declared counts are given: its wholes, its total and "
        "its declared parts in `PARTS` order (ints in int64 range, or None; a part left out "
        "is None). `finding` is None when its numbers agree."
    )
    return function


def _audited(given: list[Any], total: Any, parts: list[Any]) -> tuple[Any, ...]:
    settled = _counted_beside(list(given), total, list(parts))
    if all(_INT64_MIN <= v <= _INT64_MAX for v in settled[:-1] if v is not None):
        return settled
    # Counted together, the numbers leave int64, which every count column holds: the
    # wholes stay as given, the rests unknown, and the finding says why.
    named = [f"{side.audit} {n}" for side, n in zip(SIDES, given, strict=True) if n is not None]
    named += [f"{b.audit} {n}" for b, n in zip(DECLARED, parts, strict=True) if n is not None]
    beyond = f"{', '.join(named)}: beyond int64 together, left as given, the rests unknown"
    return (*given, parts[_UNITEMISED], *(None for _ in _REST_SIDE), beyond)


def _counted_beside(given: list[Any], total: Any, parts: list[Any]) -> tuple[Any, ...]:
    findings = []
    valid: list[Any] = [_count(w) for w in given]
    read: list[Any] = [_count(p) for p in parts]
    for side, places, audit in _AUDITED:
        within = sum(read[i] or 0 for i in places)
        if valid[side] is not None and within > valid[side]:
            named = " + ".join(
                f"{DECLARED[i].audit} {read[i]}" for i in places if read[i] is not None
            )
            findings.append(f"{named} > {audit} {valid[side]}: counted beside it")
            valid[side] = given[side] = valid[side] + within
    whole = _count(total)
    if whole is not None and None not in valid and whole != sum(valid):
        findings.append(
            f"total_tokens {whole} ≠ "
            + " + ".join(f"{side.audit} {valid[i]}" for i, side in enumerate(SIDES))
        )
        if whole > sum(valid):  # billed output the format did not itemise
            extra = whole - sum(valid)
            findings[-1] += f": {extra} more output counted as {_UNITEMISED_WORD}"
            valid[_OUTPUT] = given[_OUTPUT] = valid[_OUTPUT] + extra
            if parts[_UNITEMISED] is None or read[_UNITEMISED] is not None:
                # an invalid figure stays as it is
                read[_UNITEMISED] = parts[_UNITEMISED] = (read[_UNITEMISED] or 0) + extra
    inside = [0] * len(SIDES)
    for place, value in zip(_PART_SIDE, read, strict=True):
        inside[place] += value or 0
    rests = (None if valid[i] is None else valid[i] - inside[i] for i in _REST_SIDE)
    return (*given, parts[_UNITEMISED], *rests, "; ".join(findings) or None)


settle = _compiled()
