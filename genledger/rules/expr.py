"""Rule conditions as small column expressions, compiled once to a row function and to pandas.

A rule is stated once (`genledger.rules.catalogue`) with these expressions; `row_function`
turns a set of them into one Python function over a row tuple (the refresh's evaluation),
`evaluate` into vectorised pandas columns (the pandera models' parser). Both follow one null
rule, so they agree on every table (a hypothesis test checks it):

- a column read as a condition is true only when it holds True (null is false);
- a comparison with a null operand is false; arithmetic with a null operand is null;
- `&`, `|` and `~` work on conditions, which are never null.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from genledger import codecache

if TYPE_CHECKING:
    import pandas as pd

_OPS = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


class Expr:
    """A value or a condition over one row's columns."""

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return Compare("eq", self, lit(other))

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return Compare("ne", self, lit(other))

    def __gt__(self, other: object) -> Expr:
        return Compare("gt", self, lit(other))

    def __ge__(self, other: object) -> Expr:
        return Compare("ge", self, lit(other))

    def __lt__(self, other: object) -> Expr:
        return Compare("lt", self, lit(other))

    def __le__(self, other: object) -> Expr:
        return Compare("le", self, lit(other))

    def __sub__(self, other: object) -> Expr:
        return Diff(self, lit(other))

    def __and__(self, other: Expr) -> Expr:
        return Logic("and", (self, other))

    def __or__(self, other: Expr) -> Expr:
        return Logic("or", (self, other))

    def __invert__(self) -> Expr:
        return Not(self)

    __hash__ = object.__hash__

    def is_null(self) -> Expr:
        """True where the value is null."""
        return IsNull(self)

    def not_null(self) -> Expr:
        """True where the value is present."""
        return Not(IsNull(self))

    def abs(self) -> Expr:
        """The absolute value (null stays null)."""
        return Abs(self)

    def isin(self, values: tuple[str, ...], split: str | None = None) -> Expr:
        """True where the value is one of `values` (null: false); with `split`, where some
        part of the value cut at `split` is."""
        return IsIn(self, tuple(values), split)

    def columns(self) -> set[str]:
        """The columns this expression reads."""
        return set().union(*(child.columns() for child in self.children()))

    def children(self) -> Sequence[Expr]:
        """The sub-expressions."""
        return ()


def lit(value: object) -> Expr:
    """`value` as an expression (expressions pass through)."""
    return value if isinstance(value, Expr) else Lit(value)


def col(name: str) -> Expr:
    """The column `name`."""
    return Col(name)


def param(name: str) -> Expr:
    """A value the configuration sets for a whole refresh (`[tokenized] max_seq_len`), null
    when unset: bound when a condition is compiled (`params=`), read like a column."""
    return Param(name)


@dataclass(frozen=True, eq=False)
class Col(Expr):
    name: str

    def columns(self) -> set[str]:
        return {self.name}


@dataclass(frozen=True, eq=False)
class Param(Expr):
    name: str


@dataclass(frozen=True, eq=False)
class Null(Expr):
    """A parameter that is not set: a comparison with it is false, like with a null column."""


@dataclass(frozen=True, eq=False)
class Lit(Expr):
    value: Any


@dataclass(frozen=True, eq=False)
class IsIn(Expr):
    inner: Expr
    values: tuple[str, ...]
    split: str | None = None

    def children(self) -> Sequence[Expr]:
        return (self.inner,)


@dataclass(frozen=True, eq=False)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr

    def children(self) -> Sequence[Expr]:
        return (self.left, self.right)


@dataclass(frozen=True, eq=False)
class Diff(Expr):
    left: Expr
    right: Expr

    def children(self) -> Sequence[Expr]:
        return (self.left, self.right)


@dataclass(frozen=True, eq=False)
class Abs(Expr):
    inner: Expr

    def children(self) -> Sequence[Expr]:
        return (self.inner,)


@dataclass(frozen=True, eq=False)
class IsNull(Expr):
    inner: Expr

    def children(self) -> Sequence[Expr]:
        return (self.inner,)


