def lift_keys(
    content: bytes | bytearray | memoryview,
    keys: tuple[bytes, ...],
    min_span: int,
    max_looked: int,
    /,
) -> bytes | None: ...
def counts(span: bytes | bytearray | memoryview, /) -> tuple[int, int | None] | None: ...
def lift_any(
    content: bytes | bytearray | memoryview,
    first: int,
    stop: int,
    min_span: int,
    max_looked: int,
    /,
) -> bytes | None: ...
