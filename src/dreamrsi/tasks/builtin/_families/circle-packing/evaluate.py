"""Evaluate ``packing.json``: N disjoint circles in the unit square, score = sum of radii.

N is the task's parameter, read from ``params.json`` (``{"n": 26}``; a protected file, so the
same evaluator serves every circle-packing task).

Reads ``packing.json`` from the working directory and emits one JSON object ``{"score", "valid",
"feedback", "metrics", "candidate_hash"}`` as the last line of stdout. Always exits 0.

A packing is valid when every radius is >= 0, every circle lies inside the unit square and no two
circles overlap, each up to an absolute tolerance of 1e-12; ``strict_valid`` repeats the check
with tolerance 0. The score is recomputed from the circles; any other key the file states (a
"sum", a "score") is ignored. Standard library only, so the check never depends on numpy.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys

from verdict import verdict, write

PARAMS_FILE = "params.json"
with open(PARAMS_FILE, encoding="utf-8") as _fh:
    N = int(json.load(_fh)["n"])
BEST_KNOWN = {26: 2.6359830849, 32: 2.9395727712}[N]
TOLERANCE = 1e-12
PACKING_FILE = "packing.json"
NO_FILE_HASH = hashlib.sha256(b"").hexdigest()


class Rejected(Exception):
    """The file cannot be read as N circles; the message says why."""


def _reject_constant(token: str) -> float:
    raise Rejected(f"{PACKING_FILE} contains the non-finite number {token}; only finite numbers")


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_circles(text: str) -> list[tuple[float, float, float]]:
    """Parse the file's text into exactly N ``(x, y, r)`` tuples of finite floats."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # bad syntax, too deep, too many digits
        raise Rejected(f"{PACKING_FILE} is not valid JSON: {str(exc)[:120]}") from None
    if not isinstance(data, dict):
        raise Rejected(f"{PACKING_FILE} must hold a JSON object with key 'circles'")
    if "n" in data and (isinstance(data["n"], bool) or data["n"] != N):
        raise Rejected(f"'n' is {_short(data['n'])} but this task packs exactly {N} circles")
    circles = data.get("circles")
    if not isinstance(circles, list):
        raise Rejected("key 'circles' is missing or not a list of [x, y, r] rows")
    if len(circles) != N:
        raise Rejected(f"'circles' has {len(circles)} rows; exactly {N} are required")
    rows = []
    for i, row in enumerate(circles):
        if not isinstance(row, list) or len(row) != 3:
            raise Rejected(f"circle {i} is {_short(row)}; each circle must be a list [x, y, r]")
        values = []
        for name, v in zip("xyr", row, strict=True):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise Rejected(f"circle {i}: {name} = {_short(v)} is not a number")
            try:
                v = float(v)
            except OverflowError:  # an integer literal too large for a float
                v = math.inf
            if not math.isfinite(v):
                raise Rejected(f"circle {i}: {name} is not finite")
            values.append(v)
        rows.append((values[0], values[1], values[2]))
    return rows


def violations(circles: list[tuple[float, float, float]]) -> list[tuple[float, str, bool]]:
    """Every positive violation at tolerance 0 as ``(amount, description, hard)``.

    ``hard`` marks a negative radius, which no tolerance excuses. Order: per circle (radius, left,
    right, bottom, top wall), then pairs (i < j), so "the first violation" is well defined.
    """
    found = []
    for i, (x, y, r) in enumerate(circles):
        if r < 0:
            found.append((-r, f"circle {i} has negative radius {r:.3e}", True))
        walls = {"left": r - x, "right": (x + r) - 1.0, "bottom": r - y, "top": (y + r) - 1.0}
        for wall, amount in walls.items():
            if amount > 0:
                text = f"circle {i} crosses the {wall} wall by {amount:.3e}"
                found.append((amount, f"{text} (x={x:.9g}, y={y:.9g}, r={r:.9g})", False))
    for i, (xi, yi, ri) in enumerate(circles):
        for j in range(i + 1, len(circles)):
            xj, yj, rj = circles[j]
            dist = math.hypot(xi - xj, yi - yj)
            amount = (ri + rj) - dist
            if amount > 0:
                text = f"circles {i} and {j} overlap by {amount:.3e}"
                detail = f"centre distance {dist:.9g} < r{i}+r{j} = {ri + rj:.9g}"
                found.append((amount, f"{text} ({detail})", False))
    return found


def fatal(found: list[tuple[float, str, bool]], tol: float) -> list[str]:
    """Descriptions of the violations that make a packing invalid at tolerance ``tol``."""
    return [text for amount, text, hard in found if hard or amount > tol]


def canonical_hash(circles: list[tuple[float, float, float]]) -> str:
    """sha256 of the circles rounded to 1e-9 and sorted, so permutations hash alike."""
    rows = sorted(tuple(f"{round(v, 9) + 0.0:.9f}" for v in c) for c in circles)
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def evaluate(path: str = PACKING_FILE) -> dict:
    """Score the packing at ``path`` and explain the score."""
    metrics = {
        "n": N,
        "sum_radii": None,
        "strict_valid": False,
        "tolerance": TOLERANCE,
        "max_violation": None,
        "min_radius": None,
        "best_known": BEST_KNOWN,
    }
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return verdict(None, False, f"invalid: {PACKING_FILE} is missing", metrics, NO_FILE_HASH)
    except OSError as exc:
        return verdict(
            None, False, f"invalid: cannot read {PACKING_FILE}: {exc}", metrics, NO_FILE_HASH
        )
    raw_hash = hashlib.sha256(raw).hexdigest()
    try:
        circles = load_circles(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return verdict(None, False, f"invalid: {PACKING_FILE} is not UTF-8", metrics, raw_hash)
    except Rejected as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, raw_hash)

    rs = [r for _, _, r in circles]
    total = math.fsum(rs)
    found = violations(circles)
    worst = max((amount for amount, _, _ in found), default=0.0)
    errors = fatal(found, TOLERANCE)
    metrics.update(
        sum_radii=total,
        strict_valid=not found,
        max_violation=worst,
        min_radius=min(rs),
    )
    digest = canonical_hash(circles)
    if errors:
        feedback = (
            f"invalid: {errors[0]}; {len(errors)} violation(s) in total, worst {worst:.3e} "
            f"(tolerance {TOLERANCE:g}); the sum of radii would be {total:.10f}"
        )
        return verdict(None, False, feedback, metrics, digest)

    gap = BEST_KNOWN - total
    standing = f"gap {gap:.4g}" if gap > 0 else f"beats it by {-gap:.4g}"
    strictness = (
        "strictly valid"
        if not found
        else f"valid within tolerance (max violation {worst:.1e}, not strictly valid)"
    )
    sizes = f"smallest circle r={min(rs):.4g}, largest r={max(rs):.4g}"
    feedback = (
        f"{strictness}; sum of radii {total:.10f} (best known {BEST_KNOWN}, {standing}); {sizes}"
    )
    return verdict(total, True, feedback, metrics, digest)




def main() -> int:
    return write(evaluate, {"n": N}, NO_FILE_HASH)


if __name__ == "__main__":
    sys.exit(main())
