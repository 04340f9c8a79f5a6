"""The facts schema: every column of the token tables, declared once.

A record's facts are one row of its file's token table. Each column is stated here with its
type, whether it may be null, its value when nothing says otherwise, and whether a format
declaration names its path (`genledger.parse.declarations`: a *declared count* is read from
the path a declaration gives under the column's own name). Everything else is derived from
these lists: the facts tuple types, column positions, the pandas dtypes, the empty and
stream-fragment rows, the positional constructors of the typed decoders (`genledger.fast`),
the pandera schemas (`genledger.rules.models`) and, through the books
(`genledger.ledger.books`), what is summed into the stats JSON.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from genledger import codecache
from genledger.parse.buckets import DECLARED, RESTS

Facts = tuple[Any, ...]  # one record's facts, in its table's column order

# How a declared column reads its value, by kind (a column may say otherwise: `Column.reads`).
READS = {"count": "count", "str": "text"}
VALUE_READS = ("count", "text", "time")

# kind -> (pandas dtype, Python type): `count` is a nullable 64-bit integer
KINDS: dict[str, tuple[str, type]] = {
    "str": ("object", str),
    "int": ("int64", int),
    "count": ("Int64", int),
    "bool": ("bool", bool),
}


@dataclass(frozen=True)
class Column:
    """One column: its name, kind, null rule, default value and meaning."""

    name: str
    kind: str
    doc: str
    nullable: bool = True
    default: Any = None
    declared: bool = False  # a format declaration gives its path (under this name)
    checks: Mapping[str, Any] = field(default_factory=dict)  # pandera checks: ge, isin
    # how a declared column reads the value its path reaches: "count" (a JSON integer in
    # int64 range), "text" (a non-empty string) or "time" (POSIX seconds, from epoch seconds
    # or milliseconds, or an ISO-8601 text); "" is the kind's own (`READS`)
    reads: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind!r}")
        if self.default is None and not self.nullable:
            raise ValueError(f"column {self.name}: a non-null column needs a default")
        if self.declared and self.value_read not in VALUE_READS:
            raise ValueError(f"column {self.name}: reads {self.value_read!r}: not a way to read")

    @property
    def dtype(self) -> str:
        """The pandas dtype of the column."""
        return KINDS[self.kind][0]

    @property
    def value_read(self) -> str:
        """How a declaration's value of this column is read (`reads`, else by kind)."""
        return self.reads or READS.get(self.kind, "")


def _count(name: str, doc: str, declared: bool = False, **checks: Any) -> Column:
    return Column(name, "count", doc, declared=declared, checks=checks)


def _text(name: str, doc: str, **checks: Any) -> Column:
    return Column(name, "str", doc, checks=checks)


def _flag(name: str, doc: str) -> Column:
    return Column(name, "bool", doc, nullable=False, default=False)


COUNT_TYPES = ("int", "bigint", "bool", "float", "string", "array", "object")

# Where a row comes from; every table's rows start with these.
POSITION: tuple[Column, ...] = (
    Column("file", "str", "the file's path in its dataset folder", nullable=False, default=""),
    Column("line", "int", "1-based line number (a Parquet row's number)", False, 0,
           checks={"ge": 1}),
    Column("offset", "int", "byte offset of the line (a Parquet row's index)", False, 0,
           checks={"ge": 0}),
    Column("item", "int", "the record's index in an array line", False, 0, checks={"ge": 0}),
    _text("parse_error", "why the line is not a record (null: it is one)"),
)  # fmt: skip

RESPONSE_FACTS: tuple[Column, ...] = (
    _text("record_id", "the format's id, else custom_id, id, meta_info.id"),
    _text("format", "the declaration that matched (null: none did)"),
    _text("count_type", "JSON type of the completion count found (null: none)",
          isin=COUNT_TYPES),
    _count("completion_tokens", "every generated or billed output token (output_visible + "
           "output_reasoning), when the count is a JSON int in int64 range", declared=True),
    _text("count_raw", "a short repr of a count that is no int, for examples"),
    _count("prompt_tokens", "every input token (the input buckets), where reported",
           declared=True),
    *(_count(b.column, f"bucket {b.name}: {b.meaning}", declared=True) for b in DECLARED),
    _count("total_tokens", "the record's own total of input and output tokens, where reported "
           "(the audit reads it)", declared=True),
    *(_count(b.column, f"bucket {b.name}: {b.meaning}") for b in RESTS),
    _text("usage_detail", "how the record's own numbers contradict each other (null: they "
          "agree)"),
    Column("n_samples", "int", "completions in the record (0: a fragment or a failed request)",
           nullable=False, default=0, checks={"ge": 0}),
    _text("finish_reason", "the record's (first sample's) finish reason"),
    _text("more_finishes", "the later samples' finish reasons, newline-joined"),
    _count("output_len", "len(output_ids) when it is a list", ge=0),
    _flag("failed_request", "the request failed (batch error, abort, blocked prompt...)"),
    _text("request_detail", "why the request failed"),
    _flag("think_leak", "a message's content holds </think> or <think> with no reasoning field"),
    _flag("empty_output", "the record has an answer place and nothing visible in it"),
    _flag("stream_chunk", "a streamed fragment: not a record"),
    _text("missing_detail", "with no count: what was looked for, which keys were seen"),
    Column("model", "str", "the model as the record names it (cut to 100 characters)",
           declared=True),
    Column("created", "count", "when the record was made, POSIX seconds (where it says)",
           declared=True, reads="time"),
    _count("answer_hash", "the visible answer's key (genledger.parse.answer); null: no answer"),
)  # fmt: skip

