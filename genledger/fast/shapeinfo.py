"""A typed shape's `msgspec.inspect` type, read from its classes' own annotations.

`msgspec.inspect.type_info` evaluates every class's annotations through `typing` each time it
is asked (~0.3-0.6 ms a shape, 2-8 ms for the shapes a small refresh meets), though the shapes
(`genledger.fast.shapes`, `.apishapes`) hold no string annotation: their annotations are the
types already. `type_info` here builds the same tree from them, for the kinds of type the
shapes use (structs, unions, lists, dicts, literals, `Annotated` bounds, scalars, `Raw`,
`Any`); anything else (a string annotation, a generic struct, schema metadata) is left to
msgspec. Tested equal to `msgspec.inspect.type_info` on every shape.
"""

from __future__ import annotations

import inspect
import types
from typing import Annotated, Any, Literal, Union, get_origin

import msgspec
import msgspec.inspect as mi

CONSTRAINTS = ("ge", "gt", "le", "lt", "multiple_of", "pattern", "min_length", "max_length")
_UNSET = type(msgspec.UNSET)


class _Other(Exception):
    """A type this module does not translate: msgspec's own inspection reads it."""


def type_info(shape: type[Any]) -> mi.Type:
    """`msgspec.inspect.type_info(shape)`, from the classes' annotations when it can."""
    try:
        return _Translator().translate(shape)
    except _Other:
        return by_msgspec(shape)


by_msgspec = mi.type_info  # the definition, and what reads the types translated not here


class _Translator:
    """Translations of classes, each made once a process (`done`: the shapes share many of
    their structs); a struct's tree is read, never changed."""

    done: dict[type[Any], mi.Type] = {}

    def __init__(self) -> None:
        self.inside: set[type[Any]] = set()  # the structs being translated

    def translate(self, typ: Any) -> mi.Type:
        """The inspect type of `typ` (an annotation)."""
        if not isinstance(typ, type):
            # an alias is not kept: `A | B` equals `B | A`, and msgspec keeps each one's order
            return self._translated(typ)
        found = self.done.get(typ)
        if found is None:
            found = self.done[typ] = self._translated(typ)
        return found

    def _translated(self, typ: Any) -> mi.Type:
        constraints: dict[str, Any] = {}
        layers: list[Any] = []
        while get_origin(typ) is Annotated:
            # outermost first, later metadata wins: inner layers go in front
            layers[:0] = [m for m in typ.__metadata__ if type(m) is msgspec.Meta]
            typ = typ.__origin__
        for meta in layers:
            if meta.title or meta.description or meta.examples or meta.extra_json_schema:
                raise _Other  # msgspec wraps such a type in `Metadata`
            if meta.extra:
                raise _Other
            constraints.update({k: v for k in CONSTRAINTS if (v := getattr(meta, k)) is not None})
        if isinstance(typ, types.UnionType):
            return self._union(typ.__args__)
        origin = getattr(typ, "__origin__", None)
        if origin is None:
            return self._plain(typ, constraints)
        args = getattr(typ, "__args__", ())
        if origin is Union:
            return self._union(args)
        if origin is Literal:
            return mi.LiteralType(_sorted_literals(args))
        if origin is list:
            item = self.translate(args[0]) if args else mi.AnyType()
            return mi.ListType(item, **_only(constraints, "min_length", "max_length"))
        if origin is dict:
            key, value = (self.translate(a) for a in args) if args else (mi.AnyType(),) * 2
            return mi.DictType(key, value, **_only(constraints, "min_length", "max_length"))
        raise _Other

    def _union(self, args: tuple[Any, ...]) -> mi.Type:
        members = tuple(self.translate(a) for a in args if a is not _UNSET)
        return members[0] if len(members) == 1 else mi.UnionType(members)

    def _plain(self, typ: Any, constraints: dict[str, Any]) -> mi.Type:
        """A type without arguments: a scalar, `Raw`, `Any`, `None` or a struct."""
        if typ is Any:
            return mi.AnyType()
        if typ is None or typ is type(None):
            return mi.NoneType()
        if typ is bool:
            return mi.BoolType()
        if typ is int:
            return mi.IntType(**_only(constraints, "gt", "ge", "lt", "le", "multiple_of"))
        if typ is float:
            return mi.FloatType(**_only(constraints, "gt", "ge", "lt", "le", "multiple_of"))
        if typ is str:
            return mi.StrType(**_only(constraints, "min_length", "max_length", "pattern"))
        if typ is msgspec.Raw:
            return mi.RawType()
        if typ is list:
            return mi.ListType(mi.AnyType(), **_only(constraints, "min_length", "max_length"))
        if isinstance(typ, type) and issubclass(typ, msgspec.Struct):
            return self._struct(typ)
        raise _Other

    def _struct(self, cls: type[Any]) -> mi.StructType:
        if cls in self.inside:
            raise _Other  # a struct within itself: msgspec's own inspection handles it
        self.inside.add(cls)
        try:
            return self._fields_of(cls)
        finally:
            self.inside.discard(cls)

    def _fields_of(self, cls: type[Any]) -> mi.StructType:
        config = cls.__struct_config__
        out = mi.StructType(
            cls,
            (),
            tag_field=config.tag_field,
            tag=config.tag,
            array_like=config.array_like,
            forbid_unknown_fields=config.forbid_unknown_fields,
        )
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            hints.update(inspect.get_annotations(klass))  # as written: not evaluated
        names, defaults = cls.__struct_fields__, cls.__struct_defaults__
        encode_names = cls.__struct_encode_fields__
        fields = []
        for i, (name, encode_name) in enumerate(zip(names, encode_names, strict=True)):
            hint = hints.get(name, str)  # (a missing one: not ours to guess)
            if name not in hints or isinstance(hint, str):
                raise _Other  # a string annotation: typing must evaluate it
            at = i - (len(names) - len(defaults))
            default = defaults[at] if at >= 0 else msgspec.NODEFAULT
            fields.append(_field(name, encode_name, self.translate(hint), default))
        out.fields = tuple(fields)
        return out  # kept by `translate` once whole: a failed struct is never kept


def _field(name: str, encode_name: str, kind: mi.Type, default: Any) -> mi.Field:
    """A struct field as `msgspec.inspect` states it: required, or its default (a value or a
    factory)."""
    factory = getattr(default, "factory", None)
    if default is msgspec.NODEFAULT:
        return mi.Field(name, encode_name, kind, True, msgspec.NODEFAULT, msgspec.NODEFAULT)
    if factory is not None and type(default).__name__ == "Factory":
        return mi.Field(name, encode_name, kind, False, msgspec.NODEFAULT, factory)
    value = msgspec.NODEFAULT if default is msgspec.UNSET else default
    return mi.Field(name, encode_name, kind, False, value, msgspec.NODEFAULT)


def _only(constraints: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in constraints.items() if k in names}


def _sorted_literals(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A literal's values as msgspec orders them: by type name, then value."""
    try:
        return tuple(sorted(args, key=lambda x: (type(x).__name__, x)))
    except TypeError:
        return tuple(args)
