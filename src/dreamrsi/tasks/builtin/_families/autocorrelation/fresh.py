"""Survival check of ``sequence.json``: the autocorrelation bound recomputed exactly.

Written apart from ``evaluate.py`` and sharing none of its code. Which inequality (C1: a >= 0,
C3: any sign) and the limits come from ``params.json`` (protected). The exported function is the
step function whose heights the file lists, read as the float64 values its numbers denote (as
the evaluator reads them). Every float is an integer over a power of two, so the heights are
written over one common power of two, A_i integers, and the bound

    2n * max_k |(A*A)_k| / (sum A)^2

(the common scale cancels) is computed in integers, exactly: the whole autoconvolution comes
from one multiplication of big integers (Kronecker substitution: the A_i, shifted to be
non-negative, packed into one integer in slots too wide to carry into each other, squared,
then unpacked; the shift is taken off exactly with prefix sums). The ratio is rounded once,
to the nearest float. The evaluator's ``numpy.convolve`` in floating point differs from it by
rounding alone: below about n * 1.1e-16 of the score for C1 (sums of positive terms), more
for C3 where the terms of a lag cancel; the task states 1e-9.

Validity is the task's, checked exactly: 1 <= n <= 4000, every entry a finite JSON number with
|a| <= 1e10 (and a >= 0 for C1), (sum a / 2n)^2 >= 1e-9. Any other key of the file (a stated
score, say) is ignored. The instance is fixed, so ``$DREAM_FRESH_SEED`` changes nothing: an
independent re-check of the candidate's output, not a new instance. Emits one JSON verdict
line as the evaluator does; always exits 0.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from fractions import Fraction

from candidate_file import Refused, read_listing
from verdict import verdict, write

SEQUENCE_FILE = "sequence.json"
MAX_BYTES = 1 << 22  # 4000 values of 17 significant digits take about 100 KB
MAX_N = 4000
MAX_ABS = 1e10
MIN_SQUARED_MEAN = Fraction(1e-9)  # the float the task states, exactly
with open("params.json", encoding="utf-8") as _fh:
    _PARAMS = json.load(_fh)
NAME = str(_PARAMS["inequality"])
NONNEGATIVE = bool(_PARAMS["nonnegative"])


def heights(values: list) -> list[float]:
    """The heights the file lists, each a finite float within the task's bounds."""
    if not 1 <= len(values) <= MAX_N:
        raise Refused(f"{len(values)} values; between 1 and {MAX_N} are allowed")
    out = []
    for i, value in enumerate(values):
        if type(value) not in (int, float):
            raise Refused(f"values[{i}] is not a number")
        if type(value) is int and abs(value) > MAX_ABS:
            raise Refused(f"values[{i}] exceeds |a| <= {MAX_ABS:g}")
        number = float(value) + 0.0
        if not math.isfinite(number):
            raise Refused(f"values[{i}] is not a finite number")
        if abs(number) > MAX_ABS:
            raise Refused(f"values[{i}] exceeds |a| <= {MAX_ABS:g}")
        if NONNEGATIVE and number < 0:
            raise Refused(f"values[{i}] is negative; {NAME} is over a >= 0")
        out.append(number)
    return out


def on_one_scale(values: list[float]) -> tuple[list[int], int]:
    """The heights as integers over one common power of two: ``(integers, denominator)``."""
    ratios = [v.as_integer_ratio() for v in values]
    scale = max(den for _, den in ratios)  # each a power of two: all divide the largest
    return [num * (scale // den) for num, den in ratios], scale


def autoconvolution(a: list[int]) -> list[int]:
    """(a*a)_k for k = 0..2n-2, exactly, from one squaring of a packed integer.

    With B = max |a_i|, b_i = a_i + B >= 0 and (b*b)_k = (a*a)_k + 2B S_k + B^2 m_k, where the
    m_k pairs (i, j) with i + j = k take i over one range and S_k sums a_i over it.
    """
    n = len(a)
    shift = max(0, -min(a))
    b = [v + shift for v in a]
    top = max(b)
    width = -(-(2 * top.bit_length() + n.bit_length() + 1) // 8)  # bytes per slot
    packed = int.from_bytes(b"".join(v.to_bytes(width, "little") for v in b), "little")
    square = packed * packed
    data = square.to_bytes(width * (2 * n - 1), "little")
    prefix = [0]
    for v in a:
        prefix.append(prefix[-1] + v)
    out = []
    for k in range(2 * n - 1):
        lo, hi = max(0, k - n + 1), min(k, n - 1)
        slot = int.from_bytes(data[k * width:(k + 1) * width], "little")
        pairs, partial = hi - lo + 1, prefix[hi + 1] - prefix[lo]
        out.append(slot - 2 * shift * partial - shift * shift * pairs)
    return out


def judge() -> dict:
    """The verdict on the sequence in the working directory."""
    metrics: dict = {"task": NAME, "exact": True}
    try:
        _, listed, raw = read_listing(SEQUENCE_FILE, "values", MAX_BYTES)
        values = heights(listed)
    except Refused as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, "")
    digest = hashlib.sha256(raw).hexdigest()
    n = len(values)
    a, scale = on_one_scale(values)
    total = sum(a)
    metrics["n"] = n
    if Fraction(total * total, (2 * n * scale) ** 2) < MIN_SQUARED_MEAN:
        return verdict(None, False, "invalid: (sum a / 2n)^2 is below 1e-9 (exactly)", metrics,
                       digest)
    conv = autoconvolution(a)
    peak_lag = max(range(len(conv)), key=lambda k: abs(conv[k]))
    bound = Fraction(2 * n * abs(conv[peak_lag]), total * total)
    score = float(bound)
    metrics.update(bound=score, peak_lag=peak_lag)
    return verdict(score, True, f"{NAME} = {score:.12f} for n = {n}, recomputed exactly "
                   f"(integer autoconvolution; peak at lag {peak_lag}); lower is better",
                   metrics, digest)


if __name__ == "__main__":
    sys.exit(write(judge, {"task": NAME}, ""))
