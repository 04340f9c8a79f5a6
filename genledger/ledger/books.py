"""The books: how each fact column feeds a file's tally and the stats JSON, stated once.

One list per table says, entry by entry, what is counted or summed over which rows. From it:

- one function per table, compiled once, makes a file's tally in one pass over its rows:
  the rules' verdicts (`genledger.rules.catalogue`) and every entry, row by row, with no
  pandas (the technique `rules.expr` uses for the rule conditions);
- an array version sums the same entries over numpy columns (tokenized Parquet in bulk);
- `FileTally`'s keys (`genledger.ledger.tally`), the stats keys of a dataset block and of
  the totals, and how each stat is derived (`genledger.ledger.stats`).

Adding a per-record count to the stats JSON is one column in `genledger.parse.schema`, its
paths in `genledger.parse.declarations` and one entry here.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from genledger import codecache
from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.usage import SLOT_S, TIER_FACT, TIER_STARTS, USAGE_SUMS
from genledger.ledger.window import Ends
from genledger.parse.buckets import BUCKETS
from genledger.parse.formats import FINISH_SEPARATOR
from genledger.parse.schema import TABLES
from genledger.rules.catalogue import (
    CHUNK,
    COUNT,
    COUNTED,
    EMPTY_OUTPUT,
    FAILED,
    HAS_TOKENS,
    N_TOKENS,
    PARSED,
    REFUSED,
    TRUNCATED,
    Table,
    rules_of,
)
from genledger.rules.expr import Expr, Logic, Source, col, condition_function, evaluate_arrays
from genledger.rules.result import RuleTally
from genledger.rules.rows import Failures

NO_FINISH = "no finish reason"


def reason_kind(detail: Any) -> str:
    """A failed request's reason without its free text (`errored`, `status_code 400`)."""
    return str(detail).split(":", 1)[0][:60] if detail else "unknown"


def finish_or_none(finish: Any) -> str:
    """A finish reason, or a word for none."""
    return finish if isinstance(finish, str) else NO_FINISH


# --- the kinds of entries -----------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    """`key`: how many rows `when` holds for."""

    key: str
    when: Expr
    stat: str | None = None


@dataclass(frozen=True)
class Sum:
    """`key`: the sum of `column` over the rows `when` holds for (`when` rules out nulls);
    `known`: also count those rows, and show the stat as null when there is none."""

    key: str
    column: str
    when: Expr
    stat: str | None = None
    known: str | None = None


@dataclass(frozen=True)
class Tally:
    """`key`: how often each string value of `column` occurs where `when` holds (`label`
    maps a value to its name first; `split` cuts a joined value into several)."""

    key: str
    column: str
    when: Expr
    stat: str | None = None
    label: Callable[[Any], str] | None = None
    split: str | None = None


@dataclass(frozen=True)
class Ids:
    """`key`: the (line, value) of `column` where it is not null (the duplicate-id rule)."""

    key: str
    column: str
    when: Expr


@dataclass(frozen=True)
class Given:
    """`key`: a value the reader sets directly: a sum (a prompts file's non-blank lines), an
    id list (`kind="ids"`: the prompts' ids) or a counter (`kind="counter"`)."""

    key: str
    kind: str = "sum"


@dataclass(frozen=True)
class Quantile:
    """`key`: a mergeable summary (`ledger.quantiles`) of `column` over the rows `when`
    holds for (`when` rules out nulls)."""

    key: str
    column: str
    when: Expr


@dataclass(frozen=True)
class Hashes:
    """`key`: the (line, value) of a fixed-size key `column` where `when` holds and it is
    not null (the duplicate-answer rule: `ledger.hashlist`)."""

    key: str
    column: str
    when: Expr


@dataclass(frozen=True)
class Trail:
    """`key`: the first and last records `when` holds for, each as (flags, value, label):
    `flags` the bits of the named conditions that hold, `value` the column where `valid`
    holds (else -1), `label` a text column (the windows of `ledger.window`)."""

    key: str
    when: Expr
    flags: tuple[tuple[str, Expr], ...]
    value: str
    valid: Expr
    label: str  # a column's name (a Tally's `label` is a function)


