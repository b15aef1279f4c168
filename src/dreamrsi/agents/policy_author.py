"""The policy-development agent: a model rewrites the one file that implements the policy.

Each request shows the model the current version's code, its replay traces and scores per
training tree (quality, attempts, rounds, out-of-support share, why it stopped, the first
batch sizes) and the feedback on earlier revisions of this dream (each one's score against
the current version, or why it was rejected), and asks for the whole file back in one
```python block. The answer is text and nothing more here: the caller gates it, runs it only
in the sandboxed worker and scores it itself.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.agents.client import ChatResult, ModelCall, ModelClient
from dreamrsi.core.model import Artifact, Cost
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent

__all__ = ["Authored", "PolicyAuthor", "RevisionFeedback", "TreeTrace"]

_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)

SYSTEM = """\
You improve the exploration policy of a discovery system. A discovery tree has a root (the
seed) and chains ("branches"); each round the policy picks a batch of at most W eligible
nodes (the root, which opens a new branch, or a leaf, which extends its chain) and each pick
costs one attempt. An empty batch stops. The policy is scored by replaying recorded trees:
V = quality - beta1 * attempts + beta2 * attempts / rounds; picks with no recorded
continuation earn nothing.

Write ONE Python file defining `class ExplorationPolicy` with:
  reset(self, context)   # context.workers, context.attempt_budget, context.round_budget,
                         # context.rng (random.Random); the same online and in replay
  select(self, view, budget) -> list of node ids   # budget.workers, budget.attempts_left
The view offers: view.root_id, view.size, view.rounds, view.best, view.leaves(),
view.branch_count(), view.branch_stats() and view.leaf_stats() (objects with branch_id, tip,
length, best, since_best, valid, finished, first_score), view.node(id) (fields score, valid,
status, plan, seq). You may import only: math, random, statistics, itertools, collections,
functools, heapq, bisect, dataclasses, typing and dreamrsi.core.{policy,view,model}. No
special methods but __init__, no names starting with an underscore, no eval, exec, open,
getattr, type, object or super, no I/O: anything else is refused before it runs.
Answer with the complete file in one ```python block."""


@dataclass(frozen=True, slots=True)
class TreeTrace:
    """How the current version replayed one training tree."""

    tree_id: str
    value: float
    quality: float
    attempts: float
    rounds: float
    out_of_support_share: float
    stop: str
    batch_sizes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RevisionFeedback:
    """What became of an earlier revision: its mean V, or why it was rejected."""

    number: int
    digest: str | None
    value: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class Authored:
    """One answer of the agent.

    Attributes:
        source: The program it wrote (``None`` when there is none).
        error: Why there is no program, else ``None``.
        calls: Every HTTP call made.
        cost: Tokens and money of those calls.
        events: Ledger rows: one per call (request and answer as blobs).
    """

    source: str | None
    error: str | None
    calls: tuple[ModelCall, ...]
    cost: Cost
    events: tuple[LedgerEvent, ...]


class PolicyAuthor:
    """Asks a model for revisions of a policy program.

    Args:
        client: The model client.
        blobs: Where requests and answers are kept.
        timeout_s: Time for one revision, retries included.
    """

    def __init__(self, client: ModelClient, blobs: Blobs, timeout_s: float = 300.0) -> None:
        self.client = client
        self.blobs = blobs
        self.timeout_s = timeout_s

    def revise(self, current: str, label: str, traces: Sequence[TreeTrace],
               feedback: Sequence[RevisionFeedback], rng: random.Random) -> Authored:
        """Ask for one revision of ``current`` (the version called ``label``)."""
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": prompt(current, label, traces, feedback)}]
        result = self.client.chat(messages, rng, deadline=time.monotonic() + self.timeout_s)
        return self._authored(result)

    def _authored(self, result: ChatResult) -> Authored:
        events = tuple(self._event(c) for c in result.calls)
        cost = Cost(tokens_in=sum(c.tokens_in for c in result.calls),
                    tokens_out=sum(c.tokens_out for c in result.calls),
                    money_usd=sum(c.money_usd for c in result.calls))
        if result.answer is None:
            return Authored(None, f"no answer from the model: {result.error}", result.calls,
                            cost, events)
        source = extract_program(result.answer)
        if source is None:
            return Authored(None, "the answer holds no ```python block", result.calls, cost,
                            events)
        return Authored(source, None, result.calls, cost, events)

    def _event(self, call: ModelCall) -> LedgerEvent:
        artifacts = []
        if call.request:
            request = self.client.scrub(call.request.decode("utf-8", "replace")).encode()
            artifacts.append(Artifact("request", self.blobs.put(request)))
        if call.answer:
            artifacts.append(Artifact("answer", self.blobs.put(call.answer.encode())))
        return LedgerEvent(
            Actor.DREAMER, f"model chat {call.model}", exit=0 if call.error is None else 1,
            artifacts=tuple(artifacts), duration_ms=call.latency_ms,
            parsed={"endpoint": self.client.endpoint, "model": call.model,
                    "try": call.try_no, "status": call.status, "tokens_in": call.tokens_in,
                    "tokens_out": call.tokens_out, "money_usd": call.money_usd,
                    "priced": call.priced, "error": call.error})


def extract_program(answer: str) -> str | None:
    """The last fenced code block of an answer (``None`` without one)."""
    blocks = _BLOCK.findall(answer)
    if not blocks:
        return None
    text: str = blocks[-1]
    return text if text.endswith("\n") else text + "\n"


def prompt(current: str, label: str, traces: Sequence[TreeTrace],
           feedback: Sequence[RevisionFeedback]) -> str:
    """The user message of one request."""
    lines = [f"The current version ({label}):", "```python", current.rstrip(), "```", "",
             "Its replays of the training trees (V, quality, attempts, rounds, out-of-support "
             "share, why it stopped, first batch sizes):"]
    for t in traces:
        sizes = ",".join(map(str, t.batch_sizes[:20]))
        lines.append(f"- tree {t.tree_id}: V={t.value:.4f} quality={t.quality:.4f} "
                     f"attempts={t.attempts:g} rounds={t.rounds:g} "
                     f"out-of-support={t.out_of_support_share:.2f} stop={t.stop} "
                     f"batches=[{sizes}]")
    if feedback:
        lines += ["", "Earlier revisions in this dream:"]
        for f in feedback:
            what = (f"mean V {f.value:.4f}" if f.value is not None else "rejected")
            lines.append(f"- revision {f.number}: {what}: {f.reason}")
    lines += ["", "Write a better version. Keep what works; fix what the feedback shows."]
    return "\n".join(lines)
