from array import array
from collections.abc import Sequence

def first_ids(
    files: Sequence[tuple[bytes | bytearray, array[int], array[int]]], wanted: int, /
) -> tuple[int, list[tuple[int, int, bytes, int, int]]]: ...
def first_ints(
    files: Sequence[tuple[array[int], array[int]]], wanted: int, /
) -> tuple[int, list[tuple[int, int, int, int, int]]]: ...