@dataclass(frozen=True)
class Ratio:
    """`stat` = the stat `numerator` / the stat `denominator` (null when it is 0 or null)."""

    stat: str
    numerator: str
    denominator: str


@dataclass(frozen=True)
class Priced:
    """`key`: the `sums` (keys of this table's `Count` and `Sum` entries, each restricted to
    the rows `when` holds for) per price key: the `by` columns, the tier band of `tier` and
    the half-hour slot of `time` (`genledger.ledger.usage`); `ledger.cost` prices each key
    once. The pass only notes where the key changes: a run of rows of one key adds the
    difference of the running sums (most files are one long run)."""

    key: str
    when: Expr
    by: tuple[str, ...]
    tier: str
    time: str
    sums: tuple[str, ...]
    stat: str | None = None


Entry = Count | Sum | Tally | Ids | Given | Ratio | Priced | Quantile | Hashes | Trail

RECORD = PARSED & ~CHUNK  # a response row that is a record
FRAGMENT = PARSED & CHUNK  # a streamed fragment: counted apart, never a record


def NON_NEGATIVE(name: str) -> Expr:
    """The column holds a value >= 0 (null: no)."""
    return col(name) >= 0


BOOKS: dict[str, tuple[Entry, ...]] = {
    "responses": (
        Count("records", RECORD, stat="n_done"),
        Ratio("progress", "n_done", "n_prompts"),
        Sum("total_comp", "completion_tokens", RECORD & COUNTED, stat="total_comp"),
        Ratio("avg_comp", "total_comp", "n_counted"),
        Sum("total_prompt", "prompt_tokens", RECORD & NON_NEGATIVE("prompt_tokens"),
            stat="total_prompt"),
        # the usage buckets, each summed over the records that report it (`parse.buckets`)
        *(Sum(b.stat, b.column, RECORD & NON_NEGATIVE(b.column), stat=b.stat, known=b.known)
          for b in BUCKETS),
        Sum("n_samples", "n_samples", RECORD, stat="n_samples"),
        Count("stream_chunks", FRAGMENT, stat="stream_chunks"),
        # by reason, the rows the rules `failed_requests` and `empty_outputs` fail
        Tally("failed_reasons", "request_detail", FAILED, stat="failed_request_reasons",
              label=reason_kind),
        Tally("empty_reasons", "finish_reason", EMPTY_OUTPUT, stat="empty_output_reasons",
              label=finish_or_none),
        Count("counted", RECORD & COUNTED, stat="n_counted"),
        # the records whose prompt count total_prompt sums (v4: a missing one is no zero)
        Count("prompt_counted", RECORD & NON_NEGATIVE("prompt_tokens"), stat="n_prompt_counted"),
        Count("nonzero", RECORD & COUNTED & (COUNT > 0)),
        Tally("formats", "format", RECORD, stat="formats"),
        Tally("finish_reasons", "finish_reason", RECORD, stat="finish_reasons"),
        Tally("finish_reasons", "more_finishes", RECORD, split=FINISH_SEPARATOR),
        Ids("ids", "record_id", RECORD),
        Priced("models", RECORD, by=("model", "format"), tier=TIER_FACT, time="created",
               sums=("records", *USAGE_SUMS, *(b.known for b in BUCKETS if b.by_model)),
               stat="models"),
        # run health (docs/stats-json.md; `ledger.health`): the truncated records are the rows
        # of the rule `truncated_outputs`, counted once
        Quantile("output_tokens", "completion_tokens", RECORD & COUNTED),
        Hashes("answers", "answer_hash", RECORD & ~FAILED),
        Ids("failed_ids", "record_id", RECORD & FAILED),
        Trail(
            "window",
            RECORD,
            flags=(
                ("truncated", TRUNCATED),
                ("empty", EMPTY_OUTPUT),
                ("failed", FAILED),
                ("refusal", REFUSED),
            ),
            value="completion_tokens",
            valid=COUNTED,
            label="finish_reason",
        ),
    ),
    "tokenized": (
        Count("tokenized_records", PARSED, stat="n_tokenized"),
        Sum("total_tokens", "n_tokens", PARSED & HAS_TOKENS, stat="total_tokens"),
        Ratio("avg_tokens", "total_tokens", "n_tokens_counted"),
        Count("tokens_counted", PARSED & HAS_TOKENS, stat="n_tokens_counted"),
        Count("tokens_nonzero", PARSED & HAS_TOKENS & (N_TOKENS > 0)),
        Sum("total_loss_tokens", "loss_sum", PARSED & col("loss_sum").not_null(),
            stat="total_loss_tokens"),
        Ratio("supervised_share", "total_loss_tokens", "total_tokens"),
    ),
    "prompts": (
        Given("prompt_lines"),
        Given("prompts_without_id"),  # non-blank lines with no id under the join key
        Given("prompt_ids", kind="ids"),
        Given("prompt_keys", kind="counter"),  # which key named each prompt's id
    ),
}  # fmt: skip
# `records` and `nonzero` of any role, as the file rules and the aggregate rule read them.
RECORDS = {"responses": "records", "tokenized": "tokenized_records", "prompts": "prompt_lines"}
NONZERO = {"responses": "nonzero", "tokenized": "tokens_nonzero"}


