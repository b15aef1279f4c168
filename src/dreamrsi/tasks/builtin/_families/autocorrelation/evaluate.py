"""Evaluate ``sequence.json`` for an autocorrelation inequality: the first (C1) or third (C3).

Which one is the task's parameter, read from ``params.json`` (a protected file, so the same
evaluator serves both tasks) with the reference values the feedback quotes. The candidate
``{"values": [a_0, ..., a_{n-1}]}`` gives the heights of a step function with n equal steps on
[-1/4, 1/4], non-negative for C1, of any sign for C3. Its score, to be minimised, is

    C1 = 2n * max_k (a*a)_k / (sum a)^2    or    C3 = 2n * max_k |(a*a)_k| / (sum a)^2,

where a*a is the full discrete autoconvolution (length 2n-1). Valid when 1 <= n <= 4000, every
value is a finite number with |a| <= 1e10 (for C1 also a >= 0; the feedback names the first
negative entry) and (sum a / (2n))^2 >= 1e-9.

Emits one JSON object ``{"score", "valid", "feedback", "metrics", "candidate_hash"}`` as the last
line of stdout.
Always exits 0. The score is recomputed from the values; any other key in the file (a "score")
is ignored. The hash covers the raw values (as exact float64 bits, so 1 and 1.0 agree): scaled
copies score the same but hash differently, because they are different files.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys

from verdict import verdict, write

PARAMS_FILE = "params.json"
with open(PARAMS_FILE, encoding="utf-8") as _fh:
    _PARAMS = json.load(_fh)
TASK = str(_PARAMS["inequality"])  # "C1" or "C3"
NONNEGATIVE = bool(_PARAMS["nonnegative"])  # C1: a >= 0; C3: any sign
PEAK = "a*a" if NONNEGATIVE else "|a*a|"
SEQUENCE_FILE = "sequence.json"
BEST_KNOWN = float(_PARAMS["best_known"])
REFERENCES = tuple((str(name), float(value)) for name, value in _PARAMS["references"])
MAX_N = 4000
MAX_ABS = 1e10
MIN_SQUARED_INTEGRAL = 1e-9
NEAR_PEAK = 1e-3  # lags within this fraction of the peak count as "near the peak"
NO_FILE_HASH = hashlib.sha256(b"").hexdigest()


class Rejected(Exception):
    """The file does not hold a valid sequence; the message says why."""


def _reject_constant(token: str) -> float:
    raise Rejected(f"{SEQUENCE_FILE} contains the non-finite number {token}; only finite numbers")


def load_values(text: str) -> tuple[list[float], list[str]]:
    """Parse and check the file's text; returns the values and the names of ignored keys."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:  # JSONDecodeError, or an integer literal too long to convert
        raise Rejected(f"{SEQUENCE_FILE} is not valid JSON: {exc}") from None
    except RecursionError:
        raise Rejected(f"{SEQUENCE_FILE} is nested too deeply to be a sequence") from None
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise Rejected(f'{SEQUENCE_FILE} must hold an object {{"values": [...]}}, not a {kind}')
    if "values" not in data:
        raise Rejected("key 'values' is missing")
    raw = data["values"]
    if not isinstance(raw, list):
        raise Rejected(f"'values' must be a list of numbers, not a {type(raw).__name__}")
    if not 1 <= len(raw) <= MAX_N:
        raise Rejected(f"'values' has {len(raw)} entries; between 1 and {MAX_N} are required")
    values = []
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise Rejected(f"values[{i}] = {json.dumps(v)[:40]} is not a number")
        if isinstance(v, float) and not math.isfinite(v):
            raise Rejected(f"values[{i}] is not finite (the literal overflows a float64)")
        if abs(v) > MAX_ABS:
            raise Rejected(f"values[{i}] = {float(v):.6g} exceeds the bound |a| <= {MAX_ABS:g}")
        values.append(float(v) + 0.0)  # + 0.0 turns -0.0 into 0.0
    if NONNEGATIVE:
        negative = [i for i, v in enumerate(values) if v < 0]
        if negative:
            i = negative[0]
            raise Rejected(
                f"values[{i}] = {values[i]:.6g} is negative ({len(negative)} negative entries "
                "in total); this inequality is over a >= 0"
            )
    ignored = sorted(str(key) for key in data if key != "values")
    return values, ignored