TOKENIZED_FACTS: tuple[Column, ...] = (
    _count("n_tokens", "len(input_ids); null when absent or not a list", ge=0),
    _count("loss_len", "len(loss_mask); null when absent or not a list", ge=0),
    _count("loss_sum", "trainable tokens = sum(loss_mask); null beyond 64 bits"),
)


_named_tuple: Any = namedtuple  # called with run-time names, which type checkers cannot follow


class FactTable:
    """One table's facts: the columns and everything derived from them."""

    def __init__(self, name: str, facts: tuple[Column, ...]) -> None:
        self.name = name
        self.facts = facts
        self.columns = POSITION + facts  # a row of the table: position, then facts
        self.fields = tuple(c.name for c in facts)
        self.names = tuple(c.name for c in self.columns)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"table {name}: a column is declared twice")
        # a namedtuple class made from the columns (at run time: typed Any)
        self.facts_type: Any = _named_tuple(f"{name.title()}Facts", self.fields)
        self.empty: Any = self.facts_type._make(c.default for c in facts)
        self.declared = tuple(c.name for c in facts if c.declared)
        self.by_name = {c.name: c for c in self.columns}

    def position(self, name: str) -> int:
        """Where column `name` sits in a row of the table (position columns first)."""
        return self.names.index(name)

    def fact(self, name: str) -> int:
        """Where fact `name` sits in a facts tuple."""
        return self.fields.index(name)

    def make(self, **values: Any) -> Facts:
        """A facts tuple from keyword values; unnamed columns take their defaults."""
        unknown = set(values) - set(self.fields)
        if unknown:
            raise TypeError(f"{self.name}: no fact named {sorted(unknown)[0]!r}")
        return self.empty._replace(**values)  # type: ignore[no-any-return]

    def positional(self, *names: str, **constants: Any) -> Callable[..., Facts]:
        """A constructor taking the facts `names` positionally, in that order, with the
        `constants` fixed and every other fact at its default. A name that is no fact, or
        one given twice, fails here (at import, where the typed decoders call this), not in
        a test; the function is compiled once and costs a plain call a record."""
        given = [*names, *constants]
        unknown = [n for n in given if n not in self.fields]
        if unknown:
            raise TypeError(f"{self.name}: no fact named {unknown[0]!r}")
        if len(set(given)) != len(given):
            raise TypeError(f"{self.name}: a fact is given twice in {given}")
        scope: dict[str, Any] = {"_new": tuple.__new__, "_cls": self.facts_type}
        items = []
        for column in self.facts:
            if column.name in names:
                items.append(f"a{names.index(column.name)}")
            else:
                key = f"k_{column.name}"
                scope[key] = constants.get(column.name, column.default)
                items.append(key)
        args = ", ".join(f"a{i}" for i in range(len(names)))
        source = f"def make({args}):\n    return _new(_cls, ({', '.join(items)},))\n"
        exec(codecache.compiled(source, f"<{self.name} facts of {len(names)}>"), scope)
        function: Callable[..., Facts] = scope["make"]
        function.states = tuple(given)  # type: ignore[attr-defined]
        return function


def states_of(maker: Callable[..., Facts]) -> tuple[str, ...]:
    """The facts a positional constructor sets (the rest take their defaults)."""
    found: tuple[str, ...] = getattr(maker, "states", ())
    return found


RESPONSES = FactTable("responses", RESPONSE_FACTS)
TOKENIZED = FactTable("tokenized", TOKENIZED_FACTS)
TABLES: dict[str, FactTable] = {"responses": RESPONSES, "tokenized": TOKENIZED}

# A streamed chunk without usage: a piece of a request, not a record.
FRAGMENT: Facts = RESPONSES.make(stream_chunk=True)


def signature() -> str:
    """A text that changes when any column of any table changes (kept in state records)."""
    return repr([(t.name, [(c.name, c.kind, c.default, c.declared, c.value_read)
                            for c in t.columns])
                 for t in TABLES.values()])  # fmt: skip
