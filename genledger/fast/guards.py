"""What a typed shape does not state takes the general path.

A typed shape (`genledger.fast.shapes`, `.apishapes`) writes down the facts it was written for.
When the facts schema gains a declared count (`genledger.parse.schema`) and a format's
declaration gives its path, a shape of that format may decode records that carry it without
stating it. Each shape says which formats it reads and from where (`FORMATS`: format name, the
path of the record it reads them in) and which facts it states (`STATES`); from the
declarations, a guard is worked out at import: does this decoded record reach a value on a path
of a count the shape does not state? Then the line takes the slower paths, which read every
declared count. So a new count is correct at once everywhere; stating it in the shape is a
speed change only.

The guard walks the struct types msgspec decoded (`msgspec.inspect`): a key the shape has no
field for can never be present (an unknown key fails the decode), so most new counts cost the
common records nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from genledger.parse.declarations import BUILT_IN, Declaration
from genledger.parse.paths import parse_path

SCALARS = (
    msgspec.inspect.IntType, msgspec.inspect.FloatType, msgspec.inspect.StrType,
    msgspec.inspect.BoolType, msgspec.inspect.LiteralType,
)  # fmt: skip
Chain = tuple[tuple[str, bool], ...]  # (attribute, visit a list's elements) per step
Guard = Callable[[Any], bool]


def _members(kind: Any) -> list[Any]:
    """The types a field may hold, null left out."""
    if isinstance(kind, msgspec.inspect.UnionType):
        return [t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType)]
    return [] if isinstance(kind, msgspec.inspect.NoneType) else [kind]


def _chains(kind: Any, steps: tuple[tuple[str, bool], ...], done: Chain = ()) -> list[Chain]:
    """Attribute chains of a struct type by which `steps` (JSON keys) can reach a value; a
    step into a value the shape keeps raw ends the chain there (present means: may reach)."""
    if not steps:
        return [done]
    key, each = steps[0]
    found: list[Chain] = []
    for member in _members(kind):
        if isinstance(member, msgspec.inspect.StructType):
            field = next((f for f in member.fields if f.encode_name == key), None)
            if field is None:
                continue  # no such key: the decode would have failed on it
            inner = _members(field.type)
            if each:
                lists = [t for t in inner if isinstance(t, msgspec.inspect.ListType)]
                for listed in lists:
                    found += _chains(listed.item_type, steps[1:], (*done, (field.name, True)))
            else:
                for value in inner:
                    found += _chains(value, steps[1:], (*done, (field.name, False)))
        elif not isinstance(member, SCALARS | msgspec.inspect.ListType):
            found.append(done)  # raw or free-form: the value may hold anything
    return list(dict.fromkeys(found))


def _reaches(value: Any, chain: Chain) -> bool:
    """Whether `chain` reaches a non-null value from a decoded struct."""
    level = [value]
    for attr, each in chain:
        following: list[Any] = []
        for node in level:
            found = getattr(node, attr, None)
            if found is None or (isinstance(found, msgspec.Raw) and not found):
                continue
            if each:
                following.extend(v for v in found if v is not None)
            else:
                following.append(found)
        if not following:
            return False
        level = following
    return True


def unstated_guard(
    shape: type,
    states: tuple[str, ...],
    formats: tuple[tuple[str, str], ...],
    info: Any = None,
) -> Guard | None:
    """A guard for `shape`: True when a decoded record reaches a value on a path of a declared
    count it does not state, under one of its formats; None when no record ever can. `info`:
    the shape's `msgspec.inspect` type when the caller has it already."""
    info = msgspec.inspect.type_info(shape) if info is None else info
    chains: list[Chain] = []
    for name, root in formats:
        steps = parse_path(root).steps if root else ()
        for declaration in _declarations(name):
            for column, field in declaration.counts:
                if column in states:
                    continue
                for path in field.paths:
                    chains += _chains(info, steps + path.steps)
    if not chains:
        return None
    found = tuple(dict.fromkeys(chains))
    return lambda value: any(_reaches(value, chain) for chain in found)


def _declarations(name: str) -> list[Declaration]:
    return [d for d in BUILT_IN if d.name == name]