def _all(kind: type) -> list[Any]:
    return [e for entries in BOOKS.values() for e in entries if isinstance(e, kind)]


def _given(kind: str) -> list[Given]:
    return [e for e in _all(Given) if e.kind == kind]


# Every summed key of a tally (counts, sums, known counts, given ones), in books order.
SUM_KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        key
        for e in _all(Count) + _all(Sum) + _given("sum")
        for key in (e.key, getattr(e, "known", None))
        if key is not None
    )
)
COUNTER_KEYS: tuple[str, ...] = tuple(
    dict.fromkeys([*(e.key for e in _all(Tally)), *(e.key for e in _given("counter"))])
)
IDS_KEY = "ids"
GROUP_KEYS: tuple[str, ...] = tuple(dict.fromkeys(e.key for e in _all(Priced)))
GROUP_FIELDS: dict[str, tuple[str, ...]] = {e.key: e.sums for e in _all(Priced)}
GROUP_BY: dict[str, tuple[str, ...]] = {e.key: e.by for e in _all(Priced)}  # a key's columns
# The id lists other than the record ids (`ids`), the fixed-size key lists, the summaries.
LIST_KEYS: tuple[str, ...] = tuple(
    k
    for k in dict.fromkeys([*(e.key for e in _all(Ids)), *(e.key for e in _given("ids"))])
    if k != IDS_KEY
)
HASH_KEYS: tuple[str, ...] = tuple(e.key for e in _all(Hashes))
QUANTILE_KEYS: tuple[str, ...] = tuple(e.key for e in _all(Quantile))


def signature() -> str:
    """A text that changes when an entry of the books changes (kept in state records)."""

    def stable(entry: Entry) -> str:  # a label function by its name, not its address
        label = getattr(entry, "label", None)
        if label is None or isinstance(label, str):
            return repr(entry)
        return repr(replace(entry, label=None)) + label.__qualname__  # type: ignore[arg-type]

    # the price keys' bands and slots decide the groups
    books = {role: [stable(e) for e in entries] for role, entries in BOOKS.items()}
    return repr((books, TIER_STARTS, SLOT_S))


# --- one pass over a table's rows ---------------------------------------------------------------


@dataclass
class Accounted:
    """What one pass over rows gave: the sums, the counters, the ids and the rule failures;
    the other id lists, the key lists, the values to summarise and the trails by key."""

    sums: dict[str, int]
    counters: dict[str, dict[str, int]]
    ids: IdList
    failures: dict[str, RuleTally]
    groups: dict[str, dict[tuple[Any, ...], list[int]]] = field(default_factory=dict)
    lists: dict[str, IdList] = field(default_factory=dict)
    hashes: dict[str, HashList] = field(default_factory=dict)
    values: dict[str, array[int]] = field(default_factory=dict)
    trails: dict[str, Ends] = field(default_factory=dict)


