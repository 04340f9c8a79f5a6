"""Keep secrets out of everything genledger writes: messages, logs, errors."""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
_URL = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^\s'\"<>]+")


def redact(text: str, secrets: Iterable[str] = (), urls: bool = True) -> str:
    """Mask every known secret, then (for errors) every URL beyond its scheme: URLs carry tokens."""
    for secret in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _URL.sub(lambda m: m.group(1) + MASK, text) if urls else text