def canonical_hash(values: list[float]) -> str:
    """sha256 of the exact float64 values, in order."""
    text = TASK + ":" + ",".join(v.hex() for v in values)
    return hashlib.sha256(text.encode()).hexdigest()


def evaluate(path: str = SEQUENCE_FILE) -> dict:
    """Score the sequence at ``path`` and explain the score."""
    metrics: dict = {"task": TASK, "n": None, "best_known": BEST_KNOWN}
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return verdict(None, False, f"invalid: {SEQUENCE_FILE} is missing", metrics, NO_FILE_HASH)
    except OSError as exc:
        feedback = f"invalid: cannot read {SEQUENCE_FILE}: {exc}"
        return verdict(None, False, feedback, metrics, NO_FILE_HASH)
    try:
        values, ignored = load_values(raw.decode("utf-8"))
    except UnicodeDecodeError:
        feedback = f"invalid: {SEQUENCE_FILE} is not UTF-8"
        return verdict(None, False, feedback, metrics, hashlib.sha256(raw).hexdigest())
    except Rejected as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, hashlib.sha256(raw).hexdigest())

    n = len(values)
    digest = canonical_hash(values)
    total = math.fsum(values)
    squared_integral = (total / (2 * n)) ** 2
    metrics.update(n=n, sum=total, squared_integral=squared_integral)
    if squared_integral < MIN_SQUARED_INTEGRAL:
        feedback = (
            f"invalid: (sum a / (2n))^2 = {squared_integral:.3e} is below "
            f"{MIN_SQUARED_INTEGRAL:g} (sum a = {total:.6g}, n = {n}): the integral is too close "
            "to 0 for the ratio to mean anything"
        )
        return verdict(None, False, feedback, metrics, digest)

    import numpy as np  # only now: rejecting a malformed file should not pay for the import

    a = np.array(values)
    conv = np.convolve(a, a)
    peak_lag = int(np.argmax(np.abs(conv)))
    peak = float(abs(conv[peak_lag]))
    score = 2 * n * peak / (total * total)
    near = int(np.count_nonzero(np.abs(conv) >= (1 - NEAR_PEAK) * peak))
    metrics.update(
        peak=peak,
        peak_lag=peak_lag,
        peak_sign="+" if conv[peak_lag] >= 0 else "-",
        lags_near_peak=near,
        min_value=min(values),
        max_value=max(values),
        negative_entries=sum(v < 0 for v in values),
        zero_entries=sum(v == 0 for v in values),
        gap_to_best=score - BEST_KNOWN,
    )
    return verdict(score, True, _explain(score, metrics, ignored), metrics, digest)


def _explain(score: float, m: dict, ignored: list[str]) -> str:
    """Feedback for a valid sequence: the value, where it stands, what limits it."""
    n = m["n"]
    gap = score - BEST_KNOWN
    standing = (
        f"gap {gap:.4g} ({100 * gap / BEST_KNOWN:.2f}%)" if gap > 0 else f"beats it by {-gap:.4g}"
    )
    others = "; ".join(f"{name} {value}" for name, value in REFERENCES[1:])
    sign = ""
    if not NONNEGATIVE:
        sign = " (a*a is positive there)" if m["peak_sign"] == "+" else " (a*a is negative there)"
    text = (
        f"{TASK} = {score:.10f} for n = {n} (lower is better); best known {BEST_KNOWN} "
        f"({standing}); {others}. The peak {PEAK} = {m['peak']:.6g} is at lag "
        f"{m['peak_lag']} of 0..{2 * n - 2}{sign}, and {m['lags_near_peak']} lag(s) lie within "
        f"{NEAR_PEAK:.1%} of it: the score is the tallest lag, so it drops only when all of "
        f"these come down together while sum a = {m['sum']:.6g} stays fixed "
        f"(the ratio ignores scale). Values range over [{m['min_value']:.4g}, "
        f"{m['max_value']:.4g}]"
    )
    if not NONNEGATIVE:
        text += f", {m['negative_entries']} negative"
    else:
        text += f", {m['zero_entries']} exactly zero"
    text += "."
    if ignored:
        text += f" Ignored key(s) {', '.join(ignored)}: the score is always recomputed."
    return text




def main() -> int:
    return write(evaluate, {}, NO_FILE_HASH)


if __name__ == "__main__":
    sys.exit(main())
