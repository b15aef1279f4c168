"""The nightly job: sync, distill, gate, commit, report (``dreamrsi learn``).

1. Clone the config repository's HEAD (never its checkout) and read ``dreamrsi.toml``.
2. Sync: each VALIDATED lesson the HEAD now carries (its row in the lessons file, or its
   edit's new text in its file) becomes ACTIVE: the person merged it.
3. When the agent's model differs from the last night's, re-validate the pool
   (:func:`~dreamrsi.knowledge.gate.revalidate`).
4. Distill proposals from the accepted traces (:mod:`dreamrsi.knowledge.distill`, imported
   here only; a caller may pass proposals instead), gate them, and commit what passed as a
   branch (or a patch), with the summary.
5. Record the night (``learn.run``: its model, HEAD, every decision, the numbers).

A dry run clones, distills and gates the same way but records nothing and writes no branch
(a ``--patch`` it is given is still written: the person asked for that file).
"""

from __future__ import annotations

import datetime
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from dreamrsi.knowledge import configs, lifecycle, pool
from dreamrsi.knowledge.commit import commit_branch, summary, write_patch
from dreamrsi.knowledge.config_repo import (
    RepoConfig,
    editable_files,
    load_config,
    scratch_clone,
)
from dreamrsi.knowledge.configs import carried
from dreamrsi.knowledge.gate import GateResult, Revalidation, gate, judge_for, revalidate
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.proposal import Proposal
from dreamrsi.store.base import RunStore

if TYPE_CHECKING:
    from dreamrsi.agents.client import ModelClient
    from dreamrsi.knowledge.judge import RubricJudge

__all__ = ["LearnReport", "learn", "read_proposals", "sync_active"]


class LearnReport(NamedTuple):
    """What one night of learning did."""

    night: int
    head: str
    model: str
    gate: GateResult
    revalidated: tuple[Revalidation, ...]
    activated: tuple[str, ...]
    branch: str | None
    patch: str | None
    summary: str
    pool_size: int
    tokens: tuple[int, int]
    distill_errors: tuple[str, ...]
    dry_run: bool
    judge_tokens: tuple[int, int] = (0, 0)
    configs: tuple[str, ...] = ()  # the configs' lifecycle transitions recorded

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON data."""
        rejected: dict[str, int] = {}
        for d in self.gate.decisions:
            if d.rejection is not None:
                rejected[d.rejection.value] = rejected.get(d.rejection.value, 0) + 1
        return {
            "night": self.night, "head": self.head, "model": self.model,
            "dry_run": self.dry_run, "proposals": len(self.gate.decisions),
            "accepted": sum(1 for d in self.gate.decisions if d.accepted),
            "rejected": rejected,
            "heldout_part": [self.gate.part + 1, self.gate.parts],
            "baseline": self.gate.baseline.as_dict(), "final": self.gate.final.as_dict(),
            "decisions": [d.as_dict() for d in self.gate.decisions],
            "revalidated": [r._asdict() for r in self.revalidated],
            "activated": list(self.activated), "branch": self.branch, "patch": self.patch,
            "pool_size": self.pool_size, "tokens_in": self.tokens[0],
            "tokens_out": self.tokens[1], "judge_tokens_in": self.judge_tokens[0],
            "judge_tokens_out": self.judge_tokens[1], "unjudged": self.gate.unjudged,
            "distill_errors": list(self.distill_errors), "configs": list(self.configs),
        }


def sync_active(store: RunStore, clone: Path, cfg: RepoConfig) -> tuple[str, ...]:
    """Make ACTIVE each VALIDATED lesson the config's HEAD (``clone``) carries; their ids."""
    out = []
    for insight in pool.load_pool(store).values():
        if lifecycle.state_of(store, "lesson", insight.insight_id) != State.VALIDATED:
            continue
        if carried(store, insight.insight_id, clone, cfg, insight.text):
            lifecycle.transition(store, "lesson", insight.insight_id, State.ACTIVE,
                                 reason="the config repository's HEAD carries it")
            out.append(insight.insight_id)
    return tuple(out)


def _distill(store: RunStore, model: ModelClient | None, scope: str | None, night: int,
             clone: Path, cfg: RepoConfig) -> tuple[list[Proposal], tuple[int, int],
                                                    tuple[str, ...]]:
    """Proposals from :func:`dreamrsi.knowledge.distill.propose`, told the paths an edit may
    touch and shown their current text."""
    from dreamrsi.knowledge.distill import propose

    out = propose(store, model=model, scope=scope, seed=night, allowed=cfg.allowed,
                  files=editable_files(clone, cfg))
    return list(out.proposals), (out.tokens_in, out.tokens_out), tuple(out.errors)


