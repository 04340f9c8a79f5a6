from collections.abc import Callable

def collapsed_escaped(
    fallback: Callable[[bytes | memoryview], bytes | memoryview], body: bytes | memoryview, /
) -> bytes | memoryview: ...
def spelled_key(
    fallback: Callable[[bytes | memoryview], int | None],
    hash: Callable[[bytes | memoryview], int],
    data: bytes | memoryview,
    /,
) -> int | None: ...