Pass = Callable[[list[tuple[Any, ...]]], Accounted]
Params = tuple[tuple[str, Any], ...]  # the configured values rule conditions read (`param`)
WINDOW = 1000  # records a window holds unless `[health] window` (a parameter) says otherwise


@cache
def account(role: str, params: Params = ()) -> Pass:
    """The compiled pass of `role`'s table: rows (position columns, then facts) → Accounted;
    `params` bind the rule conditions' parameters (`[tokenized] max_seq_len`)."""
    table = Table(role)
    names = TABLES[role].names
    source = Source({name: i for i, name in enumerate(names)}, dict(params))
    writer = _Writer(source, names)
    rules = [r for r in rules_of(table) if r.when is not None]
    entries = [e for e in BOOKS[role] if not isinstance(e, Given | Ratio | Trail)]
    lines = writer.function(rules, entries)
    scope: dict[str, Any] = {**source.constants, **writer.scope}
    exec(codecache.compiled("\n".join(lines), f"<books of {role}>"), scope)
    run: Callable[..., tuple[Any, ...]] = scope["account"]
    trails = trail_readers(role, params)

    def one_pass(rows: list[tuple[Any, ...]]) -> Accounted:
        failures = Failures(table)
        ids = IdList()
        lists = {e.key: IdList() for e in entries if isinstance(e, Ids) and e.key != IDS_KEY}
        hashes = {e.key: HashList() for e in entries if isinstance(e, Hashes)}
        values = {e.key: array("q") for e in entries if isinstance(e, Quantile)}
        pending = {IDS_KEY: ids.sinks(), **{k: v.sinks() for k, v in lists.items()}}
        sinks: dict[str, Any] = {k: (lines, more) for k, (lines, more, _) in pending.items()}
        sinks.update({k: (v.lines.append, v.keys.append) for k, v in hashes.items()})
        sinks.update({k: v.append for k, v in values.items()})
        sums, counters, groups = run(rows, failures.add, names, sinks)
        for _, _, settle in pending.values():
            settle()
        ends = {e.key: read(rows) for e, read in trails}
        return Accounted(
            sums, counters, ids, failures.tallies(), groups, lists, hashes, values, ends
        )

    return one_pass


def trail_readers(
    role: str, params: Params = ()
) -> list[tuple[Trail, Callable[[list[Any]], Ends]]]:
    """Each `Trail` entry of `role` with its reader of a pass's rows (`params`' window)."""
    names = TABLES[role].names
    limit = window_limit(params)
    return [(e, _trail_reader(e, names, limit)) for e in BOOKS[role] if isinstance(e, Trail)]


def window_limit(params: Params = ()) -> int:
    """The records a trail's ends hold: `[health] window`, else `WINDOW`."""
    return int(dict(params).get("window") or WINDOW)


def _trail_reader(entry: Trail, names: tuple[str, ...], limit: int) -> Callable[[list[Any]], Ends]:
    """The first and last `limit` rows `entry.when` holds for, as (flags, value, label),
    read from the ends of a pass's rows (not every row)."""
    when = condition_function(entry.when, names)
    flags = [(1 << i, condition_function(e, names)) for i, (_, e) in enumerate(entry.flags)]
    valid = condition_function(entry.valid, names)
    value, label = names.index(entry.value), names.index(entry.label)

    def compact(row: tuple[Any, ...]) -> tuple[int, int, Any]:
        bits = sum(bit for bit, holds in flags if holds(row))
        return bits, row[value] if valid(row) else -1, row[label]

    def ends(rows: list[Any]) -> Ends:
        head = [compact(r) for r in _first(rows, when, limit)]
        if len(head) < limit:
            return Ends(limit, head)  # every record is in the head
        tail = [compact(r) for r in reversed(_first(reversed(rows), when, limit))]
        return Ends(limit, head, tail)

    return ends


