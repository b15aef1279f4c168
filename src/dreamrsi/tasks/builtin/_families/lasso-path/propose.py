"""Propose a new ``solver.py``: a branch picks a solver family, its refinements tune it.

Reads the attempt context from the JSON file named by ``$DREAM_CONTEXT`` (without one: seed 0,
and a refinement of the workspace's chain when it has one, else a new branch). No model: every
idea comes from the six families in ``families/``, each a complete solver whose tunable
parameters sit in one ``PARAMS = {...}`` line:

* ``homotopy`` and ``active-set`` follow the exact solution (kinks of the path, sign-consistent
  least squares on a support): a few dense solves per lambda, fast;
* ``fista``: vectorised accelerated proximal gradient, medium (the seed's family);
* ``cd-active``, ``working-set``, ``cd-cyclic``: coordinate descent with a Python loop over
  coordinates: slow, and slower still the more they sweep.

A child of the root starts a branch: it draws a family and writes it at that family's default
parameters; or, when the context names elites of earlier trees (``history``), half the time it
starts from one of them (drawn uniformly): the elite's ``chain.json`` (family, parameters, best
so far) with the elite's score recorded, one refinement step applied (its plan names the elite).
An elite without a readable chain (the seed, another proposer's solver) gives a fresh draw.
The proposer prints ``HISTORY: RUN_ID`` when it started from an elite of run RUN_ID, else
``HISTORY: none``. Deeper attempts refine: the chain's memory, ``chain.json`` (the family, the
parameters of the solver in the workspace, the best parameters and score so far, every tried
setting), is updated with the parent's score from the context, and one or two parameters of
the best setting so far are changed to a value the chain has not tried. Parameter changes move
a family's time by a factor of a few at most, so refinement cannot turn a slow family into a
fast one. All randomness comes from the context's seed: the same context writes the same files.
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import sys

SOLVER_FILE = "solver.py"
CHAIN_FILE = "chain.json"
FAMILY_DIR = "families"

# name -> (file in families/, one line for the plan, parameter space)
# a space entry is ("choice", values) | ("log", low, high) | ("int", low, high)
FAMILIES: dict[str, tuple[str, str, dict[str, tuple]]] = {
    "homotopy": ("homotopy.py", "LARS-lasso homotopy, exact kinks of the path (fast)", {
        "refactor": ("int", 1, 400),
        "polish": ("choice", (True, False)),
        "gram": ("log", 0.1, 10.0),
        "ridge": ("log", 1e-14, 1e-8),
    }),
    "active-set": ("active_set.py", "active-set sign search with exact least squares (fast)", {
        "add_max": ("int", 1, 20),
        "slack": ("log", 1e-14, 1e-6),
        "gram": ("log", 0.1, 10.0),
        "ridge": ("log", 1e-14, 1e-8),
    }),
    "fista": ("fista.py", "FISTA proximal gradient, vectorised (medium)", {
        "tol": ("log", 1e-9, 1e-5),
        "restart": ("choice", ("none", "function", "gradient")),
        "gap_every": ("int", 1, 50),
        "power_iters": ("int", 0, 100),
        "screening": ("choice", ("none", "gap-safe")),
    }),
    "cd-active": ("cd_active.py", "coordinate descent with active-set cycling (slow)", {
        "tol": ("log", 1e-9, 1e-5),
        "screening": ("choice", ("none", "strong")),
        "covariance": ("choice", (True, False)),
        "order": ("choice", ("cyclic", "random")),
        "inner_ratio": ("log", 1e-3, 10.0),
        "blas": ("choice", (True, False)),
    }),
    "working-set": ("working_set.py", "working sets grown by KKT violation, Gram CD (slow)", {
        "tol": ("log", 1e-9, 1e-5),
        "ws_start": ("int", 1, 100),
        "growth": ("log", 0.1, 4.0),
        "inner": ("log", 1e-3, 10.0),
        "blas": ("choice", (True, False)),
    }),
    "cd-cyclic": ("cd_cyclic.py", "plain cyclic coordinate descent, full sweeps (slowest)", {
        "tol": ("log", 1e-9, 1e-5),
        "gap_every": ("int", 1, 20),
        "warm_start": ("choice", (True, False)),
        "order": ("choice", ("cyclic", "random", "shuffled")),
        "blas": ("choice", (True, False)),
    }),
}


def read_family(name: str) -> tuple[str, dict]:
    """The family's source text and its default parameters (its ``PARAMS`` line)."""
    with open(os.path.join(FAMILY_DIR, FAMILIES[name][0]), encoding="utf-8") as fh:
        text = fh.read()
    for line in text.splitlines():
        if line.startswith("PARAMS = "):
            return text, ast.literal_eval(line[len("PARAMS = "):].split("  #")[0])
    raise ValueError(f"{FAMILIES[name][0]} has no PARAMS line")


