"""Pages of long lists: every paged view answers ``{"total", "offset", "limit", "items"}``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["MAX_LIMIT", "page"]

MAX_LIMIT = 1000
"""The most items one page holds."""


def page(items: Sequence[Any], offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """Items ``offset`` to ``offset + limit`` of ``items`` with the total.

    Raises:
        ConfigError: A negative offset, or a limit outside 1 to :data:`MAX_LIMIT`.
    """
    if offset < 0:
        raise ConfigError(f"offset must be at least 0, got {offset}", key="offset")
    if not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be 1 to {MAX_LIMIT}, got {limit}", key="limit")
    return {"total": len(items), "offset": offset, "limit": limit,
            "items": list(items[offset:offset + limit])}
