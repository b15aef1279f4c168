"""Code dreaming: a model rewrites the policy program, M revisions per dream, each scored in
the sandbox before the next is written.

Each revision starts from the *current* version: the incumbent (its program, or for a
built-in family a starter program in the same spirit, :func:`starter_program`), then the
best-scoring revision so far. The policy-development agent (:mod:`dreamrsi.agents.policy_author`)
sees that version's code, its replay traces and scores per training tree and the feedback on
the earlier revisions; its answer passes the gate and is replayed on every tree by a
sandboxed worker (:class:`~dreamrsi.programs.ProgramPolicy`), which the trusted side drives:
it runs ``Child``, checks every batch and computes V. A program that is refused, crashes,
times out, answers outside the channel's schema or selects a node that is not eligible is
rejected with its reason, and the dream goes on. Scored programs join the dream's other
candidates, and the selection compares them all, the incumbent included.

A program is named ``code:digest=sha256:...`` (:func:`program_spec`); its text, and its diff
against its parent, are blobs; its version's ``code_digest`` is the digest.
"""

from __future__ import annotations

import difflib
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from dreamrsi.agents.client import ModelClient
from dreamrsi.agents.policy_author import PolicyAuthor, RevisionFeedback, TreeTrace
from dreamrsi.core.policy import Policy, PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.evaluate import ReplaySettings, TreeScore, mean_value, replay_tree
from dreamrsi.dreaming.objectives import Candidate
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.errors import ConfigError, PolicyError
from dreamrsi.policies.registry import code_digest
from dreamrsi.programs import ProgramFailure, ProgramLimits, ProgramPolicy, program_digest
from dreamrsi.programs.stored import program_spec
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice
from dreamrsi.tasks.spec import Task

__all__ = ["CodeDreaming", "CodeOutcome", "CodeSettings", "Revision", "make_author",
           "program_spec", "revise", "score_program", "starter_program"]

@dataclass(frozen=True, slots=True, kw_only=True)
class CodeSettings:
    """Settings of code dreaming (stored with the dream).

    Attributes:
        revisions: M, programs written and scored per dream.
        limits: What each program's worker may use.
    """

    revisions: int = 3
    limits: ProgramLimits = field(default_factory=ProgramLimits)

    def __post_init__(self) -> None:
        if isinstance(self.revisions, bool) or not isinstance(self.revisions, int) \
                or not 1 <= self.revisions <= 100:
            raise ConfigError(f"revisions must be 1 to 100, got {self.revisions!r}",
                              key="revisions")

    def to_json(self) -> dict[str, Any]:
        """As dreams store it."""
        lim = self.limits
        return {"revisions": self.revisions,
                "limits": {"start_s": lim.start_s, "reply_s": lim.reply_s,
                           "total_s": lim.total_s, "cpu_s": lim.cpu_s,
                           "memory_mb": lim.memory_mb, "max_processes": lim.max_processes,
                           "isolation": lim.isolation.value}}


@dataclass(frozen=True, slots=True)
class CodeDreaming:
    """What a dream needs to rewrite code: the settings, the agent, and the programs it may
    start from (by digest: the incumbent's, when it is a program)."""

    settings: CodeSettings
    author: PolicyAuthor
    sources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Revision:
    """One program the agent wrote (or failed to write), and what became of it.

    Attributes:
        number: 1 to M.
        status: ``scored`` or ``rejected``.
        reason: Why it was rejected, or how it compared with the version it revised.
        parent: The version id it revised.
        digest: The program's digest (``None`` when the answer held none).
        version_id: Its version id, when scored.
        diff: Blob digest of its unified diff against the parent's program.
        train_mean: Its mean V on the training trees, when scored.
        kind: The rejection's kind (``gate``, ``raised``, ``timeout``, ...), or ``None``.
        stderr: What it wrote to stderr (capped; diagnostics only).
        tokens_in, tokens_out, money_usd: What writing it cost.
    """

    number: int
    status: str
    reason: str
    parent: str
    digest: str | None = None
    version_id: str | None = None
    diff: str | None = None
    train_mean: float | None = None
    kind: str | None = None
    stderr: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    money_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"number": self.number, "status": self.status, "reason": self.reason,
                "parent": self.parent, "digest": self.digest, "version_id": self.version_id,
                "diff": self.diff, "train_mean": self.train_mean, "kind": self.kind,
                "stderr": self.stderr[-2000:], "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "money_usd": self.money_usd}