@dataclass(frozen=True, eq=False)
class Not(Expr):
    inner: Expr

    def children(self) -> Sequence[Expr]:
        return (self.inner,)


@dataclass(frozen=True, eq=False)
class Logic(Expr):
    op: str
    parts: tuple[Expr, ...]

    def children(self) -> Sequence[Expr]:
        return self.parts


# -- row evaluation: Python source over a tuple `v`, compiled once ---------------------------


class Source:
    """Writes an expression as Python source; values are (source, may_be_null)."""

    def __init__(self, positions: dict[str, int], params: dict[str, Any] | None = None) -> None:
        self.positions = positions
        self.params = params or {}
        self.constants: dict[str, Any] = {}

    def condition(self, expr: Expr) -> str:
        """Source of a never-null bool."""
        if isinstance(expr, Logic):
            joiner = f" {expr.op} "
            return "(" + joiner.join(self.condition(p) for p in expr.parts) + ")"
        if isinstance(expr, Not):
            return f"(not {self.condition(expr.inner)})"
        if isinstance(expr, IsNull):
            return f"({self.value(expr.inner)} is None)"
        if isinstance(expr, Compare):
            return self._compare(expr)
        if isinstance(expr, IsIn):
            return self._isin(expr)
        if isinstance(expr, Col):
            return f"({self.value(expr)} is True)"
        raise TypeError(f"{expr!r} is not a condition")

    def _isin(self, expr: IsIn) -> str:
        value, name = self.value(expr.inner), f"_k{len(self.constants)}"
        self.constants[name] = frozenset(expr.values)
        if expr.split is None:
            return f"({value}.__class__ is str and {value} in {name})"
        return (
            f"({value}.__class__ is str and not {name}.isdisjoint({value}.split({expr.split!r})))"
        )

    def _compare(self, expr: Compare) -> str:
        left, right = self.value(expr.left), self.value(expr.right)
        guards = [f"{side} is not None" for side in (left, right) if not _constant(side)]
        return "(" + " and ".join([*guards, f"{left} {_OPS[expr.op]} {right}"]) + ")"

    def value(self, expr: Expr) -> str:
        """Source of a value that may be None."""
        if isinstance(expr, Col):
            return f"v[{self.positions[expr.name]}]"
        if isinstance(expr, Null):
            return "None"
        if isinstance(expr, Param):
            name = f"_p_{expr.name}"
            self.constants[name] = self.params.get(expr.name)
            return name
        if isinstance(expr, Lit):
            if expr.value is None:
                raise TypeError("compare with None through is_null(), not ==")
            name = f"_k{len(self.constants)}"
            self.constants[name] = expr.value
            return name
        if isinstance(expr, Diff):
            left, right = self.value(expr.left), self.value(expr.right)
            return f"(None if {left} is None or {right} is None else {left} - {right})"
        if isinstance(expr, Abs):
            inner = self.value(expr.inner)
            return f"(None if {inner} is None else abs({inner}))"
        raise TypeError(f"{expr!r} is not a value")


def bind(expr: Expr, params: dict[str, Any] | None) -> Expr:
    """`expr` with each parameter replaced by its value (`Null` when unset)."""
    if isinstance(expr, Param):
        value = (params or {}).get(expr.name)
        return Null() if value is None else Lit(value)
    if not expr.children():
        return expr
    changes: dict[str, Any] = {}
    for item in fields(expr):  # type: ignore[arg-type]
        value = getattr(expr, item.name)
        if isinstance(value, Expr):
            changes[item.name] = bind(value, params)
        elif isinstance(value, tuple) and value and isinstance(value[0], Expr):
            changes[item.name] = tuple(bind(v, params) for v in value)
    return replace(expr, **changes)  # type: ignore[type-var]


def _constant(source: str) -> bool:
    """A literal (never null); a parameter may be null and is guarded like a column."""
    return source.startswith("_k")


RowFunction = Callable[[tuple[Any, ...]], list[str]]


