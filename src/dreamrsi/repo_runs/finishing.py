"""Finishing a Dream Run's work: merge a dream into another, submit a checkpoint to the
survival gate, export a survivor to the user's repository.

A merge is computed in the store's own git repository (``git merge-tree --write-tree``),
never in a working copy (sandboxed commands wrote those). A submission is one survival pass
(:func:`dreamrsi.survival.service.survive`) of the dream's head against the run's root, the
user's ``HEAD``. An export writes a new branch, or a patch file, from a checkpoint that
survived; the user's checkout, index, ``HEAD`` and other branches are never written
(:mod:`._exporting`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs._exporting import (
    changed_paths,
    check_branch,
    check_patch_target,
    commit_tree,
    merge_tree,
    write_branch,
    write_patch,
)
from dreamrsi.repo_runs.copies import replace_files
from dreamrsi.repo_runs.journal import record
from dreamrsi.repo_runs.opening import MAX_TEXT
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import DreamKind, DreamState, DreamStatus, EventKind, WorkState
from dreamrsi.survival.findings import Reason, Verdict
from dreamrsi.survival.service import PassOutcome, survive
from dreamrsi.workspace.git import GitCall

__all__ = ["export", "lineage", "merge", "merge_base", "submit"]

_SHOWN_PATHS = 20


# -- merge -----------------------------------------------------------------------------------

def merge(session: Session, dream_id: str, into: str, message: str = "") -> Node:
    """Merge the head of ``dream_id`` into the head of ``into`` (three-way, from the latest
    checkpoint both descend from: where ``dream_id`` started, when it forked from ``into``'s
    line; :func:`merge_base`): the merged files become ``into``'s working copy and its new
    checkpoint, recorded with the ``merge`` event in one transaction; ``dream_id`` ends as
    ``merged``.

    Raises:
        ConfigError: A shadow (its answer returns with ``answer``), a dream with no
            checkpoint, either dream with changes not checkpointed, or a conflict (naming the
            conflicted paths); nothing is written then.
    """
    state = session.state()
    source = state.live_dream(dream_id)
    target = state.live_dream(into)
    if source.kind is DreamKind.SHADOW:
        raise ConfigError(f"dream {dream_id} is a shadow: its answer returns to its parent "
                          f"with `answer`; a shadow's files are never merged", key="DREAM")
    if source.dream_id == target.dream_id:
        raise ConfigError(f"dream {dream_id} cannot be merged into itself", key="--into")
    if not source.checkpoints:
        raise ConfigError(f"dream {dream_id} has no checkpoint to merge (checkpoint it first)",
                          key="DREAM")
    if len(message) > MAX_TEXT:
        raise ConfigError(f"the message is longer than {MAX_TEXT} characters", key="--message")
    _require_checkpointed(session, source, "merging it")
    git_dir = session.store.workspaces.git_dir
    base = session.node(merge_base(state, source, target)).commit or ""
    ours = session.node(target.head_node).commit or ""
    theirs = session.node(source.head_node).commit or ""
    merged = _three_way(git_dir, base, ours, theirs, f"{dream_id} into {into}")
    # a merge whose files went in before the process died goes on from there
    _require_checkpointed(session, target, "merging into it", also=merged)
    calls: list[GitCall] = []
    replace_files(session.working_copy(target), session.store.workspaces, merged,
                  session.folders.dream(into) / "merge", calls)
    text = message or f"merge {dream_id} ({source.head_node}) into {into}"
    return session.checkpoint(into, text, merge_of=dream_id)


def lineage(state: WorkState, dream: DreamState) -> list[str]:
    """The checkpoints a dream's files descend from, oldest first: the root, its ancestors'
    checkpoints up to where each forked, and its own."""
    parts = [list(dream.checkpoints)]
    start, d = dream.start_node, dream
    while d.parent is not None:
        parent = state.dream(d.parent)
        own = list(parent.checkpoints)
        parts.append(own[:own.index(start) + 1] if start in own else [])
        start, d = parent.start_node, parent
    return [state.root_node, *(n for part in reversed(parts) for n in part)]


def merge_base(state: WorkState, source: DreamState, target: DreamState) -> str:
    """The latest checkpoint both dreams descend from: ``source``'s start when it forked from
    ``target``'s line (a dream merged back into where it came from), else where their lines
    parted (sisters; a parent merged into its child)."""
    theirs = set(lineage(state, target))
    return next(n for n in reversed(lineage(state, source)) if n in theirs)


def _three_way(git_dir: Path, base: str, ours: str, theirs: str, what: str) -> str:
    """The commit (a child of ``ours``) of the merge of ``theirs`` into ``ours`` from
    ``base``; ``ConfigError`` listing the conflicted paths.

    ``merge-tree`` finds its own merge base; each side is given as a commit of its tree
    whose parent is a commit of ``base``'s tree, so the base is ``base`` whatever the
    checkpoints' own history (a dream's first checkpoint hangs from the root)."""
    b = commit_tree(git_dir, f"{base}^{{tree}}", (), "merge base")
    o = commit_tree(git_dir, f"{ours}^{{tree}}", (b,), "ours")
    t = commit_tree(git_dir, f"{theirs}^{{tree}}", (b,), "theirs")
    tree, conflicted = merge_tree(["--git-dir", str(git_dir)], o, t)
    if conflicted:
        raise ConfigError(f"merging {what} conflicts in {_list(conflicted)}: nothing was "
                          "merged (resolve it in one dream's working copy, checkpoint, and "
                          "merge again)", key="DREAM")
    return commit_tree(git_dir, tree, (ours,), f"merge {what}")


# -- submit ----------------------------------------------------------------------------------

def submit(session: Session, dream_id: str, *, repeats: int | None = None,
           isolation: str | None = None, accept_unisolated_model_code: bool = False,
           out: Path | None = None) -> dict[str, Any]:
    """The survival gate on the dream's head checkpoint, against the run's root (the user's
    ``HEAD``): the dream is ``candidate`` during the pass, stays one when it survives (and is
    listed in the run's survivors), and is ``active`` again when it fails or the pass could
    not judge, with the reasons in the ``submit`` event.

    Returns:
        The dream, node, pass id, verdict, reasons, the measured delta with its 95 %
        interval, the report files and the dream's status after.

    Raises:
        ConfigError: A shadow, a dream with no checkpoint or with changes not checkpointed,
            ``repeats`` out of 1 to 100; or the pass itself refused (recorded as
            ``could_not_run``, the dream back to ``active``).
    """
    if repeats is not None and not 1 <= repeats <= 100:
        raise ConfigError(f"repeats must be 1 to 100, not {repeats}", key="--repeats")
    state = session.state()
    dream = state.live_dream(dream_id)
    if dream.kind is DreamKind.SHADOW:
        raise ConfigError(f"dream {dream_id} is a shadow: it answers its question (answer "
                          "it); only a primary or alternative dream is submitted", key="DREAM")
    if not dream.checkpoints:
        raise ConfigError(f"dream {dream_id} has no checkpoint to submit: checkpoint it first",
                          key="DREAM")
    _require_checkpointed(session, dream, "submitting it")
    node = session.node(dream.head_node)
    if state.closed is None and dream.status is DreamStatus.ACTIVE:
        record(session.store, session.run_id, EventKind.STATUS,
               {"dream": dream_id, "status": DreamStatus.CANDIDATE.value})
    try:
        outcome = survive(session.store, session.run_id, node.node_id, base="ROOT",
                          repeats=repeats, isolation=isolation, out=out,
                          accept_unisolated_model_code=accept_unisolated_model_code)
    except Exception as exc:
        _submitted(session, dream_id, node, {
            "pass_id": None, "verdict": Verdict.COULD_NOT_RUN.value,
            "reasons": [f"the pass did not finish: {exc}"], "report": None, "delta": None})
        raise
    summary = _summary(outcome)
    status = _submitted(session, dream_id, node, summary)
    return {"dream": dream_id, "node": node.node_id, **summary,
            "report_files": [str(p) for p in outcome.files], "status": status}


def _summary(outcome: PassOutcome) -> dict[str, Any]:
    reasons = [f"{f.reason.value}: {f.message}" for f in outcome.findings
               if (f.fails and f.admissible) or f.reason is Reason.COULD_NOT_RUN]
    delta = outcome.report.get("claims", {}).get("delta")
    report = next((str(p) for p in outcome.files if p.suffix == ".json"), None)
    return {"pass_id": outcome.record.pass_id, "verdict": outcome.verdict.value,
            "reasons": reasons, "report": report,
            "delta": None if delta is None else {k: delta.get(k) for k in
                                                 ("mean", "low", "high", "confidence")}}


def _submitted(session: Session, dream_id: str, node: Node, summary: dict[str, Any]) -> str:
    """Record the ``submit`` event and, unless it survived, the dream's return to
    ``active``, in one transaction; the dream's status after."""
    with session.store.atomic():
        _, state = record(session.store, session.run_id, EventKind.SUBMIT,
                          {"dream": dream_id, "node": node.node_id, "commit": node.commit,
                           **summary}, node_id=node.node_id)
        dream = state.dream(dream_id)
        if (summary["verdict"] != Verdict.SURVIVED.value and state.closed is None
                and dream.status is DreamStatus.CANDIDATE):
            _, state = record(session.store, session.run_id, EventKind.STATUS,
                              {"dream": dream_id, "status": DreamStatus.ACTIVE.value,
                               "reason": f"submission {summary['verdict']}"})
    return state.dream(dream_id).status.value


# -- export ----------------------------------------------------------------------------------

def export(session: Session, dream_id: str, *, branch: str | None = None,
           patch: Path | None = None, force: bool = False,
           at: str | None = None) -> dict[str, Any]:
    """Export a checkpoint of ``dream_id`` (default: its head, else ``at``) that survived:
    ``branch``, a new branch of the user's repository whose one commit is the user's ``HEAD``
    at open (its parent) with the changes from the root to the checkpoint made on it (the
    checkpoint's own files where the root's are ``HEAD``'s); ``patch``, a binary ``git diff``
    of the root against the checkpoint written to that file. ``force`` exports a checkpoint
    that did not survive (recorded as forced) and replaces an existing patch file.

    Raises:
        ConfigError: Neither ``branch`` nor ``patch``; a checkpoint that did not survive
            (without ``force``); one with the root's files; an invalid or existing branch;
            an existing patch file (without ``force``). Nothing is written then.
    """
    if branch is None and patch is None:
        raise ConfigError("name where to export: --branch NAME or --patch FILE",
                          key="--branch")
    state = session.state()
    dream = state.dream(dream_id)
    node = _export_node(session, dream, at)
    last = next((s for s in reversed(state.submissions) if s.get("node") == node.node_id),
                None)
    survived = last is not None and last.get("verdict") == Verdict.SURVIVED.value
    if not survived and not force:
        said = ("was never submitted" if last is None else
                f"did not survive: pass {last.get('pass_id')} {last.get('verdict')}")
        raise ConfigError(f"checkpoint {node.node_id} of dream {dream_id} {said}; submit it "
                          "(`dreamrsi submit`), or --force to export it anyway (recorded as "
                          "forced)", key="--force")
    git_dir = session.store.workspaces.git_dir
    root = session.node(state.root_node).commit or ""
    if not changed_paths(git_dir, root, node.commit or ""):
        raise ConfigError(f"checkpoint {node.node_id} has the files of the repository's HEAD: "
                          "nothing to export", key="DREAM")
    repo = Path(state.repo)
    name = None if branch is None else check_branch(repo, branch)
    target = None if patch is None else check_patch_target(patch, force)
    done: dict[str, Any] = {"dream": dream_id, "node": node.node_id, "commit": node.commit,
                            "pass_id": None if last is None else last.get("pass_id"),
                            "verdict": None if last is None else last.get("verdict"),
                            "forced": not survived}
    if name is not None:
        done["branch"] = name
        done["branch_commit"] = write_branch(git_dir, repo, root, node.commit or "",
                                             state.head, name,
                                             _message(state, dream_id, node, done))
    if target is not None:
        done["patch"] = str(target)
        done["patch_bytes"] = write_patch(git_dir, root, node.commit or "", target, force)
    record(session.store, session.run_id, EventKind.EXPORT, done, node_id=node.node_id)
    return done


def _export_node(session: Session, dream: DreamState, at: str | None) -> Node:
    if not dream.checkpoints:
        raise ConfigError(f"dream {dream.dream_id} has no checkpoint to export", key="DREAM")
    node = session.node(dream.head_node if at is None else at)
    if node.node_id not in dream.checkpoints:
        raise ConfigError(f"{node.node_id} is not a checkpoint of dream {dream.dream_id} (its "
                          f"checkpoints: {', '.join(dream.checkpoints)})", key="--at")
    return node


def _message(state: WorkState, dream_id: str, node: Node, done: dict[str, Any]) -> str:
    title = state.objective.strip().splitlines()[0][:200]
    judged = ("exported without surviving (--force)" if done["forced"] else
              f"survived survival pass {done['pass_id']}")
    return (f"dreamrsi: {title}\n\nDream Run {state.run_id}, dream {dream_id}, checkpoint "
            f"{node.node_id}: {judged}.\n\nObjective: {state.objective.strip()}\n")


# -- shared ----------------------------------------------------------------------------------

def _require_checkpointed(session: Session, dream: DreamState, doing: str,
                          also: str | None = None) -> None:
    """Refuse when the dream's working copy differs from its head checkpoint (and from the
    commit ``also``, when given)."""
    git_dir = session.store.workspaces.git_dir
    head = session.node(dream.head_node).commit or ""
    snapshot = session.snapshot(dream)
    changed = changed_paths(git_dir, head, snapshot)
    if changed and also is not None and not changed_paths(git_dir, also, snapshot):
        return
    if changed:
        raise ConfigError(f"dream {dream.dream_id} has changes not checkpointed "
                          f"({_list(changed)}): checkpoint them (or revert them) before "
                          f"{doing}", key="DREAM")


def _list(paths: list[str]) -> str:
    shown = ", ".join(paths[:_SHOWN_PATHS])
    more = len(paths) - _SHOWN_PATHS
    return shown + (f" and {more} more" if more > 0 else "")
