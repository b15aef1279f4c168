"""Shared by the scripted agents: the step's context, its random source, its directives.

An agent step runs with the working copy as its working directory and the path of a JSON
context in $DREAM_CONTEXT: an engine proposer's context (docs/tasks.md) or a Dream Run's brief
(objective, constraints, hypotheses, evidence, dream, step, last_eval). Both shapes are read
with .get, and anything missing or malformed reads as empty. Directives go to stdout, one a
line: PLAN, HYPOTHESIS, RUN, ANSWER, DONE.
"""
import json
import os
import random
import re
import sys

TAG = re.compile(r"\[move:([a-z-]+)\]")


class Step:
    """One agent step: its context, seed, step number, and the moves earlier steps made."""

    def __init__(self):
        context = {}
        path = os.environ.get("DREAM_CONTEXT")
        if path:
            try:
                with open(path, encoding="utf-8") as f:
                    context = json.load(f)
            except (OSError, ValueError):
                context = {}
        self.context = context if isinstance(context, dict) else {}
        self.dream = _dict(self.context.get("dream"))
        self.seed = _int(os.environ.get("DREAM_SEED"), _int(self.context.get("seed"), 0))
        step = self.context.get("step")
        if not isinstance(step, int):  # a brief's dream counts its steps; the engine, depth
            step = _int(self.dream.get("steps"),
                        _int(_dict(self.context.get("parent")).get("depth"), 0))
        self.step = step
        agent = os.path.basename(sys.argv[0])  # agents draw apart on the same seed
        self.rng = random.Random(f"{agent}:{self.seed}:{self.step}")
        self.tried = set(TAG.findall(json.dumps(self.context)))  # moves recorded upstream
        # (plans and hypotheses); an agent adds what the working copy or evidence shows

    @property
    def objective(self):
        task = _dict(self.context.get("task"))
        return str(self.context.get("objective") or task.get("objective") or "")

    @property
    def is_dream(self):
        """A Dream Run's brief (rather than an engine proposer's context)."""
        return "dream" in self.context or "hypotheses" in self.context

    @property
    def is_shadow(self):
        return self.dream.get("kind") == "shadow"

    def evidence_text(self):
        """Every string of the brief's evidence rows, joined (commands, outputs, parsed)."""
        rows = self.context.get("evidence")
        return "\n".join(_strings(rows if isinstance(rows, list) else []))

    def next_move(self, moves, fixed=False):
        """The first of ``moves`` no earlier step made: in the given order when ``fixed``,
        else in an order drawn from this step's seed. None when all were made."""
        order = list(moves)
        if not fixed:
            self.rng.shuffle(order)
        return next((m for m in order if m not in self.tried), None)


def say(kind, text=""):
    """Print one directive (newlines folded into spaces)."""
    text = " ".join(str(text).split())
    print(f"{kind}: {text}" if text else kind, flush=True)


def has_git():
    """Whether the working copy is a git checkout (a Dream Run's: a clone or worktree, with
    .git at its top) rather than plain files (an engine attempt's)."""
    return os.path.exists(".git")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _dict(value):
    return value if isinstance(value, dict) else {}


def _int(value, default):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