def row_function(
    rules: Sequence[tuple[str, Expr]], columns: Sequence[str], params: dict[str, Any] | None = None
) -> RowFunction:
    """One function: a row tuple (in `columns` order) → the names of the rules it fails."""
    source = Source({name: i for i, name in enumerate(columns)}, params)
    body = ["def failed(v):", "    out = []"]
    for name, expr in rules:
        body.append(f"    if {source.condition(expr)}:")
        body.append(f"        out.append({name!r})")
    body.append("    return out")
    namespace: dict[str, Any] = dict(source.constants)
    exec(codecache.compiled("\n".join(body), f"<rules over {len(columns)} columns>"), namespace)
    failed: RowFunction = namespace["failed"]
    return failed


def condition_function(
    expr: Expr, columns: Sequence[str], params: dict[str, Any] | None = None
) -> Callable[[tuple[Any, ...]], bool]:
    """One condition as a function of a row tuple (in `columns` order)."""
    source = Source({name: i for i, name in enumerate(columns)}, params)
    namespace: dict[str, Any] = {}
    text = f"lambda v: {source.condition(expr)}"
    namespace.update(source.constants)
    function: Callable[[tuple[Any, ...]], bool] = eval(
        compile(text, "<condition>", "eval"), namespace
    )
    return function


# -- frame evaluation: the same expressions over pandas columns -------------------------------


def evaluate(expr: Expr, frame: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.Series:
    """`expr` over every row of `frame`: a plain bool column for conditions."""
    import pandas as pd

    result = _frame_value(bind(expr, params), frame)
    return pd.Series(result, index=frame.index).astype(bool)


def _frame_value(expr: Expr, frame: pd.DataFrame) -> Any:
    import pandas as pd

    if isinstance(expr, Col):
        column = frame[expr.name]
        return column
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, Null):
        return pd.Series([pd.NA] * len(frame), index=frame.index, dtype=object)
    if isinstance(expr, IsIn):
        return _frame_isin(expr, frame)
    if isinstance(expr, Logic):
        parts = [_condition(p, frame) for p in expr.parts]
        result = parts[0]
        for part in parts[1:]:
            result = (result & part) if expr.op == "and" else (result | part)
        return result
    if isinstance(expr, Not):
        return ~_condition(expr.inner, frame)
    if isinstance(expr, IsNull):
        return pd.Series(_frame_value(expr.inner, frame), index=frame.index).isna()
    if isinstance(expr, Compare):
        return _frame_compare(expr, frame)
    if isinstance(expr, Diff):
        # Python ints (object dtype), as the row function computes: int64 would wrap around.
        left = pd.Series(_frame_value(expr.left, frame), index=frame.index).astype(object)
        return left - _exact(_frame_value(expr.right, frame))
    if isinstance(expr, Abs):
        inner = pd.Series(_frame_value(expr.inner, frame), index=frame.index).astype(object)
        return inner.map(abs)
    raise TypeError(f"{expr!r} cannot be evaluated")


def _frame_isin(expr: IsIn, frame: pd.DataFrame) -> pd.Series:
    import pandas as pd

    values = pd.Series(_frame_value(expr.inner, frame), index=frame.index)
    wanted = frozenset(expr.values)
    return values.map(lambda v: _in(v, wanted, expr.split)).astype(bool)


def _in(value: Any, wanted: frozenset[str], split: str | None) -> bool:
    if not isinstance(value, str):
        return False
    return value in wanted if split is None else not wanted.isdisjoint(value.split(split))


def _exact(value: Any) -> Any:
    """A column as Python ints (object dtype); a literal as it is."""
    import pandas as pd

    return value.astype(object) if isinstance(value, pd.Series) else value


def _condition(expr: Expr, frame: pd.DataFrame) -> pd.Series:
    """A never-null bool Series: nulls (and a non-True column value) are False."""
    import numpy as np
    import pandas as pd

    series = pd.Series(_frame_value(expr, frame), index=frame.index)
    if isinstance(expr, Col) and series.dtype != bool:
        # The row rule is `value is True`: only a real True counts, never 1 or "yes".
        return series.map(lambda x: x is True or x is np.True_).astype(bool)
    return series.fillna(False).astype(bool)


