from collections.abc import Callable

def collapsed_escaped(
    fallback: Callable[[bytes | memoryview], bytes | memoryview], body: bytes | memoryview, /
) -> bytes | memoryview: ...
