"""Survival check of ``packing.json``: validity at zero tolerance, in exact arithmetic.

Written apart from ``evaluate.py`` and sharing none of its code: it re-checks the exported
coordinates and recomputes the sum of radii. N comes from ``params.json`` (protected). Each
number of the file is read as the float64 it denotes (as the evaluator reads it); every float is
an integer over a power of two, so the whole packing is written over one common power of two
and every test is a comparison of Python integers, exact:

    r >= 0,  r <= x,  x + r <= 1,  r <= y,  y + r <= 1,
    (xi - xj)^2 + (yi - yj)^2 >= (ri + rj)^2  for every pair (touching is allowed),

with no tolerance at all (the evaluator forgives 1e-12). The score is the exact sum of the
radii, rounded once to the nearest float: the evaluator's ``math.fsum`` gives the same float.

The instance is fixed (N circles in the unit square), so ``$DREAM_FRESH_SEED`` changes
nothing: this is an independent re-check of the candidate's output, not a new instance.
Emits one JSON verdict line as the evaluator does; always exits 0.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from fractions import Fraction

from candidate_file import Refused, read_listing
from verdict import verdict, write

PACKING_FILE = "packing.json"
MAX_BYTES = 1 << 20  # a packing of 32 circles takes about 2 KB
with open("params.json", encoding="utf-8") as _fh:
    N = int(json.load(_fh)["n"])


def rows_of(data: dict, circles: list) -> list[tuple[float, float, float]]:
    """The N circles of the file, each ``(x, y, r)`` as finite floats."""
    if "n" in data and (isinstance(data["n"], bool) or data["n"] != N):
        raise Refused(f"'n' must be {N}, the task's number of circles")
    if len(circles) != N:
        raise Refused(f"{len(circles)} circles; the task packs exactly {N}")
    rows = []
    for i, row in enumerate(circles):
        if not isinstance(row, list) or len(row) != 3:
            raise Refused(f"circle {i} is not a list [x, y, r]")
        floats = []
        for name, value in zip("xyr", row, strict=True):
            if type(value) not in (int, float):
                raise Refused(f"circle {i}: {name} is not a number")
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if not math.isfinite(number):
                raise Refused(f"circle {i}: {name} is not a finite number")
            floats.append(number)
        rows.append((floats[0], floats[1], floats[2]))
    return rows


def on_one_scale(rows: list[tuple[float, float, float]]) -> tuple[list[tuple[int, ...]], int]:
    """Every coordinate as an integer over one common power of two: ``(rows, denominator)``."""
    ratios = [[v.as_integer_ratio() for v in row] for row in rows]
    scale = max(den for row in ratios for _, den in row)  # each a power of two: all divide it
    return [tuple(num * (scale // den) for num, den in row) for row in ratios], scale


def first_violation(rows: list[tuple[int, ...]], one: int) -> str | None:
    """The first broken condition (circles, then pairs), exactly; ``one`` is 1 on the scale."""
    for i, (x, y, r) in enumerate(rows):
        for broken, text in ((r < 0, "has a negative radius"), (r > x, "crosses the left wall"),
                             (x + r > one, "crosses the right wall"),
                             (r > y, "crosses the bottom wall"),
                             (y + r > one, "crosses the top wall")):
            if broken:
                return f"circle {i} {text}"
    for i, (xi, yi, ri) in enumerate(rows):
        for j in range(i + 1, len(rows)):
            xj, yj, rj = rows[j]
            dx, dy, s = xi - xj, yi - yj, ri + rj
            if dx * dx + dy * dy < s * s:
                deficit = float(Fraction(s * s - dx * dx - dy * dy, one * one))
                return (f"circles {i} and {j} overlap: (ri + rj)^2 exceeds their centres' "
                        f"squared distance by {deficit:.3e}")
    return None


def judge() -> dict:
    """The verdict on the packing in the working directory."""
    metrics: dict = {"n": N, "exact": True, "tolerance": 0}
    try:
        data, circles, raw = read_listing(PACKING_FILE, "circles", MAX_BYTES)
        rows = rows_of(data, circles)
    except Refused as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, "")
    digest = hashlib.sha256(raw).hexdigest()
    scaled, scale = on_one_scale(rows)
    broken = first_violation(scaled, scale)
    total = float(Fraction(sum(r for _, _, r in scaled), scale))
    metrics["sum_radii"] = total
    if broken is not None:
        return verdict(None, False, f"invalid at zero tolerance: {broken}; the sum of radii "
                       f"would be {total:.10f}", metrics, digest)
    return verdict(total, True, f"exactly valid: {N} disjoint circles inside the unit square "
                   f"(exact integer arithmetic, no tolerance); sum of radii {total:.10f}",
                   metrics, digest)


if __name__ == "__main__":
    sys.exit(write(judge, {"n": N}, ""))