@dataclass(frozen=True, slots=True)
class CodeOutcome:
    """The scored programs of a dream, every revision's fate, and the ledger events."""

    candidates: tuple[Candidate, ...]
    revisions: tuple[Revision, ...]
    events: tuple[LedgerEvent, ...]
    parents: Mapping[str, str]
    sources: Mapping[str, str] = field(default_factory=dict)
    """The scored programs' text, by digest (to replay them again, e.g. for an interval)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the dream report's ``code`` entry)."""
        return {"revisions": [r.as_dict() for r in self.revisions],
                "scored": sum(r.status == "scored" for r in self.revisions),
                "rejected": sum(r.status == "rejected" for r in self.revisions),
                "tokens_in": sum(r.tokens_in for r in self.revisions),
                "tokens_out": sum(r.tokens_out for r in self.revisions),
                "money_usd": sum(r.money_usd for r in self.revisions)}


STARTER = '''\
"""Refine chains in opening order, then open the missing branches (fixed refinement)."""

BRANCHES = {branches}
REFINE = {refine}


class ExplorationPolicy:
    name = "fixed-as-code"

    def reset(self, context):
        self.workers = context.workers

    def select(self, view, budget):
        n = budget.workers
        if budget.attempts_left is not None:
            n = max(0, min(n, budget.attempts_left))
        batch = []
        if n <= 0:
            return batch
        for stats in view.branch_stats():
            if stats.finished < REFINE + 1:
                batch.append(stats.tip)
                if len(batch) >= n:
                    return batch
        batch.extend([view.root_id] * max(0, min(BRANCHES - view.branch_count(), n - len(batch))))
        return batch
'''


def starter_program(incumbent: PolicySpec, workers: int) -> str:
    """The program a first revision starts from when the incumbent is a built-in family:
    fixed refinement with the incumbent's ``branches`` and ``refine`` (or W chains of 9)."""
    params = incumbent.params
    branches = params.get("branches", workers)
    refine = params.get("refine", 9)
    return STARTER.format(branches=int(branches), refine=int(refine))


def score_program(source: str, train: Sequence[RecordedTree],
                  holdout: Sequence[RecordedTree], settings: ReplaySettings,
                  scale: QualityScale, limits: ProgramLimits) -> Candidate:
    """Replay a program on every tree in one sandboxed worker, scored by V; the trees'
    episodes run at once (one round trip per round of all of them), each with a fresh state.

    Raises:
        ProgramFailure: It was refused or failed (the worker is killed).
        PolicyError: A batch broke the decision interface.
    """
    jobs = [partial(_replay_one, tree=tree, settings=settings, scale=scale, history=history)
            for trees, history in ((train, train), (holdout, train)) for tree in trees]
    with ProgramPolicy(source, limits) as policy:
        scores = policy.run_concurrently(jobs)
    return Candidate(program_spec(policy.digest), tuple(scores[:len(train)]),
                     tuple(scores[len(train):]))


def _replay_one(policy: Policy, *, tree: RecordedTree, settings: ReplaySettings,
                scale: QualityScale, history: Sequence[RecordedTree]) -> TreeScore:
    return replay_tree(policy, tree, settings, history, scale, keep_order=False)


def traces(candidate: Candidate) -> list[TreeTrace]:
    """The agent's view of a version's replays of the training trees."""
    out = []
    for s in candidate.train:
        r = s.result
        out.append(TreeTrace(r.tree_id, s.value, s.quality, s.revealed, s.rounds,
                             r.out_of_support_share, r.stop.value, r.batch_sizes))
    return out


