"""Verification of a chain and of everything it records, shared by every backend.

A backend subclasses :class:`RecordAudit` (a :class:`~dreamrsi.store.base.RunStore`) and
provides its stored rows through three hooks; verification itself is the same for all.

:meth:`RecordAudit.verify` checks, in this order, stopping at the first problem:

1. the chain's rows: positions, ``prev_hash`` links, each row's hash, the recorded length and
   head (:func:`~dreamrsi.store.ledger.verify_chain`);
2. a head kept outside the store, if one is given: the row at its position has its hash;
3. for a run's chain: the run's row against its record, and every node of the run against its
   record, field by field (a node without a record, a record without a node, a node or run
   recorded twice, and a run without any record all fail); for a dream's chain: a finished
   dream's chain ends in its decision, which names its ``selected`` and ``promoted``, and a
   chain that names a dream has one;
4. every blob the rows and records name: its file re-hashes to its name;
5. every workspace commit the rows and records name: the commit object and every object
   below its tree re-hash to their ids (``WorkspaceRepo.check_commits``).

Every read happens in one :meth:`~dreamrsi.store.base.RunStore.snapshot`, so a chain that a
live run extends meanwhile is verified as of one moment, never reported as tampered.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from typing import Any

from dreamrsi.errors import NotFound
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import ChainHead, VerifyReport, verify_chain
from dreamrsi.store.records import (
    ChainIndex,
    Problem,
    RecordRef,
    column_of,
    first_difference,
    node_record,
    run_record,
    shown,
)


class RecordAudit(RunStore):
    """A run store whose chains are verified from its stored rows (see the module docstring).

    A backend provides :meth:`_ledger_dicts`, :meth:`_stored_run` and :meth:`_stored_nodes`,
    plus the :class:`RunStore` methods ``chain_head``, ``blobs`` and ``workspaces``.
    """

    @abc.abstractmethod
    def _ledger_dicts(self, chain: str) -> Iterable[dict[str, Any]]:
        """A chain's rows in stored seq order, each as the dict of its hashed fields plus
        ``hash``, read without trusting them (``rows.ledger_dict``)."""

    @abc.abstractmethod
    def _stored_run(self, run_id: str) -> Sequence[Any] | None:
        """The run's stored row in ``records.RUN_COLUMNS`` order, or ``None``."""

    @abc.abstractmethod
    def _stored_nodes(self, run_id: str) -> Iterable[Sequence[Any]]:
        """The run's stored node rows in ``records.NODE_COLUMNS`` order, by seq."""

    def verify_ledger(self, chain: str) -> VerifyReport:
        """Verify a chain's rows alone: hashes, order and length."""
        with self.snapshot():
            head = self.chain_head(chain)
            return verify_chain(chain, list(self._ledger_dicts(chain)), head.length or 0,
                                head.hash)

    def verify(self, chain: str, head: ChainHead | None = None) -> VerifyReport:
        """Verify a chain and everything it records (see the module docstring).

        Args:
            chain: A run's id (or a dream's).
            head: A head of this chain taken earlier and kept outside the store; the chain
                must still hold it: a chain that grew since verifies, one that was truncated
                or rewritten does not.

        Returns:
            The report, naming the first problem (row, node and field where they apply).
        """
        with self.snapshot():  # one state: a live writer commits between the reads
            return self._verify(chain, head)

    def _verify(self, chain: str, head: ChainHead | None) -> VerifyReport:
        index = ChainIndex(head)
        own = self.chain_head(chain)
        report = verify_chain(chain, index.scan(self._ledger_dicts(chain)), own.length or 0,
                              own.hash)
        report = report._replace(head=own if report.ok else None, given_head=head)
        if not report.ok:
            return report
        counts = _Counts()
        problem = (index.head_problem() or self._run_problem(chain, index)
                   or self._node_problem(chain, index, counts)
                   or self._blob_problem(index, counts)
                   or self._commit_problem(index, counts))
        report = report._replace(nodes=counts.nodes, anchored=counts.anchored,
                         blobs=counts.blobs, commits=counts.commits, objects=counts.objects)
        if problem is None:
            return report
        return report._replace(ok=False, bad_seq=problem.seq, bad_id=problem.row_id,
                       problem=problem.text, node_id=problem.node_id, field=problem.field)

    def _run_problem(self, chain: str, index: ChainIndex) -> Problem | None:
        if index.malformed is not None:
            bad = index.malformed
            return Problem(f"row {bad.seq} is a record row that holds no record", bad.seq,
                           bad.row_id)
        stored = self._stored_run(chain)
        if stored is None:
            ref = index.runs[0] if index.runs else next(iter(index.nodes.values()), None)
            if ref is None:
                return self._dream_problem(chain, index)  # not a run's chain
            return Problem(f"the chain records run {chain} (row {ref.seq}) but the store has "
                           "no such run (its row was deleted)", ref.seq, ref.row_id)
        if not index.runs:
            return Problem(f"run {chain} has no record in its chain (its ledger was deleted or "
                           "replaced)")
        if len(index.runs) > 1:
            ref = index.runs[1]
            return Problem(f"run {chain} is recorded twice (rows {index.runs[0].seq} and "
                           f"{ref.seq})", ref.seq, ref.row_id)
        return _difference(f"run {chain}", index.runs[0], run_record(stored), None)

    def _dream_problem(self, chain: str, index: ChainIndex) -> Problem | None:
        """A dream's chain is written with its outcome, in one transaction: a finished dream
        has a chain that ends in its decision, and a chain that names a dream has one."""
        try:
            dream = self.get_dream(chain)
        except NotFound:
            if index.dream_row is None:
                return None  # a chain of no run and no dream
            seq, row_id, dream_id = index.dream_row
            return Problem(f"the chain records dream {dream_id} (row {seq}) but the store has "
                           "no such dream (its row was deleted)", seq, row_id)
        last = index.last
        if dream.finished_at is None:
            return None if last is None else Problem(
                f"dream {chain} is recorded as unfinished but its chain holds {index.rows} "
                "rows (written only when a dream finishes: its record was edited)")
        if last is None:
            return Problem(f"dream {chain} finished (its record says so) but its chain holds "
                           "no rows (its ledger was deleted)")
        for key in ("selected", "promoted"):
            current, recorded = getattr(dream, key), last.record.get(key)
            if current != recorded or type(current) is not type(recorded):
                return Problem(f"dream {chain}: {key} is {shown(current)}, its decision in row "
                               f"{last.seq} says {shown(recorded)} (edited after it was "
                               "recorded)", last.seq, last.row_id, field=key)
        return None

    def _node_problem(self, chain: str, index: ChainIndex, counts: _Counts) -> Problem | None:
        twice = index.repeated
        if twice is not None:
            return Problem(f"node {twice.record['node_id']} is recorded twice (again in row "
                           f"{twice.seq})", twice.seq, twice.row_id, str(twice.record["node_id"]))
        records = dict(index.nodes)
        for row in self._stored_nodes(chain):
            node_id = str(row[0])
            found = records.pop(node_id, None)
            if found is None:
                return Problem(f"node {node_id} has no record in the chain (it was added "
                               "outside dreamrsi, or its record was removed)", node_id=node_id)
            problem = _difference(f"node {node_id}", found, node_record(row), node_id)
            if problem is not None:
                return problem
        if records:
            left = min(records.values(), key=lambda r: r.seq)
            node_id = str(left.record["node_id"])
            return Problem(f"node {node_id} is recorded in row {left.seq} but is not among the "
                           "run's nodes (deleted, or moved to another run)", left.seq,
                           left.row_id, node_id)
        counts.nodes = len(index.nodes)
        counts.anchored = sum(r.anchored for r in index.nodes.values())
        return None

    def _blob_problem(self, index: ChainIndex, counts: _Counts) -> Problem | None:
        for digest, (seq, row_id) in index.blobs.items():
            problem = self.blobs.check(digest)
            if problem is not None:
                return Problem(f"blob {digest[:16]} named by row {seq} {problem}", seq, row_id)
        counts.blobs = len(index.blobs)
        return None

    def _commit_problem(self, index: ChainIndex, counts: _Counts) -> Problem | None:
        if not index.commits:
            return None
        problems, objects = self.workspaces.check_commits(index.commits)
        for commit, (seq, row_id) in index.commits.items():
            if commit in problems:
                return Problem(f"the workspace of commit {commit[:12]} named by row {seq} is "
                               f"not intact: {problems[commit]}", seq, row_id)
        counts.commits, counts.objects = len(index.commits), objects
        return None


class _Counts:
    """What verification found intact, for the report."""

    __slots__ = ("nodes", "anchored", "blobs", "commits", "objects")

    def __init__(self) -> None:
        self.nodes = self.anchored = self.blobs = self.commits = self.objects = 0


def _difference(what: str, ref: RecordRef, current: dict[str, Any],
                node_id: str | None) -> Problem | None:
    key = first_difference(ref.record, current)
    if key is None:
        return None
    column = column_of(key)
    return Problem(f"{what}: {column} is {shown(current.get(key))}, its record in row "
                   f"{ref.seq} says {shown(ref.record.get(key))} (edited after it was "
                   "recorded)", ref.seq, ref.row_id, node_id, column)
