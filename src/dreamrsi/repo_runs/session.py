"""A Dream Run's working session: its task, folders and sandbox, and what every verb shares.

A checkpoint is an attempt of the engine's (:class:`~dreamrsi.engine.attempt.AttemptRunner`):
its proposer copies the dream's working copy into the attempt's checkout, and the engine
guards, commits, restores protected paths and evaluates it exactly as it does a discovery
run's candidate, then records the node. Every dream is a chain of checkpoints; a dream's first
checkpoint hangs from the root, whichever checkpoint its files started from (the start is kept
in the dream's record), so the run's tree is a root with chains, as replay needs.
"""

from __future__ import annotations

import dataclasses
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dreamrsi.agents.files import FileProblem, read_bytes
from dreamrsi.agents.protocol import Proposal, ProposalRequest, ProposalStatus
from dreamrsi.core.model import Artifact, Cost, Node, node_id_for
from dreamrsi.engine.attempt import AttemptOutcome, AttemptRunner, AttemptSpec
from dreamrsi.engine.commands import bounded_command, command_event
from dreamrsi.engine.recording import attempt_safely, record_outcome
from dreamrsi.engine.run import attempt_seed, recorded_task
from dreamrsi.engine.sandboxing import base_env, proposer_isolation, resolve_isolation
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.chainview import view
from dreamrsi.repo_runs.copies import RunFolders, copy_working_files, make_copy
from dreamrsi.repo_runs.journal import load_state, record
from dreamrsi.repo_runs.opening import store_root
from dreamrsi.repo_runs.state import DreamState, EventKind, WorkState
from dreamrsi.sandbox import CommandResult, IsolationMode
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.folders import remove_tree
from dreamrsi.workspace.git import GitCall

__all__ = ["ExecResult", "Session"]

_MIB = 1 << 20
MAX_ARTIFACT_BYTES = 4 * _MIB
"""Largest file a command's row keeps."""
_TAIL = 4000


@dataclass(frozen=True, slots=True)
class ExecResult:
    """A command run in a dream, as its ledger row records it."""

    row: str
    command: str
    exit: int | None
    timed_out: bool
    duration_ms: int
    commit: str
    stdout_tail: str
    stderr_tail: str
    parsed: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"row": self.row, "command": self.command, "exit": self.exit,
                "timed_out": self.timed_out, "duration_ms": self.duration_ms,
                "commit": self.commit, "stdout_tail": self.stdout_tail,
                "stderr_tail": self.stderr_tail, "parsed": dict(self.parsed)}


