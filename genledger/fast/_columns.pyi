from typing import Any

def columns(
    rows: list[tuple[Any, ...]], places: tuple[int, ...], kinds: bytes, /
) -> list[tuple[Any, Any]] | None: ...
