"""A shape's inspected type read from its annotations equals msgspec's own inspection."""

# No `from __future__ import annotations`: the structs below must hold their types, as the
# shapes do (a string annotation is left to msgspec).
from typing import Annotated, Any, Literal

import msgspec
import msgspec.inspect
import pytest

from genledger.fast import apishapes, shapeinfo, shapes
from genledger.fast.lines import RESPONSE_SHAPES, TOKENIZED_SHAPES


def _structs(module: Any) -> list[type[Any]]:
    """Every struct class a shapes module defines (nested ones too: each is a tree)."""
    return [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, msgspec.Struct) and v is not msgspec.Struct
    ]


EVERY = [*RESPONSE_SHAPES, *TOKENIZED_SHAPES, *_structs(shapes), *_structs(apishapes)]


def _translated(shape: type[Any], monkeypatch: pytest.MonkeyPatch) -> msgspec.inspect.Type:
    """`shapeinfo.type_info(shape)`, failing if it asks msgspec."""

    def refused(_: Any) -> Any:
        raise AssertionError("left to msgspec")

    with monkeypatch.context() as patch:
        patch.setattr(shapeinfo, "by_msgspec", refused)
        return shapeinfo.type_info(shape)


@pytest.mark.parametrize("shape", EVERY, ids=lambda s: s.__name__)
def test_a_shapes_type_is_msgspecs_own(shape: type[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    assert _translated(shape, monkeypatch) == msgspec.inspect.type_info(shape)


class _Inner(msgspec.Struct):
    n: Annotated[int, msgspec.Meta(ge=0)] | None = None


class _Odd(msgspec.Struct, rename="camel", tag=True):
    """Kinds the shapes use, and defaults of each sort."""

    some_list: list[_Inner]
    mapping: dict[str, float] | None = None
    kind: Literal["b", "a", 2] = "a"
    bounded: Annotated[list[None], msgspec.Meta(max_length=0)] = []
    raw: msgspec.Raw = msgspec.Raw(b"null")
    anything: Any = msgspec.field(default_factory=dict)
    flag: bool | None = msgspec.UNSET  # type: ignore[assignment]


class _OneWay(msgspec.Struct):
    value: int | str | None = None
    values: list[int | str] = []


class _OtherWay(msgspec.Struct):
    value: str | int | None = None  # equal to `_OneWay`'s as a union: msgspec keeps the order
    values: list[str | int] = []


def test_unions_written_in_two_orders_keep_each_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    for shape in (_OneWay, _OtherWay, _OneWay):
        assert _translated(shape, monkeypatch) == msgspec.inspect.type_info(shape)


class _Described(msgspec.Struct):
    text: Annotated[str, msgspec.Meta(description="a text")] = ""


class _Later(msgspec.Struct):
    inner: "_Inner | None" = None  # a string annotation: typing evaluates it


@pytest.mark.parametrize("shape", [_Inner, _Odd], ids=lambda s: s.__name__)
def test_other_structs_are_msgspecs_own_too(
    shape: type[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _translated(shape, monkeypatch) == msgspec.inspect.type_info(shape)


@pytest.mark.parametrize("shape", [_Described, _Later], ids=lambda s: s.__name__)
def test_what_is_not_translated_is_left_to_msgspec(
    shape: type[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # schema metadata (msgspec wraps the type), a string annotation (typing evaluates it)
    with pytest.raises(AssertionError, match="left to msgspec"):
        _translated(shape, monkeypatch)
    assert shapeinfo.type_info(shape) == msgspec.inspect.type_info(shape)
