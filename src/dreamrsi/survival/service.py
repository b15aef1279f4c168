"""The survival service: one pass of a node against a base, recorded from start to verdict.

:func:`survive` records the pass as ``running``, measures (the evaluator on base and candidate,
interleaved, on fresh checkouts, network off), checks the hard constraints and fresh
instances, runs the further checks (:data:`CHECKS`), then writes the report files and, in one
store write, the verdict and the report. A pass killed before that stays ``running``; running
it again starts a new pass.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.engine.run import attempt_seed, recorded_task
from dreamrsi.engine.sandboxing import resolve_isolation
from dreamrsi.errors import ConfigError, NotFound, SandboxError
from dreamrsi.sandbox import IsolationMode, isolation_problem
from dreamrsi.store.base import RecordStore, RunsStore, RunStore, StoreHandle
from dreamrsi.store.ledger import Actor
from dreamrsi.store.survival import PASS_RUNNING
from dreamrsi.store.values import RunRecord, SurvivalPass
from dreamrsi.survival.adversarial import static_findings
from dreamrsi.survival.constraints import command_findings, protected_findings
from dreamrsi.survival.findings import Check, Finding, Reason, Verdict, verdict_of
from dreamrsi.survival.judge import fresh_findings, reproduce_findings, reproduces
from dreamrsi.survival.measure import Measurement, Side, interleaved, measure_once, offline
from dreamrsi.survival.report import DIFF_BYTES, build_report, write_report
from dreamrsi.survival.review import figures_of, review_findings
from dreamrsi.survival.stats import Delta
from dreamrsi.survival.workbench import Workbench
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import GitFailed, WorkspaceRepo

__all__ = ["CHECKS", "PassOutcome", "StaticCheck", "default_out", "survive"]

StaticCheck = Callable[[WorkspaceRepo, str, str, Task], list[Finding]]
"""A further check of the candidate's commit against the base's: (repository, base commit,
candidate commit, task) to findings."""

CHECKS: tuple[StaticCheck, ...] = (static_findings,)
"""The further checks every pass runs: the static adversarial checks of tests, the evaluator,
its data, dependencies and configuration
(:func:`~dreamrsi.survival.adversarial.static_findings`)."""


@dataclass(frozen=True, slots=True)
class PassOutcome:
    """A finished pass: its record, its verdict, and where its report files are."""

    record: SurvivalPass
    verdict: Verdict
    findings: tuple[Finding, ...]
    report: dict[str, Any]
    files: tuple[Path, ...]


def default_out(store_root: Path, pass_id: str) -> Path:
    """Where a pass's report goes unless ``--out`` says: ``survival-PASS`` beside the store's
    folder."""
    return store_root.absolute().parent / f"survival-{pass_id}"


def survive(store: RunStore, run_id: str, node_id: str | None = None, *,
            base: str | None = None, repeats: int | None = None,
            isolation: str | None = None, accept_unisolated_model_code: bool = False,
            out: Path | None = None, checks: Sequence[StaticCheck] | None = None,
            progress: Callable[[str], None] | None = None) -> PassOutcome:
    """Run one survival pass of ``node_id`` (default: the run's best node) against ``base``
    (``ROOT``, the default; a node id; or a commit) and record it.

    Raises:
        NotFound: The run, node or base does not exist, or the run has no valid node.
        ConfigError: The task changed since the run, or a setting is out of range.
    """
    run = store.get_run(run_id)
    task = recorded_task(store, run, "a survival pass judges the task the run searched")
    node = _node_of(store, run, node_id)
    base_node, base_commit = _base_of(store, run, base)
    if node.commit is None:
        raise ConfigError(f"node {node.node_id} has no workspace commit to check")
    count = task.survival.repeats if repeats is None else repeats
    if not 1 <= count <= 100:
        raise ConfigError(f"repeats must be 1 to 100, not {count}", key="repeats")
    try:
        mode = resolve_isolation(task, isolation,
                                 accept_unisolated_model_code=accept_unisolated_model_code)
    except SandboxError:  # a model's code must run isolated, and cannot here: the pass says so
        mode = IsolationMode.REQUIRED
    pass_id = "s" + secrets.token_hex(4)
    out = out or default_out(Path(_store_root(store)), pass_id)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ConfigError(f"--out {out} is not a folder", key="--out")
    config = {"repeats": count, "base": base or "ROOT", "isolation": mode.value,
              "tolerance": task.survival.tolerance,
              "relative_tolerance": task.survival.relative_tolerance}
    record = SurvivalPass(pass_id, run.run_id, node.node_id, node.commit, base_commit,
                          PASS_RUNNING, config, time.time())
    store.create_pass(record)
    bench = Workbench(store, task, pass_id, run.run_id)
    try:
        work = _Pass(bench, task, mode, run, node, base_node, base_commit, count,
                     progress or (lambda _: None))
        findings = work.check(CHECKS if checks is None else checks)
        verdict = verdict_of(findings)
        report = build_report(work, record, findings, verdict)
        finished = time.time()
        store.finish_pass(pass_id, status=verdict.value, report=report, finished_at=finished)
    finally:
        bench.close()
    try:
        files = write_report(report, out)
    except OSError as exc:
        raise ConfigError(f"pass {pass_id} {verdict.value.replace('_', ' ')} (its report is "
                          f"stored with it), but its report files cannot be written into "
                          f"{out}: {exc.strerror or exc}", key="--out") from None
    done = record._replace(status=verdict.value, report=report, finished_at=finished)
    return PassOutcome(done, verdict, tuple(findings), report, files)


def _store_root(store: StoreHandle) -> str:
    root = getattr(store, "root", None)
    return str(root) if root is not None else store.location.removeprefix("memory:")


def _node_of(store: RunsStore, run: RunRecord, node_id: str | None) -> Node:
    if node_id is None:
        best = store.counts(run.run_id).best_node
        if best is None:
            raise NotFound(f"run {run.run_id} has no valid scored node to check")
        return store.get_node(best)
    node = store.get_node(node_id)
    if node.run_id != run.run_id:
        raise NotFound(f"node {node_id} is not a node of run {run.run_id}")
    return node


def _base_of(store: RunsStore, run: RunRecord, base: str | None) -> tuple[Node | None, str]:
    """The base node (None for a bare commit) and its commit."""
    if base is None or base.upper() == "ROOT":
        root = store.nodes(run.run_id)[0]
        if root.commit is None:
            raise NotFound(f"the root of run {run.run_id} has no workspace commit")
        return root, root.commit
    try:
        node = store.get_node(base)
    except NotFound:
        try:
            return None, store.workspaces.resolve(base)
        except Exception as exc:  # noqa: BLE001 - git's own message
            raise NotFound(f"--base {base} is neither ROOT, a node nor a commit of the "
                           f"store: {exc}") from None
    if node.commit is None:
        raise NotFound(f"base node {node.node_id} has no workspace commit")
    return node, node.commit


class _Pass:
    """The measuring part of one pass; :func:`build_report` reads what it kept."""

    def __init__(self, bench: Workbench, task: Task, mode: IsolationMode, run: RunRecord,
                 node: Node, base_node: Node | None, base_commit: str, repeats: int,
                 say: Callable[[str], None]) -> None:
        self.bench, self.task, self.mode, self.record, self.node = bench, task, mode, run, node
        self.base_node, self.base_commit, self.repeats, self.say = (base_node, base_commit,
                                                                     repeats, say)
        context = {"seed": attempt_seed(run.seed, node.seq)}
        self.candidate = Side("candidate", node.commit or "", node.node_id, run.run_id, context)
        # the base is judged on the candidate's instance, so each pair compares like with like
        self.base = Side("base", base_commit, node.node_id, run.run_id, context)
        self.isolated = mode is not IsolationMode.OFF and isolation_problem() is None
        self.measurements: list[Measurement] = []
        self.delta: Delta | None = None
        self.fresh_delta: Delta | None = None
        self.commands: list[dict[str, object]] = []
        self.protected_row = ""
        self.recorded_row = _eval_row(bench.store, node)
        self.notes: list[str] = []

    def check(self, checks: Sequence[StaticCheck]) -> list[Finding]:
        """Every check, in order; the findings (a workspace operation that fails ends the
        pass as could not run, with why)."""
        try:
            return self._checks(checks)
        except (GitFailed, OSError) as exc:
            return [Finding(Check.RUN, Reason.COULD_NOT_RUN,
                            f"a workspace operation of the pass failed: {exc}", False)]

    def _checks(self, checks: Sequence[StaticCheck]) -> list[Finding]:
        if self.mode is IsolationMode.REQUIRED and not self.isolated:
            return [Finding(Check.RUN, Reason.COULD_NOT_RUN,
                            f"the task requires isolation and {isolation_problem()}", False)]
        found = self._untested()
        found += self._reproduce()
        found += self._network(found)
        protected, self.protected_row = protected_findings(self.bench, self.base_commit,
                                                           self.candidate, self.task)
        found += protected
        if self.task.survival.commands:
            self.say(f"[survival] commands: {len(self.task.survival.commands)}")
        cmd_found, self.commands = command_findings(self.bench, self.task, self.mode,
                                                    self.candidate)
        found += cmd_found
        found += self._fresh()
        repo = self.bench.store.workspaces
        for check in checks:
            try:
                found += check(repo, self.base_commit, self.candidate.commit, self.task)
            except Exception as exc:  # noqa: BLE001 - a check that cannot judge stops a verdict
                name = getattr(check, "__name__", repr(check))
                found.append(Finding(Check.RUN, Reason.COULD_NOT_RUN,
                                     f"the check {name} failed: {type(exc).__name__}: "
                                     f"{str(exc)[:500]}", False))
        if self.task.survival.review is not None:
            self.say("reviewer")
            diff, _ = repo.diff(self.base_commit, self.candidate.commit, DIFF_BYTES)
            found += review_findings(self.bench, self.task, self.mode, self.candidate, diff,
                                     figures_of(found, self.delta))
        return found

    def _untested(self) -> list[Finding]:
        if self.isolated:
            return []
        why = ("isolation is off" if self.mode is IsolationMode.OFF
               else f"bubblewrap is unavailable ({isolation_problem()})")
        return [Finding(Check.REPRODUCE, Reason.UNTESTED,
                        f"{why}: the commands ran unisolated, so a clean sandbox was not "
                        "tested", False),
                Finding(Check.NETWORK, Reason.UNTESTED,
                        f"{why}: the commands had the host's network, so whether the result "
                        "needs the network was not tested", False)]

    def _reproduce(self) -> list[Finding]:
        task = offline(self.task)
        self.say(f"evaluator: {self.repeats} repeat(s) each of base and candidate")
        # repeat 1 as the search ran it (the claim as recorded); each later one under a new
        # seed and attempt id, the same for both sides: a score drawn from $DREAM_SEED or
        # $DREAM_ATTEMPT_ID (the search kept the luckiest draw) spreads like other noise
        seeds = {0: self.candidate.context["seed"]}

        def one(side: Side, i: int) -> Measurement:
            if i not in seeds:
                seeds[i] = _new_seed(self._used_seeds() | set(seeds.values()))
            reseeded = dataclasses.replace(side, context={**side.context, "seed": seeds[i]})
            env = {"DREAM_ATTEMPT_ID": f"{side.node_id}.r{i}"} if i else None
            return measure_once(self.bench, task, self.mode, reseeded, kind="evaluate",
                                repeat=i, env=env)

        ms = interleaved(self.repeats, self.base, self.candidate, one)
        self.measurements += ms
        found, self.delta = reproduce_findings(ms, self.node.raw_score, self.recorded_row,
                                               self.task.survival.allowed_error)
        return found

    def _network(self, found: list[Finding]) -> list[Finding]:
        """If the search had the network and the candidate did not reproduce without it, one
        run with it: reproducing then means the result needs the network."""
        failed = {Reason.NOT_REPRODUCED, Reason.CANDIDATE_INVALID}
        if not (self.task.constraints.network and self.isolated
                and any(f.reason in failed for f in found)):
            return []
        self.say("evaluator with the network")
        m = measure_once(self.bench, self.task, self.mode, self.candidate, kind="network",
                         repeat=0)
        self.measurements.append(m)
        if reproduces([m], self.node.raw_score, self.task.survival.allowed_error):
            return [Finding(Check.NETWORK, Reason.NEEDS_NETWORK,
                            f"the candidate reproduces ({m.raw_score}) only with the network",
                            True, rows=(m.row,))]
        return []

    def _used_seeds(self) -> set[int]:
        """The run's seed and every attempt's: seeds the search saw."""
        return {attempt_seed(self.record.seed, n.seq)
                for n in self.bench.store.nodes(self.record.run_id)} | {self.record.seed}

    def _fresh(self) -> list[Finding]:
        spec = self.task.survival
        if spec.fresh is None:
            self.notes.append("the task names no fresh-instance command: the evaluator re-run "
                              "on clean checkouts is the independent check")
            return []
        fresh_task = dataclasses.replace(offline(self.task), evaluator=spec.fresh)
        used = self._used_seeds()
        self.say(f"fresh instances: {self.repeats} each")
        seeds: dict[int, int] = {}

        def one(side: Side, i: int) -> Measurement:
            if i not in seeds:
                seeds[i] = _new_seed(used | set(seeds.values()))
            return measure_once(self.bench, fresh_task, self.mode, side, kind="fresh",
                                repeat=i, env={"DREAM_FRESH_SEED": str(seeds[i])},
                                fresh_seed=seeds[i])

        ms = interleaved(self.repeats, self.base, self.candidate, one)
        self.measurements += ms
        claimed = self.delta.mean if self.delta is not None else None
        found, self.fresh_delta = fresh_findings(ms, claimed, spec.allowed_error)
        return found


def _new_seed(used: set[int]) -> int:
    while True:
        seed = int.from_bytes(os.urandom(4), "big") & 0x7FFFFFFF
        if seed not in used:
            return seed


def _eval_row(store: RecordStore, node: Node) -> str:
    """The search's own evaluator row of ``node`` (the recorded score's evidence)."""
    for row in store.node_ledger(node.node_id):
        if row.event.actor is Actor.EVAL and row.event.admissible:
            return row.event.event_id
    return ""