def render(name: str, params: dict) -> str:
    """The family's source with ``params`` on its PARAMS line."""
    text, _ = read_family(name)
    lines = [f"PARAMS = {params!r}  # noqa: E501  (rendered by propose.py)"
             if line.startswith("PARAMS = ") else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def mutate_value(spec: tuple, value: object, rng: random.Random) -> object:
    """A new value for one parameter, different from ``value`` where the space allows."""
    kind = spec[0]
    if kind == "choice":
        others = [v for v in spec[1] if v != value]
        return rng.choice(others) if others else value
    low, high = spec[1], spec[2]
    if kind == "int":
        current = int(value) if isinstance(value, int) else low
        factor = math.exp(rng.gauss(0.0, 0.8))
        new = min(high, max(low, round(current * factor)))
        if new == current:
            new = min(high, max(low, current + rng.choice((-1, 1))))
        return int(new)
    current = float(value) if isinstance(value, int | float) else low
    new = min(high, max(low, current * math.exp(rng.gauss(0.0, 1.2))))
    return float(f"{new:.2g}")


def mutate(name: str, params: dict, tried: list[dict], rng: random.Random):
    """One or two parameters changed, avoiding settings the chain tried; and a description."""
    space = FAMILIES[name][2]
    for _ in range(20):
        keys = rng.sample(sorted(space), 2 if rng.random() < 0.3 else 1)
        new = dict(params)
        for key in keys:
            new[key] = mutate_value(space[key], params.get(key), rng)
        if new != params and new not in tried:
            break
    changes = ", ".join(f"{k} {params.get(k)!r} -> {new[k]!r}"
                        for k in keys if new[k] != params.get(k))
    return new, changes or "no change left to try"


def read_context() -> dict:
    """The attempt context, or an empty one when ``$DREAM_CONTEXT`` is unset."""
    path = os.environ.get("DREAM_CONTEXT")
    if not path:
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def read_chain(path: str = CHAIN_FILE) -> dict | None:
    """``chain.json`` when it is readable and names a known family with a parameter dict."""
    try:
        with open(path, encoding="utf-8") as fh:
            chain = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    if (not isinstance(chain, dict) or chain.get("family") not in FAMILIES
            or not isinstance(chain.get("params"), dict)):
        return None
    chain.setdefault("best_params", None)
    chain.setdefault("best_score", None)
    chain.setdefault("tried", [])
    return chain


def branch(rng: random.Random) -> tuple[dict, str]:
    """A new chain: a family drawn at random, at its default parameters."""
    name = rng.choice(sorted(FAMILIES))
    _, defaults = read_family(name)
    chain = {"family": name, "params": defaults, "best_params": None, "best_score": None,
             "tried": [defaults]}
    return chain, f"new branch: family {name} ({FAMILIES[name][1]}) at its defaults {defaults}"


def refine(chain: dict, parent: dict, rng: random.Random) -> tuple[dict, str]:
    """The chain's next step: record the parent's score, then mutate the best setting so far."""
    name = chain["family"]
    score, valid = parent.get("score"), parent.get("valid")
    note = ""
    if valid and isinstance(score, int | float):
        if chain["best_score"] is None or score > chain["best_score"]:
            chain["best_params"], chain["best_score"] = chain["params"], float(score)
    elif parent:
        reason = str(parent.get("feedback") or parent.get("status") or "").split("\n")[0][:160]
        note = f" (the parent's setting failed: {reason})"
    base = chain["best_params"] or chain["params"]
    new, changes = mutate(name, base, chain["tried"], rng)
    chain["params"] = new
    chain["tried"] = [*chain["tried"], new][-200:]
    origin = (f"the chain's best (score {chain['best_score']:.4g})"
              if chain["best_params"] is not None else "the parent's setting")
    return chain, f"refine {name} from {origin}: {changes}{note}"


def pick_elite(ctx: dict, rng: random.Random) -> dict | None:
    """An elite of the completed history to start a fresh branch from, or None.

    The context's ``history`` names the best nodes of the task's earlier trees, each with a
    read-only folder holding its workspace. When it names any, half the fresh branches start
    from one of them (chosen uniformly); without history nothing is drawn, so a run without it
    is what it always was.
    """
    elites = [e for e in ctx.get("history") or [] if isinstance(e, dict)
              and isinstance(e.get("workspace"), str)]
    if not elites or rng.random() < 0.5:
        return None
    return elites[rng.randrange(len(elites))]


def elite_chain(elite: dict) -> dict | None:
    """The elite's chain (its family and parameters, filled with the family's defaults where
    it lacks one) with the elite's own score recorded as its best; None when its workspace has
    no readable chain of a known family."""
    chain = read_chain(os.path.join(elite["workspace"], CHAIN_FILE))
    score = elite.get("score")
    if chain is None or not isinstance(score, int | float) or not math.isfinite(score):
        return None
    _, defaults = read_family(chain["family"])
    chain["params"] = {**defaults, **chain["params"]}
    if not isinstance(chain["tried"], list):
        chain["tried"] = []
    if chain["best_score"] is not None and not isinstance(chain["best_score"], int | float):
        chain["best_score"] = None
    if not isinstance(chain["best_params"], dict):
        chain["best_params"], chain["best_score"] = None, None
    return chain


def elite_name(elite: dict) -> str:
    """How a plan names the elite it starts from."""
    score = elite.get("score")
    shown = f"{score:.4g}" if isinstance(score, int | float) else "unscored"
    return f"elite {elite.get('node_id')} of run {elite.get('run_id')} ({shown})"


def main() -> int:
    ctx = read_context()
    rng = random.Random(abs(int(ctx.get("seed") or 0)))
    parent = ctx.get("parent") or {}
    fresh = parent.get("depth") == 0
    chain = None if fresh else read_chain()
    elite = pick_elite(ctx, rng) if fresh else None
    start = None if elite is None else elite_chain(elite)
    used = "none"
    if start is not None:
        chain, plan = refine(start, {"score": elite["score"], "valid": True}, rng)
        plan = f"new branch from {elite_name(elite)}: {plan}"
        used = str(elite.get("run_id"))
    elif chain is None:
        chain, plan = branch(rng)
    else:
        chain, plan = refine(chain, parent, rng)
    print(f"PLAN: {plan}")
    print(f"HISTORY: {used}")
    with open(SOLVER_FILE, "w", encoding="utf-8") as fh:
        fh.write(render(chain["family"], chain["params"]))
    with open(CHAIN_FILE, "w", encoding="utf-8") as fh:
        json.dump(chain, fh, indent=1)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
