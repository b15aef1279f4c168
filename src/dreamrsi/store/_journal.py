"""An undo log over plain dicts and lists: transactions and savepoints for in-memory tables."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Journal:
    """Records how to undo each change made through it, so that a failed block can be undone.

    Every change goes through :meth:`put`, :meth:`pop` or :meth:`append`. Inside
    :meth:`savepoint` blocks (nested freely), an exception undoes the changes made since the
    block began, newest first, and propagates; when the outermost block ends normally its
    changes are kept and the log is emptied.

    >>> journal, table = Journal(), {"a": 1}
    >>> try:
    ...     with journal.savepoint():
    ...         journal.put(table, "a", 2)
    ...         journal.put(table, "b", 3)
    ...         raise KeyError("undo")
    ... except KeyError:
    ...     pass
    >>> table
    {'a': 1}
    """

    def __init__(self) -> None:
        self._undo: list[Callable[[], object]] = []
        self.depth = 0

    def put(self, table: dict[K, V], key: K, value: V) -> None:
        """Set ``table[key]``."""
        if key in table:
            old = table[key]
            self._undo.append(lambda: table.__setitem__(key, old))
        else:
            self._undo.append(lambda: table.__delitem__(key))
        table[key] = value

    def pop(self, table: dict[K, V], key: K) -> None:
        """Remove ``key`` from ``table`` if it is there."""
        if key in table:
            old = table.pop(key)
            self._undo.append(lambda: table.__setitem__(key, old))

    def append(self, items: list[V], item: V) -> None:
        """Append ``item`` to ``items``."""
        items.append(item)
        self._undo.append(items.pop)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A block whose changes are undone if it raises (see the class docstring)."""
        mark = len(self._undo)
        self.depth += 1
        try:
            yield
        except BaseException:
            self.depth -= 1
            while len(self._undo) > mark:
                self._undo.pop()()
            raise
        self.depth -= 1
        if self.depth == 0:
            self._undo.clear()
