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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


@dataclass(frozen=True, eq=False)
class Col(Expr):
    name: str

    def columns(self) -> set[str]:
        return {self.name}


@dataclass(frozen=True, eq=False)
class Lit(Expr):
    value: Any


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


class _Source:
    """Writes an expression as Python source; values are (source, may_be_null)."""

    def __init__(self, positions: dict[str, int]) -> None:
        self.positions = positions
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
        if isinstance(expr, Col):
            return f"({self.value(expr)} is True)"
        raise TypeError(f"{expr!r} is not a condition")

    def _compare(self, expr: Compare) -> str:
        left, right = self.value(expr.left), self.value(expr.right)
        guards = [f"{side} is not None" for side in (left, right) if not side.startswith("_k")]
        return "(" + " and ".join([*guards, f"{left} {_OPS[expr.op]} {right}"]) + ")"

    def value(self, expr: Expr) -> str:
        """Source of a value that may be None."""
        if isinstance(expr, Col):
            return f"v[{self.positions[expr.name]}]"
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


RowFunction = Callable[[tuple[Any, ...]], list[str]]


def row_function(rules: Sequence[tuple[str, Expr]], columns: Sequence[str]) -> RowFunction:
    """One function: a row tuple (in `columns` order) → the names of the rules it fails."""
    source = _Source({name: i for i, name in enumerate(columns)})
    body = ["def failed(v):", "    out = []"]
    for name, expr in rules:
        body.append(f"    if {source.condition(expr)}:")
        body.append(f"        out.append({name!r})")
    body.append("    return out")
    namespace: dict[str, Any] = dict(source.constants)
    exec(compile("\n".join(body), f"<rules over {len(columns)} columns>", "exec"), namespace)
    failed: RowFunction = namespace["failed"]
    return failed


def condition_function(expr: Expr, columns: Sequence[str]) -> Callable[[tuple[Any, ...]], bool]:
    """One condition as a function of a row tuple (in `columns` order)."""
    source = _Source({name: i for i, name in enumerate(columns)})
    namespace: dict[str, Any] = {}
    text = f"lambda v: {source.condition(expr)}"
    namespace.update(source.constants)
    function: Callable[[tuple[Any, ...]], bool] = eval(
        compile(text, "<condition>", "eval"), namespace
    )
    return function


# -- frame evaluation: the same expressions over pandas columns -------------------------------


def evaluate(expr: Expr, frame: pd.DataFrame) -> pd.Series:
    """`expr` over every row of `frame`: a plain bool column for conditions."""
    import pandas as pd

    result = _frame_value(expr, frame)
    return pd.Series(result, index=frame.index).astype(bool)


def _frame_value(expr: Expr, frame: pd.DataFrame) -> Any:
    import pandas as pd

    if isinstance(expr, Col):
        column = frame[expr.name]
        return column
    if isinstance(expr, Lit):
        return expr.value
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
        return _frame_value(expr.left, frame) - _frame_value(expr.right, frame)
    if isinstance(expr, Abs):
        return _frame_value(expr.inner, frame).abs()
    raise TypeError(f"{expr!r} cannot be evaluated")


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

    import pandas as pd

    left = pd.Series(_frame_value(expr.left, frame), index=frame.index)
    right = _frame_value(expr.right, frame)
    present = left.notna()
    if isinstance(right, pd.Series):
        present &= right.notna()
    compared = getattr(operator, expr.op)(left, right)
    return (present & pd.Series(compared, index=frame.index).fillna(False).astype(bool)).astype(
        bool
    )
