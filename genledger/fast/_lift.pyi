def lift_keys(
    content: bytes | bytearray | memoryview,
    keys: tuple[bytes, ...],
    min_span: int,
    max_looked: int,
    /,
) -> bytes | None: ...
def counts(span: bytes | bytearray | memoryview, /) -> tuple[int, int | None] | None: ...