def revise(code: CodeDreaming, incumbent: Candidate, train: Sequence[RecordedTree],
           holdout: Sequence[RecordedTree], settings: ReplaySettings, scale: QualityScale,
           seed: int) -> CodeOutcome:
    """Write and score M revisions, each from the best version so far."""
    inc_digest = code_digest(incumbent.spec)
    current_source = (code.sources[inc_digest] if inc_digest is not None
                      else starter_program(incumbent.spec, settings.workers))
    current = incumbent
    current_value = mean_value(incumbent.train)
    rng = random.Random(seed)
    seen: dict[str, int] = {} if inc_digest is None else {str(inc_digest): 0}
    revisions: list[Revision] = []
    candidates: list[Candidate] = []
    events: list[LedgerEvent] = []
    feedback: list[RevisionFeedback] = []
    parents: dict[str, str] = {}
    sources: dict[str, str] = {}
    for number in range(1, code.settings.revisions + 1):
        started = time.monotonic()
        parent = current.version_id
        authored = code.author.revise(current_source, current.spec.label(), traces(current),
                                      feedback, rng)
        events += authored.events
        cost: dict[str, Any] = {"tokens_in": authored.cost.tokens_in,
                                "tokens_out": authored.cost.tokens_out,
                                "money_usd": authored.cost.money_usd}
        source = authored.source
        if source is None:
            revision = Revision(number, "rejected", authored.error or "no program", parent,
                                kind="answer", **cost)
        else:
            digest = program_digest(source)
            diff = code.author.blobs.put(_diff(current_source, source).encode())
            code.author.blobs.put(source.encode("utf-8", "surrogatepass"))
            if digest in seen:
                same = (f"revision {seen[digest]}" if seen[digest] else "the incumbent")
                revision = Revision(number, "rejected", f"the same program as {same}", parent,
                                    digest, diff=diff, kind="duplicate", **cost)
            else:
                seen[digest] = number
                revision, scored = _score(number, source, digest, diff, parent, train,
                                          holdout, settings, scale, code, current_value, cost)
                if scored is not None:
                    candidates.append(scored)
                    parents[scored.version_id] = parent
                    sources[digest] = source
                    value = revision.train_mean
                    if value is not None and value > current_value:
                        current, current_source, current_value = scored, source, value
        revisions.append(revision)
        feedback.append(RevisionFeedback(number, revision.digest, revision.train_mean,
                                         revision.reason))
        events.append(LedgerEvent(
            Actor.DREAMER, f"revision {number} {revision.status}",
            exit=0 if revision.status == "scored" else 1,
            parsed=revision.as_dict(), duration_ms=int((time.monotonic() - started) * 1000)))
    return CodeOutcome(tuple(candidates), tuple(revisions), tuple(events), parents, sources)


def _score(number: int, source: str, digest: str, diff: str, parent: str,
           train: Sequence[RecordedTree], holdout: Sequence[RecordedTree],
           settings: ReplaySettings, scale: QualityScale, code: CodeDreaming,
           current_value: float, cost: dict[str, Any]) -> tuple[Revision, Candidate | None]:
    try:
        scored = score_program(source, train, holdout, settings, scale,
                               code.settings.limits)
    except ProgramFailure as failure:
        return Revision(number, "rejected", failure.reason, parent, digest, diff=diff,
                        kind=failure.kind, stderr=failure.stderr, **cost), None
    except PolicyError as error:  # the episode driver refused a batch (not eligible, > W)
        return Revision(number, "rejected", str(error), parent, digest, diff=diff,
                        kind="selection", **cost), None
    value = mean_value(scored.train)
    how = "better than" if value > current_value else "not better than"
    return Revision(number, "scored", f"mean V {value:.4f}, {how} the version it revised "
                    f"({current_value:.4f})", parent, digest, scored.version_id, diff, value,
                    **cost), scored


def _diff(old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True),
                                        new.splitlines(keepends=True), "parent/policy.py",
                                        "revision/policy.py"))


def make_author(task: Task, store: RunStore, *, model: str | None = None,
                base_url: str | None = None, api_key_env: str | None = None) -> PolicyAuthor:
    """The policy-development agent for ``task``: the task's own model settings (an ``llm``
    task), with ``model``, ``base_url`` and ``api_key_env`` overriding them when given.

    Raises:
        ConfigError: No model is named and the task has none, or the endpoint is unusable.
    """
    settings = task.proposer.llm
    if settings is None:
        if model is None:
            raise ConfigError(f"task {task.name} names no model; code dreaming needs one "
                              "(--code-model NAME, with --code-base-url for your endpoint)",
                              key="code-model")
        settings = LlmSettings()
    changes: dict[str, Any] = {}
    if model is not None:
        changes["models"] = (ModelChoice(model),)
    if base_url is not None:
        if not re.fullmatch(r"https?://\S+", base_url):
            raise ConfigError(f"unusable endpoint {base_url!r}", key="code-base-url",
                              expected="an http(s) URL such as http://127.0.0.1:8000/v1")
        changes["base_url"] = base_url
    if api_key_env is not None:
        changes["api_key_env"] = api_key_env
    settings = replace(settings, **changes)
    return PolicyAuthor(ModelClient(settings), store.blobs)
