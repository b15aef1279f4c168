"""What of the history an attempt declares it used: the ``HISTORY:`` line of a proposer.

A run with history as context names, in each proposer's context, the elites of earlier runs
(``ctx["history"]``, :mod:`dreamrsi.engine.history`). A proposer may say which of those runs
the attempt drew from, on a line of its stdout (the last such line counts, as for ``PLAN:``)::

    HISTORY: none
    HISTORY: r1a2b3c4d,r5e6f7a8b

Lending reads it (``dreaming.history.pool_branches``): a branch that used none of the history
may be lent to any tree with the same start. A node without the line used, for all anyone
knows, its run's whole context (the conservative reading, ``Node.history_used`` ``None``). A
line naming a run that is not in the context, or that is not a list of run ids, or longer than
:data:`HISTORY_LINE_CHARS`, is ignored with a note on the node: the conservative reading then
applies, which lends nothing a declaration could not.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dreamrsi.core.model import Node
from dreamrsi.workspace.folders import shown

if TYPE_CHECKING:
    from dreamrsi.store.base import RunsStore

__all__ = ["HISTORY_LINE_CHARS", "checked_history", "context_runs", "context_runs_of",
           "declared_history"]

HISTORY_LINE_CHARS = 4096
"""The longest ``HISTORY:`` line read (past it the line is ignored, with a note)."""

_HISTORY = re.compile(r"^[ \t]*HISTORY:(.*)$", re.MULTILINE)
_SHOWN = 80


def context_runs(store: RunsStore, node_ids: Sequence[str]) -> frozenset[str]:
    """The runs whose elites a run's context named (its ``context_nodes``)."""
    return frozenset(store.get_node(n).run_id for n in node_ids)


def context_runs_of(context: Mapping[str, Any]) -> frozenset[str]:
    """The runs whose elites a proposer's context names (its ``history`` entries)."""
    entries = context.get("history") or ()
    return frozenset(str(e["run_id"]) for e in entries
                     if isinstance(e, Mapping) and isinstance(e.get("run_id"), str))


def declared_history(stdout: str, runs: Collection[str]
                     ) -> tuple[tuple[str, ...] | None, str | None]:
    """The runs the last ``HISTORY:`` line of ``stdout`` names (sorted; ``()`` for
    ``none``) and a note when the line was ignored; ``(None, None)`` without a line.

    Args:
        stdout: The proposer's standard output.
        runs: The runs of its context (:func:`context_runs_of`).
    """
    found = _HISTORY.findall(stdout)
    if not found:
        return None, None
    text = found[-1].strip()
    if len(text) > HISTORY_LINE_CHARS:
        return None, _ignored(f"longer than {HISTORY_LINE_CHARS} characters")
    if text.lower() == "none":
        return (), None
    names = [part.strip() for part in text.split(",")]
    if not text or not all(names):
        return None, _ignored(f"'{shown(text[:_SHOWN])}' is not 'none' nor a list of run ids "
                              "separated by commas")
    unknown = [name for name in dict.fromkeys(names) if name not in runs]
    if unknown:
        listed = ", ".join(shown(n[:_SHOWN]) for n in unknown[:3])
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        return None, _ignored(f"it names {listed}{more}, not among the runs of this run's "
                              f"history context ({', '.join(sorted(runs)) or 'none'})")
    return tuple(sorted(set(names))), None


def checked_history(node: Node, runs: Iterable[str]) -> Node:
    """``node`` as it may be recorded by a run whose context named ``runs``: a
    ``history_used`` that is not a tuple of those runs' ids becomes ``None`` (the conservative
    reading), with a note in the feedback. Guards what an ``Attempts`` of a library user
    returns; the attempt runner's own nodes pass unchanged."""
    used = node.history_used
    if used is None:
        return node
    allowed = frozenset(runs)
    if isinstance(used, tuple) and all(isinstance(r, str) and r in allowed for r in used):
        return node if list(used) == sorted(set(used)) else \
            node._replace(history_used=tuple(sorted(set(used))))
    note = _ignored("the attempt named runs outside its run's history context")
    return node._replace(history_used=None,
                         feedback=f"{note}; {node.feedback}" if node.feedback else note)


def _ignored(reason: str) -> str:
    return (f"HISTORY line ignored ({reason}): the attempt counts as having used its run's "
            "whole history context")
