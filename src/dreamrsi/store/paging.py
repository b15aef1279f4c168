"""Pages of the store's long listings: what a page is asked by, and how a wrong ask is refused.

Every listing that grows with a history is read a page at a time, in a stable order, by one of
two kinds of ask:

* **keyset** (a cursor: the last item of the previous page): ``ledger(chain, after=SEQ,
  limit=N)`` (rows by seq), ``nodes(run, after=SEQ, limit=N)`` (nodes by seq),
  ``tree_listing(run, after=NODE_ID, limit=N)`` (nodes in branch order). A page costs what it
  holds, however deep it starts, and a page read while a writer appends is never shifted.
* **offset** (``offset=K, limit=N``): ``list_runs`` (runs, oldest first, ties by id) and
  ``tree_listing``; the cost of skipping grows with ``K``.

A bad ask (a negative limit or offset, a cursor that is not an item of the listing) is a
:class:`~dreamrsi.errors.ConfigError` naming the argument, raised before anything is read.
"""

from __future__ import annotations

from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["check_listing", "check_offset", "check_page", "not_listed"]


def check_page(after: Any, limit: Any, *, key: str = "after") -> None:
    """Refuse a keyset ask whose cursor (a seq) or limit is not a whole number, or whose
    limit is negative (``ConfigError``). A cursor below 0 asks for everything."""
    if type(after) is not int:
        raise ConfigError(f"the cursor {after!r} is not a seq", key=key,
                          expected="a whole number: the seq of the last item of the "
                          "previous page (0: from the start)")
    _check_limit(limit)


def check_offset(offset: Any, limit: Any) -> None:
    """Refuse an offset ask whose offset or limit is not a whole number at least 0."""
    if type(offset) is not int or offset < 0:
        raise ConfigError(f"the offset {offset!r} is not a count", key="offset",
                          expected="a whole number at least 0")
    _check_limit(limit)


def _check_limit(limit: Any) -> None:
    if limit is not None and (type(limit) is not int or limit < 0):
        raise ConfigError(f"the limit {limit!r} is not a count", key="limit",
                          expected="a whole number at least 0, or none for every item")


def check_listing(offset: Any, limit: Any, after: Any) -> None:
    """Refuse a tree listing's ask: a bad offset or limit, a cursor that is not a node id, or
    a cursor and an offset together."""
    check_offset(offset, limit)
    if after is None:
        return
    if type(after) is not str or not after:
        raise ConfigError(f"the cursor {after!r} is not a node id", key="after",
                          expected="the id of the last node of the previous page")
    if offset:
        raise ConfigError("a listing starts after a node or at an offset, not both",
                          key="after", expected="--after NODE or --offset K")


def not_listed(after: str, why: str) -> ConfigError:
    """The error for a cursor that names no node of the listing asked for."""
    return ConfigError(f"the cursor {after!r} {why}", key="after",
                       expected="the id of a node of this listing (the last of the previous "
                       "page)")
