"""Where an episode's children come from, and ``select`` as a chooser.

:func:`~dreamrsi.core.episode.play` reveals from a :class:`StateSource`: replay's
:class:`RecordedSource` (the ``Child`` operator on a recorded tree's branch states), or the
engine's live attempts (a :class:`ChildSource`, wrapped by ``episode.run_episode``). A policy
without a chooser of its own decides through :class:`SelectChooser`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from dreamrsi.core._fast import recorded_reveal
from dreamrsi.core.model import Node
from dreamrsi.core.policy import OPEN, Budget, Policy, PolicyContext, check_batch
from dreamrsi.core.view import Branch, TreeView

__all__ = ["ChildSource", "RecordedSource", "Reveal", "SelectChooser", "StateSource",
           "recorded_states"]


class ChildSource(Protocol):
    """Where an online episode's children come from (the engine's live attempts).

    ``extend`` gives each entry of a checked batch its child, in batch order (the root once
    per entry: each opens a new branch), reveals the children in the view (through
    :meth:`TreeView.reveal_all`) and returns them. :func:`run_episode` drives one.
    """

    def extend(self, view: TreeView, batch: tuple[str, ...], round_no: int) -> Sequence[Node]:
        """Reveal the children of ``batch`` (decided in round ``round_no``, 1-based)."""
        ...


Reveal = Callable[[Sequence[Any], int], list[Any]]
"""A source's reveal step for one episode: a batch and the round that decided it in, what
it revealed out, in batch order (an entry may get nothing: nothing there): for a chooser's
entries the new branch states, for ``select``'s node ids (revealed into the view) the new
nodes."""


class StateSource(Protocol):
    """What :func:`play` reveals from. A batch's entries are a chooser's own (branch states
    to extend, and :data:`~dreamrsi.core.policy.OPEN` for each new branch), or, once
    ``select`` decides through :class:`SelectChooser` on a view the source reveals into,
    the node ids ``select`` chose (the root for each new branch).

    Attributes:
        root: The root node.
        size: The nodes it can reveal in all (``None``: no end, online).
    """

    @property
    def root(self) -> Node:
        """The root node."""
        ...

    @property
    def size(self) -> int | None:
        """The nodes it can reveal in all (``None``: no end)."""
        ...

    def revealer(self, view: TreeView | None) -> Reveal:
        """The reveal step of one episode: for a chooser's entries (``view`` ``None``), or
        for ``select``'s node ids, revealing into ``view`` too (a view revealed only from
        this source)."""
        ...


class ViewSource:
    """A :class:`ChildSource` (ids in, nodes revealed in the run's view out) as a
    :class:`StateSource` bound to that view: ``select`` decides on it."""

    __slots__ = ("_source", "_view", "root", "size")

    def __init__(self, source: ChildSource, view: TreeView) -> None:
        self._source, self._view, self.root = source, view, view.root
        self.size: int | None = None

    def revealer(self, view: TreeView | None) -> Reveal:
        """The live step (the run's view only: no chooser of its own runs online)."""
        if view is not self._view:
            raise ValueError("a live source reveals into the run's view only")
        return self._reveal

    def _reveal(self, batch: Sequence[str], round_no: int) -> list[Node]:
        return list(self._source.extend(self._view, tuple(batch), round_no))


class RecordedSource(NamedTuple):
    """The ``Child`` operator on a recorded tree's branch states, the one recorded source:
    for a branch, its recorded continuation; for :data:`~dreamrsi.core.policy.OPEN` (or the
    root's id), the earliest-created root child not yet revealed; otherwise nothing
    (``core.replay.recorded_source(tree)`` makes one; a named tuple: a replay makes one).

    Attributes:
        root: The tree's root.
        starts: The recorded branches' first states, in opening order.
        after: A tip's branch state once its recorded child is revealed (``None``: none).
        size: The tree's non-root nodes.
    """

    root: Node
    starts: Sequence[Branch]
    after: Mapping[str, Branch | None]
    size: int

    def revealer(self, view: TreeView | None) -> Reveal:
        """A chooser's step (:func:`recorded_states`), or, with a view, ``select``'s: its
        ids' continuations revealed into the view as one step bound to it
        (``core._fast.recorded_reveal``; plain path: :func:`recorded_states` of the
        entries, then :meth:`TreeView.take`)."""
        if view is None:
            return recorded_states(self.starts, self.after)
        return recorded_reveal(view, self.starts, self.after)


def recorded_states(starts: Sequence[Branch], after: Mapping[str, Branch | None]) -> Reveal:
    """A chooser's reveal step on recorded states, for one episode: each entry's recorded
    continuation, in batch order, the branches opened in order from the first."""
    opened = 0

    def reveal(batch: Sequence[Branch | str], round_no: int) -> list[Branch]:
        nonlocal opened
        found = []
        for entry in batch:
            if entry is OPEN:
                if opened < len(starts):
                    found.append(starts[opened])
                    opened += 1
            elif (state := after[entry.tip]) is not None:  # type: ignore[union-attr]
                found.append(state)
        return found

    return reveal


class SelectChooser:
    """A policy's ``select(view, budget)`` as a :class:`~dreamrsi.core.policy.BatchChooser`:
    the adapter through which :func:`play` runs every policy without a chooser of its own
    (third-party policies, policy programs, a chooser that gave up), online and in replay.

    The view is kept by the source (revealed as the episode goes); each call asks
    ``select`` on it and answers with the batch checked: a list or tuple of at most W ids,
    each the root or a distinct leaf, as it is; anything else through
    :func:`~dreamrsi.core.policy.check_batch`, which refuses what breaks the interface and
    names the round. Node ids, which a source bound to the view reveals (see
    :class:`StateSource`).

    Args:
        policy: The policy: reset here with ``context``.
        view: The view the source reveals into.
        context: The episode's context (a fresh random source).
        name: The policy's name in errors (empty: its ``name``).
        rounds: Rounds the episode has played already (named in errors).
    """

    __slots__ = ("_select", "_view", "_name", "_workers", "_offset", "_tips", "_root_id")

    def __init__(self, policy: Policy, view: TreeView, context: PolicyContext, name: str = "",
                 rounds: int = 0) -> None:
        policy.reset(context)
        self._select, self._view = policy.select, view
        self._name = name or getattr(policy, "name", type(policy).__name__)
        self._workers, self._offset = context.workers, rounds - view.rounds
        self._tips, self._root_id = view.leaf_table(), view.root_id

    def __call__(self, revealed: Sequence[Branch], budget: Budget, /) -> Sequence[str]:
        view = self._view
        chosen = self._select(view, budget)
        # the common batch, at most W ids, each the root or a distinct leaf, accepted here
        # as it is (check_batch's own first test, without its calls: a replay asks every
        # round); anything else is checked, and a bad batch named with its round
        if ((type(chosen) is list or type(chosen) is tuple) and len(chosen) <= self._workers
                and len(self._tips.keys() & chosen) + chosen.count(self._root_id)
                == len(chosen)):
            return chosen
        return check_batch(view, chosen, self._workers, policy_name=self._name,
                           round_no=view.rounds + self._offset + 1)
