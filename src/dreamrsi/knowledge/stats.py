"""The statistical distiller: rules from recorded features that separate a group's failures
from its wins, without a model.

A trajectory's features (a set, each counted once a trajectory):

- ``tool:X``: the tool ``X`` was called; ``tool_error:X``: a call of ``X`` returned an error
  (the ``evaluate`` verdict of our own runs' traces is their outcome, not a feature);
- ``operator:W`` and ``param:K=V``, from the plans of our own runs (``traces import --run``):
  the first word of an attempt's plan, and each ``K=V`` token in it;
- ``role:R``: the trajectory has a step of role ``R``.

**The rule.** With ``F`` failures and ``S`` wins in the group (at least 2 of each), a feature
marks failure when it is present in at least 2 failures, in at least 2/3 of the failures and
in at most 1/3 of the wins, and a one-sided Fisher exact test (the hypergeometric tail) gives
p <= 0.05; it marks success the other way round. Each marker becomes one rule, said as an
instruction with its counts; the strongest (smallest p, then by name) come first. On noise
(features spread evenly) nothing passes, so nothing is proposed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import NamedTuple

from dreamrsi.knowledge.group import Group
from dreamrsi.knowledge.proposal import Proposal
from dreamrsi.knowledge.trajectory import Trajectory

__all__ = ["DISTILLER", "MAX_P", "Marker", "features", "fisher_tail", "markers", "rule_text",
           "statistical_proposals"]

DISTILLER = "statistical"
MAX_P = 0.05
"""The largest one-sided Fisher p-value a marker may have."""
_PARAM = re.compile(r"\b([A-Za-z_][A-Za-z0-9_.-]{0,63})=([^\s,;]{1,64})")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_NAME_CHARS = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/@+-]")


class Marker(NamedTuple):
    """A feature that separates failures from wins: in ``in_failures`` of ``failures`` and
    ``in_wins`` of ``wins``; ``marks`` is ``failure`` or ``success``."""

    feature: str
    marks: str
    in_failures: int
    failures: int
    in_wins: int
    wins: int
    p: float


def _plan_features(text: str) -> set[str]:
    found: set[str] = set()
    words = _WORD.findall(text.removeprefix("PLAN:").strip()[:200])
    if words:
        found.add(f"operator:{words[0].lower()}")
    found.update(f"param:{k}={_UNSAFE.sub('_', v)}" for k, v in _PARAM.findall(text[:4000]))
    return found


def features(t: Trajectory) -> frozenset[str]:
    """The recorded features of a trajectory (see the module docstring)."""
    found: set[str] = set()
    ours = t.source_format == "run"
    for k, s in enumerate(t.steps):
        found.add(f"role:{s.role}")
        if ours and k > 0 and s.text.strip():
            found |= _plan_features(s.text)
        for c in s.tool_calls:
            if ours and c.name == "evaluate":
                continue
            name = _UNSAFE.sub("_", c.name[:_NAME_CHARS]) or "_"
            found.add(f"tool:{name}")
            if c.error:
                found.add(f"tool_error:{name}")
    return frozenset(found)


def fisher_tail(hits: int, draws: int, marked: int, total: int) -> float:
    """P(at least ``hits`` marked among ``draws`` drawn without replacement from ``total`` of
    which ``marked`` are marked): the one-sided Fisher exact test."""
    top = min(draws, marked)
    ways = math.comb(total, draws)
    tail = sum(math.comb(marked, k) * math.comb(total - marked, draws - k)
               for k in range(hits, top + 1))
    return tail / ways


def _passes(hits: int, n: int, other: int, m: int) -> bool:
    return hits >= 2 and 3 * hits >= 2 * n and 3 * other <= m


def markers(failed: Iterable[frozenset[str]], won: Iterable[frozenset[str]]) -> list[Marker]:
    """The features that mark failure or success (the rule in the module docstring),
    strongest first."""
    fails, wins = list(failed), list(won)
    f, s = len(fails), len(wins)
    if f < 2 or s < 2:
        return []
    found: list[Marker] = []
    for feature in sorted(set().union(*fails, *wins)):
        a = sum(feature in x for x in fails)
        b = sum(feature in x for x in wins)
        if _passes(a, f, b, s):
            p = fisher_tail(a, f, a + b, f + s)
            if p <= MAX_P:
                found.append(Marker(feature, "failure", a, f, b, s, p))
        elif _passes(b, s, a, f):
            p = fisher_tail(b, s, a + b, f + s)
            if p <= MAX_P:
                found.append(Marker(feature, "success", a, f, b, s, p))
    return sorted(found, key=lambda m: (m.p, m.feature))


def _counts(m: Marker) -> str:
    seen = "its calls returned an error" if m.feature.startswith("tool_error:") else \
        "it was seen"
    if m.marks == "failure":
        return (f"{seen} in {m.in_failures} of {m.failures} failed sessions and "
                f"{m.in_wins} of {m.wins} successful ones")
    return (f"{seen} in {m.in_wins} of {m.wins} successful sessions and "
            f"{m.in_failures} of {m.failures} failed ones")


def rule_text(m: Marker) -> str:
    """The marker said as an instruction, with its counts."""
    kind, _, name = m.feature.partition(":")
    bad = m.marks == "failure"
    said = {
        "tool": f"Do not call the tool `{name}`" if bad else
                f"Call the tool `{name}` before answering",
        "tool_error": f"Check the arguments of the tool `{name}` before calling it",
        "operator": f"Avoid the operator `{name}`" if bad else f"Prefer the operator `{name}`",
        "param": f"Avoid the setting `{name}`" if bad else f"Prefer the setting `{name}`",
        "role": f"Avoid `{name}` steps" if bad else f"Include a `{name}` step",
    }[kind]
    return f"{said}: {_counts(m)}."


def statistical_proposals(g: Group, *, limit: int) -> list[Proposal]:
    """At most ``limit`` rules from the markers of one group (a ``tool_error`` marker is left
    out where the tool itself already marks failure)."""
    found = markers([features(s.trajectory) for s in g.failures],
                    [features(s.trajectory) for s in g.wins])
    bad_tools = {m.feature.partition(":")[2] for m in found
                 if m.feature.startswith("tool:") and m.marks == "failure"}
    out: list[Proposal] = []
    for m in found:
        kind, _, name = m.feature.partition(":")
        if kind == "tool_error" and (name in bad_tools or m.marks != "failure"):
            continue
        out.append(Proposal(rule_text(m), g.task, g.trace_ids, DISTILLER, g.group_id))
    return out[:limit]