def _first(rows: Iterable[Any], when: Callable[[Any], bool], limit: int) -> list[Any]:
    found = []
    for row in rows:
        if when(row):
            found.append(row)
            if len(found) >= limit:
                break
    return found


class _Writer:
    """Writes the source of one table's pass: verdicts, then each entry, per row."""

    def __init__(self, source: Source, names: tuple[str, ...]) -> None:
        self.source = source
        self.names = names
        self.scope: dict[str, Any] = {}
        self.sums: list[str] = []
        self.counters: list[str] = []
        self.groups: list[str] = []
        self.hoisted: dict[str, str] = {}  # a shared conjunct's repr: its row local

    def function(self, rules: list[Any], entries: list[Any]) -> list[str]:
        """`def account(rows, add, names, sinks)` returning (sums, counters, groups); `sinks`:
        by key, the appends of the values' arrays, and of the id and key lists a pair (lines,
        values): each a C method, so a record's entry calls no Python function."""
        self.sums = list(dict.fromkeys(k for e in entries for k in _keys(e)))
        self.counters = list(dict.fromkeys(e.key for e in entries if isinstance(e, Tally)))
        self.groups = list(dict.fromkeys(e.key for e in entries if isinstance(e, Priced)))
        self.sinks = list(
            dict.fromkeys(e.key for e in entries if isinstance(e, Ids | Hashes | Quantile))
        )
        body = ["def account(rows, add, names, sinks):"]
        paired = {e.key for e in entries if isinstance(e, Ids | Hashes)}
        body += [
            f"    a{i}l, a{i}v = sinks[{key!r}]" if key in paired else f"    a{i} = sinks[{key!r}]"
            for i, key in enumerate(self.sinks)
        ]
        body += [f"    s{i} = 0" for i in range(len(self.sums))]
        body += [f"    c{i} = {{}}" for i in range(len(self.counters))]
        priced = [e for e in entries if isinstance(e, Priced)]
        for i, entry in enumerate(priced):
            body += [f"    g{i} = {{}}", f"    pk{i} = None"]
            body += [f"    b{i}_{j} = 0" for j in range(len(entry.sums))]
        body.append("    for v in rows:")
        # Entries under the same condition share one test a row (in books order within it).
        by_when: dict[str, tuple[Expr, list[str]]] = {}
        for entry in entries:
            if not isinstance(entry, Priced):
                by_when.setdefault(repr(entry.when), (entry.when, []))[1].extend(self.entry(entry))
        whens = [r.when for r in rules] + [e.when for e in priced]
        whens += [when for when, _ in by_when.values()]
        body += ["        " + line for line in self.shared(whens)]
        body.append("        out = []")
        for rule in rules:
            body.append(f"        if {self.test(rule.when)}:")
            body.append(f"            out.append({rule.name!r})")
        body.append("        if out:")
        body.append("            add(v, out, names)")
        # the price keys first: a key's running sums are noted before this row adds to them
        blocks = [(self.parts(e.when), self._priced(e)) for e in priced]
        blocks += [(self.parts(when), lines) for when, lines in by_when.values()]
        body += _nested(blocks, "        ")
        for entry in priced:
            body += ["    k = None", *("    " + line for line in self.flush(entry))]
        sums = ", ".join(f"{key!r}: s{i}" for i, key in enumerate(self.sums))
        counters = ", ".join(f"{key!r}: c{i}" for i, key in enumerate(self.counters))
        groups = ", ".join(f"{key!r}: g{i}" for i, key in enumerate(self.groups))
        body.append(f"    return {{{sums}}}, {{{counters}}}, {{{groups}}}")
        return body

    def shared(self, whens: list[Expr]) -> list[str]:
        """A row's tests of the conjuncts that several conditions share, each made once into
        a local `h<i>` (most entries are `counted & ...`: tested once a row, not twenty
        times). Every condition's source is null-safe alone, so a conjunct may be tested
        before the others of its condition."""
        seen: dict[str, int] = {}
        for when in whens:
            for key in dict.fromkeys(repr(c) for c in _conjuncts(when)):
                seen[key] = seen.get(key, 0) + 1
        lines = []
        self.hoisted = {}
        for when in whens:
            for part in _conjuncts(when):
                key = repr(part)
                if seen[key] > 1 and key not in self.hoisted:
                    self.hoisted[key] = f"h{len(self.hoisted)}"
                    lines.append(f"{self.hoisted[key]} = {self.source.condition(part)}")
        return lines

    def test(self, when: Expr) -> str:
        """The source of a condition, its shared conjuncts read from their locals."""
        return " and ".join(self.parts(when))

    def parts(self, when: Expr) -> list[str]:
        """The sources of a condition's conjuncts, in order, shared ones read from their
        locals."""
        parts = {repr(p): p for p in _conjuncts(when)}
        return [self.hoisted.get(key) or self.source.condition(p) for key, p in parts.items()]

    def entry(self, entry: Any) -> list[str]:
        """The source lines of one entry (not `Priced`), run for each row its condition holds
        for."""
        if isinstance(entry, Count):
            return [f"s{self.sums.index(entry.key)} += 1"]
        value = self.source.value(col(entry.column))
        if isinstance(entry, Sum):
            lines = [f"s{self.sums.index(entry.key)} += {value}"]
            if entry.known is not None:
                lines.append(f"s{self.sums.index(entry.known)} += 1")
            return lines
        if isinstance(entry, Ids | Hashes):
            line, sink = self.source.value(col("line")), f"a{self.sinks.index(entry.key)}"
            return [f"if {value} is not None:", f"    {sink}l({line})", f"    {sink}v({value})"]
        if isinstance(entry, Quantile):
            return [f"a{self.sinks.index(entry.key)}({value})"]
        counter = f"c{self.counters.index(entry.key)}"
        return list(self._tally(entry, value, counter))

    def _priced(self, entry: Priced) -> list[str]:
        """Per row of `entry.when`: its price key; where the key changes, the running sums'
        growth since the key began is added to the key's (`flush`)."""
        self.scope.update(_bisect=bisect_left, _starts=TIER_STARTS)
        _only_rows_of(entry)
        tier = self.source.value(col(entry.tier))
        by = "".join(f"{self.source.value(col(name))}, " for name in entry.by)
        time = self.source.value(col(entry.time))
        first = TIER_STARTS[0]  # most inputs are below every tier: no search for them
        return [
            f"p = {tier}",
            f"t = {time}",
            f"k = ({by}0 if p is None or p <= {first} else _bisect(_starts, p), "
            f"None if t is None else t // {SLOT_S})",
            f"if k != pk{self.groups.index(entry.key)}:",
            *("    " + line for line in self.flush(entry)),
        ]

    def flush(self, entry: Priced) -> list[str]:
        """Add the sums' growth since key `pk` began to its values, and begin key `k`."""
        i = self.groups.index(entry.key)
        sums = [f"s{self.sums.index(key)}" for key in entry.sums]
        return [
            f"if pk{i} is not None:",
            f"    g = g{i}.get(pk{i})",
            "    if g is None:",
            f"        g = g{i}[pk{i}] = [0] * {len(sums)}",
            *(f"    g[{j}] += {s} - b{i}_{j}" for j, s in enumerate(sums)),
            f"pk{i} = k",
            *(f"b{i}_{j} = {s}" for j, s in enumerate(sums)),
        ]

    def _tally(self, entry: Tally, value: str, counter: str) -> list[str]:
        if entry.label is not None:
            name = f"_label{len(self.scope)}"
            self.scope[name] = entry.label
            return [f"k = {name}({value})", f"{counter}[k] = {counter}.get(k, 0) + 1"]
        if entry.split is not None:
            return [
                f"if {value}.__class__ is str:",
                f"    for k in {value}.split({entry.split!r}):",
                f"        {counter}[k] = {counter}.get(k, 0) + 1",
            ]
        return [
            f"k = {value}",
            "if k.__class__ is str:",
            f"    {counter}[k] = {counter}.get(k, 0) + 1",
        ]


