"""Survival check of ``set.json``: |A+A| and |A-A| recounted another way, and Γ from them.

Written apart from ``evaluate.py`` and sharing none of its code. The set A (shifted to start at
0) is one big integer with bit a set for each element; A+A is the OR of that integer shifted by
each element, A-A the OR of it shifted by (max A - each element), so both are counted as set
bits, never as Python sets of sums. Γ(A) = log(|A+A|/|A|) / log(|A-A|/|A|) from those counts,
the formula the task states: integers, so the evaluator's float gives the same value.

Validity is the task's: 2 <= |A| <= 512 distinct JSON integers (no floats, no booleans, no
NaN or infinity), |a| <= 10^6, both ratios above 1. Any other key of the file is ignored. The
instance is fixed, so ``$DREAM_FRESH_SEED`` changes nothing: an independent re-check of the
candidate's output, not a new instance. Emits one JSON verdict line; always exits 0.
"""

from __future__ import annotations

import hashlib
import math
import sys

from candidate_file import Refused, read_listing
from verdict import verdict, write

SET_FILE = "set.json"
MAX_BYTES = 1 << 20  # 512 integers of 8 characters take about 5 KB
MIN_SIZE, MAX_SIZE, MAX_ABS = 2, 512, 10**6


def elements(found: list) -> list[int]:
    """The set's elements: distinct integers within the task's bounds."""
    if not MIN_SIZE <= len(found) <= MAX_SIZE:
        raise Refused(f"{len(found)} elements; between {MIN_SIZE} and {MAX_SIZE} are allowed")
    for i, value in enumerate(found):
        if type(value) is not int:
            raise Refused(f"elements[{i}] is not an integer")
        if abs(value) > MAX_ABS:
            raise Refused(f"elements[{i}] exceeds |a| <= {MAX_ABS}")
    if len(set(found)) != len(found):
        raise Refused("an element repeats; A must be a set")
    return found


def counts(a: list[int]) -> tuple[int, int]:
    """|A+A| and |A-A|, counted as the set bits of shifted copies of A's bitmask."""
    low = min(a)
    shifted = [v - low for v in a]
    top = max(shifted)
    mask = 0
    for v in shifted:
        mask |= 1 << v
    sums = differences = 0
    for v in shifted:
        sums |= mask << v
        differences |= mask << (top - v)
    return bin(sums).count("1"), bin(differences).count("1")


def judge() -> dict:
    """The verdict on the set in the working directory."""
    metrics: dict = {}
    try:
        _, listed, raw = read_listing(SET_FILE, "elements", MAX_BYTES)
        a = elements(listed)
    except Refused as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, "")
    digest = hashlib.sha256(raw).hexdigest()
    n = len(a)
    sums, differences = counts(a)
    metrics.update(size=n, sums=sums, differences=differences)
    if sums <= n or differences <= n:
        return verdict(None, False, "invalid: |A+A| and |A-A| must both exceed |A|", metrics,
                       digest)
    score = math.log(sums / n) / math.log(differences / n)
    return verdict(score, True, f"Γ = {score:.10f}: |A| = {n}, |A+A| = {sums}, |A-A| = "
                   f"{differences}, recounted from bitmasks", metrics, digest)


if __name__ == "__main__":
    sys.exit(write(judge, {}, ""))
