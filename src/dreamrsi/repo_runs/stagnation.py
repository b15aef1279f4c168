"""Stagnation signals of a dream (seed 000), read from its recorded facts.

Three signals, each with the admissible rows that show it:

- ``no_progress``: its last ``k`` checkpoints did not beat the best score before them;
- ``repeated_failure``: its last ``k`` checkpoints failed the same way (same status and
  feedback), or its last ``k`` commands failed the same way (same command, exit and output);
- ``busy``: its last ``k`` checkpoints hold the same files as the checkpoint before each (steps
  that changed nothing, so they could tell nothing new).

:mod:`.allocate` turns each into seed 000's interventions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.repo_runs.evidence import DreamFacts, RunFacts
from dreamrsi.store.ledger import LedgerRow

__all__ = ["Signal", "signals"]

TreeOf = Callable[[str], object]
"""The files of a commit, as anything comparable (a tree's listing)."""


@dataclass(frozen=True, slots=True)
class Signal:
    """One stagnation signal of a dream.

    Attributes:
        kind: ``no_progress``, ``repeated_failure`` or ``busy``.
        dream: The dream.
        reason: What was seen, in words.
        cites: The admissible rows that show it.
        repeats: How many times in a row the pattern held (at least ``k``).
    """

    kind: str
    dream: str
    reason: str
    cites: tuple[str, ...]
    repeats: int


def signals(facts: RunFacts, dream: DreamFacts, k: int, tree_of: TreeOf) -> list[Signal]:
    """The stagnation signals of ``dream`` with window ``k`` (none for a healthy dream)."""
    found = [_no_progress(facts, dream, k), _failing_checkpoints(facts, dream, k),
             _failing_commands(dream, k), _busy(facts, dream, k, tree_of)]
    return [s for s in found if s is not None]


def _no_progress(facts: RunFacts, dream: DreamFacts, k: int) -> Signal | None:
    scores = dream.scores()
    if len(dream.checkpoints) < k:
        return None
    before = [s for s in scores[:-k] if s is not None]
    best = max(before) if before else None
    recent = scores[-k:]
    if any(s is not None and (best is None or s > best) for s in recent):
        return None
    tail = dream.checkpoints[-k:]
    mark = "no score" if best is None else f"{best:.6g}"
    return Signal("no_progress", dream.dream.dream_id,
                  f"its last {k} checkpoints did not beat its best before them ({mark})",
                  facts.evals_of(tail), _run_length(scores[1:], lambda s: s is None or (
                      best is not None and s <= best)))


def _failing_checkpoints(facts: RunFacts, dream: DreamFacts, k: int) -> Signal | None:
    marks = [_failure(n) for n in dream.checkpoints]
    repeats = _same_tail(marks)
    if repeats < k or marks[-1] is None:
        return None
    tail = dream.checkpoints[-repeats:]
    status, feedback = marks[-1]
    return Signal("repeated_failure", dream.dream.dream_id,
                  f"its last {repeats} checkpoints failed the same way ({status}: "
                  f"{feedback[:200]})", facts.evals_of(tail), repeats)


def _failing_commands(dream: DreamFacts, k: int) -> Signal | None:
    marks = [_command_failure(r) for r in dream.execs]
    repeats = _same_tail(marks)
    if repeats < k or marks[-1] is None:
        return None
    tail = dream.execs[-repeats:]
    cmd, code, _ = marks[-1]
    return Signal("repeated_failure", dream.dream.dream_id,
                  f"its last {repeats} commands failed the same way (`{cmd[:200]}` exit "
                  f"{code}, the same output)", tuple(r.event.event_id for r in tail), repeats)


def _busy(facts: RunFacts, dream: DreamFacts, k: int, tree_of: TreeOf) -> Signal | None:
    chain: list[Node] = [n for n in (dream.start, *dream.checkpoints) if n is not None]
    if len(dream.checkpoints) < k or len(chain) < k + 1:
        return None
    trees = [tree_of(n.commit) if n.commit else None for n in chain[-(k + 1):]]
    if any(t is None for t in trees) or any(a != b for a, b in zip(trees, trees[1:],
                                                                    strict=False)):
        return None
    tail = chain[-k:]
    return Signal("busy", dream.dream.dream_id,
                  f"its last {k} checkpoints changed no file: steps that told nothing new",
                  facts.evals_of(tail), k)


def _failure(node: Node) -> tuple[str, str] | None:
    if node.status is NodeStatus.OK and node.score is not None:
        return None
    return node.status.value, node.feedback


def _command_failure(row: LedgerRow) -> tuple[str, int | None, tuple[str, ...]] | None:
    ev = row.event
    if ev.exit == 0:
        return None
    outputs = tuple(sorted(a.sha256 for a in ev.artifacts))
    return ev.cmd, ev.exit, outputs


def _same_tail(marks: Sequence[object]) -> int:
    """How many of the last marks equal the last one (0 when there are none)."""
    if not marks:
        return 0
    count = 0
    for mark in reversed(marks):
        if mark != marks[-1]:
            break
        count += 1
    return count


def _run_length(items: Sequence[float | None], stuck: Callable[[float | None], bool]) -> int:
    count = 0
    for item in reversed(items):
        if not stuck(item):
            break
        count += 1
    return count