def _frame_compare(expr: Compare, frame: pd.DataFrame) -> pd.Series:
    import operator

    import numpy as np
    import pandas as pd

    left = pd.Series(_frame_value(expr.left, frame), index=frame.index)
    right = _frame_value(expr.right, frame)
    present = left.notna()
    if isinstance(right, pd.Series):
        present &= right.notna()
        right = right[present]
    mask = present.to_numpy(dtype=bool)
    result = np.zeros(len(mask), dtype=bool)
    if mask.any():  # only rows where both sides exist: a comparison with a null is false
        result[mask] = np.asarray(getattr(operator, expr.op)(left[present], right), dtype=bool)
    return pd.Series(result, index=frame.index)


# -- array evaluation: the same expressions over numpy columns (bulk counting) ---------------


def evaluate_arrays(
    expr: Expr,
    columns: dict[str, tuple[Any, Any]],
    rows: int,
    params: dict[str, Any] | None = None,
) -> Any:
    """`expr` as a condition over numpy columns, each (values, present mask): a bool array.
    Follows the same null rule as the row and frame evaluations."""
    return _array_condition(bind(expr, params), columns, rows)


def _array_condition(expr: Expr, columns: dict[str, tuple[Any, Any]], rows: int) -> Any:
    import numpy as np

    if isinstance(expr, Logic):
        parts = [_array_condition(p, columns, rows) for p in expr.parts]
        combine = np.logical_and if expr.op == "and" else np.logical_or
        return combine.reduce(parts)
    if isinstance(expr, Not):
        return ~_array_condition(expr.inner, columns, rows)
    if isinstance(expr, IsNull):
        return ~_array_value(expr.inner, columns, rows)[1]
    if isinstance(expr, Compare):
        import operator

        left, left_ok = _array_value(expr.left, columns, rows)
        right, right_ok = _array_value(expr.right, columns, rows)
        compared = getattr(operator, expr.op)(left, right)
        return left_ok & right_ok & np.asarray(compared, dtype=bool)
    if isinstance(expr, IsIn):
        values, present = _array_value(expr.inner, columns, rows)
        wanted = frozenset(expr.values)
        return present & _isin_array(np.asarray(values, dtype=object).tolist(), wanted, expr.split)
    if isinstance(expr, Col):
        values, present = _array_value(expr, columns, rows)
        return present & (values == True)  # noqa: E712 - only a real True counts
    raise TypeError(f"{expr!r} is not a condition")


def _isin_array(values: list[Any], wanted: frozenset[str], split: str | None) -> Any:
    """`_in` of each value as a bool array, decided once a distinct value (a text column
    holds a few texts over many rows); one by one where a value is unhashable."""
    import numpy as np

    try:
        verdicts = {v: _in(v, wanted, split) for v in dict.fromkeys(values)}
    except TypeError:
        return np.asarray([_in(v, wanted, split) for v in values], dtype=bool)
    return np.fromiter(map(verdicts.__getitem__, values), bool, len(values))


def _array_value(expr: Expr, columns: dict[str, tuple[Any, Any]], rows: int) -> tuple[Any, Any]:
    import numpy as np

    if isinstance(expr, Col):
        return columns[expr.name]
    if isinstance(expr, Null):
        return np.zeros(rows, np.int64), np.zeros(rows, bool)
    if isinstance(expr, Lit):
        if expr.value is None:
            raise TypeError("compare with None through is_null(), not ==")
        return expr.value, np.ones(rows, bool)
    if isinstance(expr, Diff):
        left, left_ok = _array_value(expr.left, columns, rows)
        right, right_ok = _array_value(expr.right, columns, rows)
        # Python ints (object arrays), as the row function computes: int64 would wrap around.
        return np.asarray(left, dtype=object) - np.asarray(right, dtype=object), left_ok & right_ok
    if isinstance(expr, Abs):
        inner, ok = _array_value(expr.inner, columns, rows)
        return np.abs(inner), ok
    raise TypeError(f"{expr!r} is not a value")
