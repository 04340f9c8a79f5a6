"""Lines cut into the blocks a read hands on, for tests of what is counted however a file is cut."""

from __future__ import annotations

from genledger.tail.lines import Block


def blocks_of(lines: list[bytes], cuts: list[int]) -> list[Block]:
    """`lines` (each given a newline) read in blocks ending after the line numbers in `cuts`."""
    data = [line + b"\n" for line in lines]
    blocks, start, offset = [], 0, 0
    for stop in [*sorted(set(cuts)), len(data)]:
        if stop <= start:
            continue
        chunk = b"".join(data[start:stop])
        blocks.append(Block(chunk, offset, start, len(chunk)))
        start, offset = stop, offset + len(chunk)
    return blocks