def _nested(blocks: list[tuple[list[str], list[str]]], indent: str) -> list[str]:
    """Source running each block's lines where all its conjuncts hold, in order; consecutive
    blocks that begin with the same conjunct test it once, around them (most entries are
    `record & ...`). Conditions have no effects, so this is the same as one test a block."""
    out: list[str] = []
    i = 0
    while i < len(blocks):
        parts, lines = blocks[i]
        if not parts:
            out += [indent + line for line in lines]
            i += 1
            continue
        j = i + 1
        while j < len(blocks) and blocks[j][0][:1] == parts[:1]:
            j += 1
        out.append(f"{indent}if {parts[0] if j - i > 1 else ' and '.join(parts)}:")
        if j - i > 1:
            out += _nested([(p[1:], body) for p, body in blocks[i:j]], indent + "    ")
        else:
            out += [indent + "    " + line for line in lines]
        i = j
    return out


def _conjuncts(expr: Expr) -> list[Expr]:
    """The parts of a condition that must all hold (nested `and`s flattened)."""
    if isinstance(expr, Logic) and expr.op == "and":
        return [c for part in expr.parts for c in _conjuncts(part)]
    return [expr]


def _only_rows_of(entry: Priced) -> None:
    """A price key's sums must grow only on its rows (`when`, or `when & ...`): the growth
    between two of its rows is then theirs."""
    by_key = {e.key: e for e in _all(Count) + _all(Sum)}
    by_known = {e.known: e for e in _all(Sum) if e.known is not None}
    for key in entry.sums:
        found = by_key.get(key) or by_known.get(key)
        when = None if found is None else found.when
        first = when.parts[0] if isinstance(when, Logic) and when.op == "and" else None
        if entry.when is not when and entry.when is not first:
            raise ValueError(f"{entry.key}: sum {key!r} is not restricted to its rows")


