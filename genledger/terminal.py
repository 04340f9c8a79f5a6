"""Text bound for a terminal: never a raw control character from a name or from the data.

Folder names, file names, reasons and record values can hold anything (an ESC that recolours
or clears the screen, a carriage return that overwrites the line, a bidi override that
reorders it); what genledger prints shows them escaped (`\\x1b`, `\\u202e`), readable and inert.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, bidi embeddings, overrides and isolates, lone surrogates.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with every control character escaped; one line stays one line."""
    if text.isascii() and text.isprintable():
        return text
    return UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