def learn(store: RunStore, config: Path, *, proposals: Sequence[Proposal] | None = None,
          model: ModelClient | None = None, scope: str | None = None, night: int | None = None,
          dry_run: bool = False, patch: Path | None = None, isolation: str = "required",
          today: datetime.date | None = None, judge: RubricJudge | None = None) -> LearnReport:
    """One night of learning over the config repository ``config`` (module docstring);
    ``proposals`` given skip distilling, ``model`` is the distiller's ModelClient, ``judge``
    judges the rubric goldens (the model tokens reported are the distiller's and its).

    Raises:
        ConfigError: The config repository, its ``dreamrsi.toml`` or objective, or the
            goldens cannot gate, or the agent fails on the config's HEAD.
    """
    runs = store.knowledge_events(kind_prefix="learn.run")
    night = len(runs) if night is None else night
    last_model = str(runs[-1].payload.get("model", "")) if runs else None
    record = not dry_run
    with tempfile.TemporaryDirectory(prefix="dreamrsi-learn-") as folder:
        clone, head = scratch_clone(config, Path(folder))
        cfg = load_config(clone)
        activated = sync_active(store, clone, cfg) if record else ()
        config_lines = configs.sync(store, clone, cfg, head) if record else []
        tokens: tuple[int, int] = (0, 0)
        errors: tuple[str, ...] = ()
        if proposals is None:
            found, tokens, errors = _distill(store, model, scope, night, clone, cfg)
            proposals = found
        revalidated: tuple[Revalidation, ...] = ()
        if last_model is not None and last_model != cfg.agent.model:
            ablation, _ = judge_for(store, cfg, clone, night, isolation, judge)
            revalidated = revalidate(store, cfg, clone, ablation, old_model=last_model,
                                     record=record)
        result = gate(store, cfg, clone, proposals, night=night, isolation=isolation,
                      record=record, rubric=judge)
        judged = (judge.tokens_in, judge.tokens_out) if judge else (0, 0)
        tokens = (tokens[0] + judged[0], tokens[1] + judged[1])
        text = summary(result, head=head, model=cfg.agent.model, revalidated=revalidated,
                       tokens=tokens)
        branch = patch_out = None
        if patch is not None:
            if write_patch(clone, cfg, result, text, patch, head=head):
                patch_out = str(patch)
        elif record:
            branch = commit_branch(config, clone, cfg, result, text, today=today)
        made = branch or (f"night-{night}.patch" if patch_out else None)
        if record and made:
            config_lines += configs.record_made(
                store, made, head=head, night=night, branch=branch, patch=patch_out,
                lessons=[d.lesson_id for d in result.decisions if d.accepted])[1]
    size = sum(1 for i in pool.load_pool(store).values() if i.state == "active")
    report = LearnReport(night, head, cfg.agent.model, result, revalidated, activated, branch,
                         patch_out, text, size, tokens, errors, dry_run, judged,
                         tuple(config_lines))
    if record:
        payload = report.as_dict()
        payload.pop("decisions")
        payload["decisions"] = [{"lesson": d.lesson_id, "accepted": d.accepted,
                                 "rejection": d.rejection.value if d.rejection else None,
                                 "why": d.why} for d in result.decisions]
        store.append_knowledge("learn.run", f"night:{night}", payload, time.time())
    return report


def read_proposals(path: Path) -> list[Proposal]:
    """Proposals from a JSON-lines file (the fields of ``Proposal.as_dict``), to gate them
    without distilling.

    Raises:
        ConfigError: The file cannot be read, or a line is not a proposal (file:line).
    """
    from dreamrsi.errors import ConfigError
    from dreamrsi.knowledge.formats._records import load_records
    from dreamrsi.knowledge.proposal import ConfigEdit

    out = []
    for n, obj in load_records(path, max_file_bytes=16 << 20, max_line_bytes=1 << 20):
        where = f"{path}:{n}"
        edit = obj.get("edit")
        sources = obj.get("sources", [])
        if not isinstance(obj.get("text"), str) or not isinstance(obj.get("scope", ""), str) \
                or not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise ConfigError(f"{where}: a proposal needs text 'text', 'scope' and a list of "
                              "'sources'")
        if edit is not None and not (isinstance(edit, dict) and all(
                isinstance(edit.get(k), str) for k in ("path", "old", "new"))):
            raise ConfigError(f"{where}: 'edit' is not an object of text 'path', 'old', 'new'")
        out.append(Proposal(obj["text"], obj.get("scope", ""), tuple(sources),
                            str(obj.get("distiller", "file")), str(obj.get("group", "")),
                            ConfigEdit(edit["path"], edit["old"], edit["new"]) if edit else None))
    return out
