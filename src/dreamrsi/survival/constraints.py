"""The hard constraints of a survival pass: protected paths unchanged from the base, and the
task's ``[survival] commands`` passing on a fresh checkout of the candidate (network off).
A strong score never makes up for a failed one."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from dreamrsi.engine.commands import bounded_command, command_event, dream_env
from dreamrsi.engine.sandboxing import base_env, proposer_isolation
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.survival.findings import Check, Finding, Reason
from dreamrsi.survival.measure import Side, offline
from dreamrsi.survival.workbench import Workbench
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import TreeEntry

__all__ = ["command_findings", "protected_changes", "protected_findings"]

_TAIL = 1500
_SHOWN = 1000


def _under(path: str, protected: str) -> bool:
    return path == protected or path.startswith(protected + "/")


def protected_changes(base: Mapping[str, TreeEntry], candidate: Mapping[str, TreeEntry],
                      protected: tuple[str, ...]) -> list[str]:
    """Every path at or under a protected path whose tree entry (mode and blob id) differs
    between the two trees, either way: changed, added, removed, or turned into a link."""
    roots = [p.strip("/") for p in protected if p.strip("/")]
    paths = {p for p in (*base, *candidate) if any(_under(p, r) for r in roots)}
    return sorted(p for p in paths if base.get(p) != candidate.get(p))


def protected_findings(bench: Workbench, base_commit: str, candidate: Side,
                       task: Task) -> tuple[list[Finding], str]:
    """PROTECTED_CHANGED naming every protected path the candidate's commit changed, and the
    ledger row of the comparison (an in-process step, recorded as the pass's)."""
    repo = bench.store.workspaces
    protected = task.constraints.protected_paths
    changed = protected_changes(repo.tree(base_commit, []), repo.tree(candidate.commit, []),
                                protected)
    row = bench.record(LedgerEvent(
        Actor.SURVIVAL, "compare protected paths", exit=1 if changed else 0,
        commit=candidate.commit, parsed={"base_commit": base_commit,
                                         "protected_paths": list(protected),
                                         "changed": changed[:_SHOWN], "count": len(changed)},
        node_id=candidate.node_id), check="constraints", role="candidate")
    if not changed:
        return [], row
    shown = ", ".join(changed[:20]) + (f" and {len(changed) - 20} more" if len(changed) > 20
                                       else "")
    return [Finding(Check.CONSTRAINTS, Reason.PROTECTED_CHANGED,
                    f"the candidate changed protected paths: {shown}", True,
                    paths=tuple(changed), rows=(row,))], row


def command_findings(bench: Workbench, task: Task, mode: IsolationMode,
                     candidate: Side) -> tuple[list[Finding], list[dict[str, object]]]:
    """Run each ``[survival] commands`` entry on its own fresh checkout of the candidate, in
    the sandbox with the network off; COMMAND_FAILED for each that does not exit 0. Returns
    the findings and, per command, its exit and ledger row."""
    task = offline(task)
    spec = task.survival
    findings: list[Finding] = []
    claims: list[dict[str, object]] = []
    for index, command in enumerate(spec.commands):
        view, io = bench.checkout(candidate.commit)
        env = {**base_env(task, io),
               **dream_env(candidate.node_id, candidate.run_id, candidate.context)}
        result = bounded_command(command, spec.timeout_s, view,
                                 proposer_isolation(task, mode, view, io), env,
                                 task.constraints, deadline=None, cancel=threading.Event())
        assert result is not None  # no deadline, never cancelled
        row = bench.record(command_event(Actor.SURVIVAL, result, candidate.commit,
                                         candidate.node_id, bench.store.blobs),
                           check="command", role="candidate", index=index)
        ok = result.exit_code == 0 and not result.timed_out
        claims.append({"command": command, "exit": result.exit_code,
                       "timed_out": result.timed_out, "passed": ok, "rows": [row]})
        if not ok:
            why = "timed out" if result.timed_out else f"exited {result.exit_code}"
            tail = (result.stdout + result.stderr).strip()[-_TAIL:]
            findings.append(Finding(Check.CONSTRAINTS, Reason.COMMAND_FAILED,
                                    f"`{command}` {why} on the candidate; output tail: {tail}",
                                    True, rows=(row,)))
    return findings, claims
