"""Whether every line of a block is JSON, with no Python step a line: `refresh.count`'s check
of a prompts block that holds no id (its definition, `_json_lines`, decodes line by line).

The block's lines are split and decoded by `bytes.split`, `map` and `orjson.loads`, all in C,
and the decoded values dropped at once (a `deque` of no length). It answers only where that
is the definition's own test, line for line: a block with a `\\r` (the reader strips one at a
line's end) or starting a file with a BOM (stripped too) is left to the definition, and so is
a block where any line fails, blank ones included (the definition skips those), so a line that
is no JSON is still named by file and line there.
"""

from __future__ import annotations

from collections import deque

import orjson

from genledger.fast.rawtext import BOM


def all_json(data: bytes, end: int, file_start: bool) -> bool:
    """True when every line of `data[:end]` (complete lines, read from the file's start when
    `file_start`) decodes as it is; False: unsure, ask line by line."""
    if end <= 0 or data.find(b"\r", 0, end) >= 0:
        return False
    if file_start and data.startswith(BOM):
        return False
    try:
        deque(map(orjson.loads, data[: end - 1].split(b"\n")), maxlen=0)
    except orjson.JSONDecodeError:
        return False
    return True