def _keys(entry: Any) -> list[str]:
    if isinstance(entry, Count):
        return [entry.key]
    if isinstance(entry, Sum):
        return [entry.key] + ([entry.known] if entry.known else [])
    return []


# --- the same entries over numpy columns ---------------------------------------------------------


def array_sums(role: str, columns: dict[str, tuple[Any, Any]], rows: Any) -> dict[str, int] | None:
    """The sums of `role`'s entries over the selected `rows` of numpy columns (each column as
    (values, present mask), every row parsed); None when an entry is no count or sum, or reads
    a column not given (the caller then takes the row pass)."""
    import numpy as np

    n = len(rows)
    columns = {**columns, "parse_error": (np.zeros(n, object), np.zeros(n, bool))}
    sums: dict[str, int] = {}
    for entry in BOOKS[role]:
        if isinstance(entry, Ratio | Given):
            continue
        if not isinstance(entry, Count | Sum) or not _readable(entry, columns):
            return None
        where = rows & evaluate_arrays(entry.when, columns, n)
        if isinstance(entry, Count):
            sums[entry.key] = int(where.sum())
        else:
            sums[entry.key] = int(columns[entry.column][0][where].sum())
            if entry.known is not None:
                sums[entry.known] = int(where.sum())
    return sums


def _readable(entry: Count | Sum, columns: dict[str, Any]) -> bool:
    needed = entry.when.columns() | ({entry.column} if isinstance(entry, Sum) else set())
    return needed <= set(columns)


def failing_rows(
    role: str, columns: dict[str, tuple[Any, Any]], rows: int, params: Params = ()
) -> Any | None:
    """Rows failing some rule of `role`, by the catalogue's conditions over numpy columns
    (`params` bound); None when a rule reads a column not given."""
    import numpy as np

    columns = {**columns, "parse_error": (np.zeros(rows, object), np.zeros(rows, bool))}
    failing = np.zeros(rows, bool)
    for rule in rules_of(Table(role)):
        if rule.when is None:
            continue
        if not rule.when.columns() <= set(columns):
            return None
        failing |= evaluate_arrays(rule.when, columns, rows, dict(params))
    return failing