class _WorkingCopy:
    """The proposer of a checkpoint: the dream's working copy, copied as it is."""

    def __init__(self, ws: Path, max_bytes: int, message: str) -> None:
        self.ws = ws
        self.max_bytes = max_bytes
        self.message = message

    def prepare(self) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to release."""

    def propose(self, request: ProposalRequest) -> Proposal:
        """Replace the attempt's checkout with the working copy's files."""
        started = time.monotonic()
        remove_tree(request.workspace)
        request.workspace.mkdir()
        problem = copy_working_files(self.ws, request.workspace, self.max_bytes)
        event = LedgerEvent(Actor.EXECUTION, "copy working copy", commit=request.commit,
                            duration_ms=int((time.monotonic() - started) * 1000),
                            parsed={"problem": problem} if problem else {},
                            node_id=request.node_id)
        status = ProposalStatus.OK if problem is None else ProposalStatus.ERROR
        return Proposal(status, problem, self.message or None, (), Cost(), (event,))


class Session:
    """One process's handle on a Dream Run.

    Args:
        store: The store, opened for writing.
        run_id: The run.
        isolation: ``--isolation`` if given (default: the task's, ``required`` for a
            repository).
    """

    def __init__(self, store: RunStore, run_id: str, isolation: str | None = None) -> None:
        self.store = store
        self.run = store.get_run(run_id)
        self.run_id = run_id
        self.folders = RunFolders(store_root(store), run_id)
        self.task: Task = recorded_task(store, self.run, "a Dream Run's task folder is its own")
        self.mode: IsolationMode = resolve_isolation(self.task, isolation)

    # -- state -----------------------------------------------------------------------------

    def state(self) -> WorkState:
        """The run's state now."""
        return load_state(self.store, self.run_id)

    def node(self, node_id: str) -> Node:
        """A node of this run (a unique prefix of its id is enough)."""
        found = self.store.find_nodes(self.run_id, node_id) if node_id else []
        if node_id in {n for n in found}:
            return self.store.get_node(node_id)
        if len(found) != 1:
            raise ConfigError(f"{node_id!r} is not a checkpoint of run {self.run_id}",
                              key="CHECKPOINT")
        return self.store.get_node(found[0])

    def working_copy(self, dream: DreamState) -> Path:
        """The dream's working copy, made again from its last checkpoint if it is gone."""
        ws = self.folders.working_copy(dream.dream_id)
        if not (ws / ".git").is_dir():
            calls: list[GitCall] = []
            commit = self.node(dream.work_node).commit
            make_copy(self.folders, dream.dream_id, self.store.workspaces, commit, calls)
        return ws

    # -- commands --------------------------------------------------------------------------

    def execute(self, dream_id: str, argv: Sequence[str], *, timeout_s: float = 600.0,
                actor: Actor = Actor.EXECUTION, facts: Mapping[str, Any] | None = None,
                artifacts: Sequence[str] = ()) -> ExecResult:
        """Run a command in the dream's working copy, in the sandbox, and record it: the
        commit of the files it ran on, its exit, its output and the files named in
        ``artifacts`` (paths in the working copy it wrote, such as a JUnit report) as blobs
        with their sha256, and what they say (test counts, a benchmark's numbers)."""
        if not argv or not any(a.strip() for a in argv):
            raise ConfigError("no command to run", key="CMD")
        if any("\0" in a for a in argv):
            raise ConfigError("a command cannot hold a NUL byte", key="CMD")
        if not 0 < timeout_s <= 86400:
            raise ConfigError(f"timeout {timeout_s} is not 0 to 86400 seconds", key="--timeout")
        state = self.state()
        dream = state.live_dream(dream_id)
        ws = self.working_copy(dream)
        commit = self.snapshot(dream)
        command = argv[0] if len(argv) == 1 else shlex.join(argv)
        io = self.folders.dream(dream_id) / "io"
        io.mkdir(exist_ok=True)
        env = {**base_env(self.task, io), "DREAM_RUN_ID": self.run_id,
               "DREAM_DREAM_ID": dream_id}
        result = bounded_command(command, timeout_s, ws,
                                 proposer_isolation(self.task, self.mode, ws, io), env,
                                 self.task.constraints, deadline=None,
                                 cancel=threading.Event())
        assert result is not None  # no deadline and no cancel: it always runs
        kept, files, missing = self._artifacts(ws, artifacts)
        parsed = {"dream": dream_id, "base_node": dream.work_node, **(facts or {}),
                  **_outputs(result, files),
                  **({"artifacts_missing": missing} if missing else {})}
        event = command_event(actor, result, commit, "", self.store.blobs, parsed=parsed,
                              extra=kept)
        event = dataclasses.replace(event, node_id=None, args=tuple(argv))
        with self.store.atomic():
            self.store.append_ledger(self.run_id, [event], run_id=self.run_id)
        return ExecResult(event.event_id, command, result.exit_code, result.timed_out,
                          result.duration_ms, commit, result.stdout[-_TAIL:],
                          result.stderr[-_TAIL:], event.parsed or {})

    def _artifacts(self, ws: Path, names: Sequence[str]
                   ) -> tuple[tuple[Artifact, ...], dict[str, bytes], dict[str, str]]:
        """The files a command was asked to keep, read without following links (at most
        :data:`MAX_ARTIFACT_BYTES` each); and why the others could not be kept."""
        kept: list[Artifact] = []
        files: dict[str, bytes] = {}
        missing: dict[str, str] = {}
        for name in names:
            try:
                data = read_bytes(ws, name, MAX_ARTIFACT_BYTES)
            except (FileProblem, OSError) as exc:
                missing[name] = str(exc)
                continue
            files[name] = data
            kept.append(Artifact(name, self.store.blobs.put(data)))
        return tuple(kept), files, missing

    def snapshot(self, dream: DreamState) -> str:
        """Commit the working copy's files as they are (not a checkpoint: evidence of what a
        command ran on), on the dream's own ref."""
        ws = self.working_copy(dream)
        scratch = self.folders.dream(dream.dream_id) / "snapshot"
        discard_folder(scratch)
        scratch.mkdir(parents=True)
        try:
            files = scratch / "files"
            files.mkdir()
            problem = copy_working_files(ws, files, self.task.constraints.max_workspace_mb * _MIB)
            if problem is not None:
                raise ConfigError(f"dream {dream.dream_id}: {problem}; remove it from the "
                                  f"working copy ({ws}), or put a checkpoint's files back: "
                                  f"`dreamrsi revert {self.run_id} {dream.dream_id} "
                                  f"{dream.work_node}`")
            ref = f"refs/dreamrsi/work/{self.run_id}/{dream.dream_id}"
            repo = self.store.workspaces
            try:
                parent: str | None = repo.resolve(ref)
            except Exception:  # noqa: BLE001 - the dream's first snapshot
                parent = self.node(dream.work_node).commit
            return repo.snapshot(files, scratch / "index", parent,
                                 f"working copy of {self.run_id}/{dream.dream_id}", ref, [])
        finally:
            discard_folder(scratch)

    def checkpoint(self, dream_id: str, message: str = "",
                   extra: Sequence[LedgerEvent] = (), *, merge_of: str | None = None) -> Node:
        """Make the dream's working copy a checkpoint: a node of the run's tree, evaluated,
        and the dream's head. With ``merge_of``, the checkpoint is that dream's merge into
        this one: a ``merge`` event is recorded with the node instead of a ``checkpoint``."""
        state = self.state()
        dream = state.live_dream(dream_id)
        ws = self.working_copy(dream)
        parent_id = dream.head_node if dream.checkpoints else state.root_node
        parent = self.store.get_node(parent_id)
        outcome = self._attempt(parent, _WorkingCopy(
            ws, self.task.constraints.max_workspace_mb * _MIB, message))
        with self.store.atomic():
            node = record_outcome(self.store, self.run_id, outcome).node
            facts = {"node": node.node_id, "commit": node.commit,
                     "status": node.status.value, "score": node.score, "message": message}
            if merge_of is None:
                record(self.store, self.run_id, EventKind.CHECKPOINT,
                       {"dream": dream_id, **facts}, node_id=node.node_id, extra=extra)
            else:
                record(self.store, self.run_id, EventKind.MERGE,
                       {"dream": merge_of, "into": dream_id, **facts}, node_id=node.node_id,
                       extra=extra)
        return node

    def evaluate_root(self, commit: str) -> Node:
        """Evaluate the repository's ``HEAD`` as the run's root and record it."""
        spec = AttemptSpec(node_id_for(self.run_id, 0), self.run_id, 0, 0, None, commit,
                           {"seed": attempt_seed(self.run.seed, 0)})
        runner = self._runner(None)
        try:
            outcome = attempt_safely(runner, spec)
        finally:
            runner.close()
        return record_outcome(self.store, self.run_id, outcome).node

    def fresh_copy(self, dream_id: str, node_id: str | None) -> Path:
        """A new working copy for ``dream_id`` with the files of ``node_id`` (``None``: the
        repository's ``HEAD``)."""
        commit = None if node_id is None else self.node(node_id).commit
        return make_copy(self.folders, dream_id, self.store.workspaces, commit, [])

    # -- internals -------------------------------------------------------------------------

    def _runner(self, proposer: _WorkingCopy | None) -> AttemptRunner:
        work = self.folders.root / "attempts"
        trusted = self.folders.root / "trusted"
        discard_folder(trusted)
        work.mkdir(parents=True, exist_ok=True)
        runner = AttemptRunner(self.task, self.store.workspaces, self.store.blobs, work,
                               self.mode, trusted, proposer=proposer)
        runner.prepare()
        return runner

    def _attempt(self, parent: Node, proposer: _WorkingCopy) -> AttemptOutcome:
        seq = max(n.seq for n in view(self.store, self.run_id).nodes.values()) + 1
        spec = AttemptSpec(node_id_for(self.run_id, seq), self.run_id, seq, seq, parent,
                           parent.commit or "", {"seed": attempt_seed(self.run.seed, seq)})
        runner = self._runner(proposer)
        try:
            outcome = attempt_safely(runner, spec)
        finally:
            runner.close()
        return outcome


def _outputs(result: CommandResult, files: Mapping[str, bytes]) -> dict[str, Any]:
    """What a command's output and kept files say, where their format is known."""
    from dreamrsi.engine.outputs import parse_outputs

    found = parse_outputs(result.stdout, files)
    return {"outputs": found} if found else {}

