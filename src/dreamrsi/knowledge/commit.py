"""What passed the gate, as a branch or a patch of the user's config repository, and the
summary a person reads in minutes.

The commits are made in the scratch clone (detached at the config's HEAD): one per accepted
proposal, in the gate's order, its message the rule, the numbers and the source traces. A
branch ``dreamrsi/learn-YYYYMMDD-N`` (the first free N) then holds them, with a last, empty
commit whose message is the summary; it is fetched into the user's repository as a new ref
only, so the checked-out branch, HEAD, index and working tree are never touched and nothing
merges by itself. With ``--patch FILE`` the commits are written to FILE instead (``git am``
applies it) and the summary beside it, as ``FILE.summary.md``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from pathlib import Path

from dreamrsi.knowledge.config_repo import RepoConfig, apply_proposal, git
from dreamrsi.knowledge.gate import Decision, GateResult, Revalidation, rule_text

__all__ = ["BRANCH_PREFIX", "commit_branch", "summary", "write_patch"]

BRANCH_PREFIX = "dreamrsi/learn-"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _clean(text: str) -> str:
    return _CONTROL.sub("?", text)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _message(d: Decision, result: GateResult) -> str:
    rule = _clean(rule_text(d.proposal))
    title = rule if len(rule) <= 64 else rule[:61] + "..."
    s = d.scores
    assert s is not None
    return "\n".join((
        f"learn: {title}", "", f"Rule: {rule}", f"Changes: {_clean(d.path)}",
        f"Held-out objective: {result.baseline.objective:.4g} (baseline) -> "
        f"{s.objective:.4g} (night {result.night}, part {result.part + 1} of {result.parts})",
        f"Held-out pass rate: {_pct(result.baseline.pass_rate)} -> {_pct(s.pass_rate)}",
        f"Canaries: {len(s.canaries)} unchanged; floor: "
        f"{'holds' if not s.floor_failures else '; '.join(s.floor_failures)}",
        f"Sources: {_clean(', '.join(d.proposal.sources)) or 'none'}",
        f"Distiller: {_clean(d.proposal.distiller)}; lesson {d.lesson_id}"))


def summary(result: GateResult, *, head: str, model: str,
            revalidated: Sequence[Revalidation] = (), tokens: tuple[int, int] = (0, 0)) -> str:
    """The night's summary, in Markdown."""
    accepted = [d for d in result.decisions if d.accepted]
    rejected = [d for d in result.decisions if not d.accepted]
    b, f = result.baseline, result.final
    lines = [f"# dreamrsi learn, night {result.night}", "",
             f"Config HEAD {head[:12]}, agent model {_clean(model) or '(unnamed)'}; held-out "
             f"part {result.part + 1} of {result.parts}.", "",
             f"Held-out objective {b.objective:.4g} -> {f.objective:.4g}; pass rate "
             f"{_pct(b.pass_rate)} -> {_pct(f.pass_rate)}. Proposals {len(result.decisions)}, "
             f"accepted {len(accepted)}, rejected {len(rejected)}; model tokens "
             f"{tokens[0]} in, {tokens[1]} out.", "", f"## Accepted ({len(accepted)})", ""]
    for d in accepted:
        lines.append(f"- {_clean(rule_text(d.proposal))} ({_clean(d.path)}; {d.why}; "
                     f"sources {_clean(', '.join(d.proposal.sources)) or 'none'})")
    lines += ["", f"## Rejected ({len(rejected)})", ""]
    for d in rejected:
        assert d.rejection is not None
        lines.append(f"- [{d.rejection.value}] {_clean(rule_text(d.proposal))}: "
                     f"{_clean(d.why)}")
    if revalidated:
        lines += ["", "## Re-validated after the model changed", ""]
        lines += [f"- {r.state}: {_clean(r.text)} ({r.why})" + (
            "; remove its row from the lessons file" if r.state == "ARCHIVED" else "")
            for r in revalidated]
    lines += ["", "Nothing is merged: review the changes, then merge them or delete them.", ""]
    return "\n".join(lines)


def _commit_all(clone: Path, cfg: RepoConfig, result: GateResult) -> int:
    """Commit each accepted proposal in the clone; how many."""
    n = 0
    for d in result.decisions:
        if d.accepted:
            path = apply_proposal(clone, d.proposal, cfg)
            git(clone, "add", "--", path)
            git(clone, "commit", "-q", "-m", _message(d, result))
            n += 1
    return n


def commit_branch(repo: Path, clone: Path, cfg: RepoConfig, result: GateResult, text: str, *,
                  today: datetime.date | None = None) -> str | None:
    """Make the branch of what passed in the user's repository ``repo``; its name (None
    when nothing passed)."""
    if not _commit_all(clone, cfg, result):
        return None
    git(clone, "commit", "-q", "--allow-empty", "-m", _clean(text))
    stem = f"{BRANCH_PREFIX}{(today or datetime.date.today()):%Y%m%d}-"
    taken = set(git(repo, "for-each-ref", "--format=%(refname:short)",
                    f"refs/heads/{BRANCH_PREFIX.rstrip('-')}*").split())
    n = 1
    while f"{stem}{n}" in taken:
        n += 1
    branch = f"{stem}{n}"
    git(repo, "fetch", "-q", "--no-tags", "--no-write-fetch-head", str(clone.resolve()),
        f"HEAD:refs/heads/{branch}")
    return branch


def write_patch(clone: Path, cfg: RepoConfig, result: GateResult, text: str,
                patch: Path, *, head: str) -> bool:
    """Write what passed as a patch (``git am`` applies it) and the summary beside it;
    whether anything passed (nothing is written otherwise but the summary)."""
    made = _commit_all(clone, cfg, result)
    patch.with_name(patch.name + ".summary.md").write_text(text)
    if made:
        patch.write_text(git(clone, "format-patch", "--stdout", f"{head}..HEAD"))
    return bool(made)
