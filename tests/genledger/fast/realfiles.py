"""The real recorded responses the fast tiers are held to (../shared/realworld*/data)."""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[4] / "shared"
FILES = sorted(SHARED.glob("realworld*/data/*/*.jsonl"))
