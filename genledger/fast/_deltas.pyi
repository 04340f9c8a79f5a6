def delta(
    names: tuple[tuple[bytes, ...], ...],
    told: tuple[tuple[bytes, bytes, int, bool], ...],
    settled: tuple[bytes, ...],
    noise: tuple[bytes, ...],
    line: bytes,
    /,
) -> tuple[int, str | None, bool, str | None, str | None, str | None] | None: ...
