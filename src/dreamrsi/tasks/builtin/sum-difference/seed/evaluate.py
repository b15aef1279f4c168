"""Evaluate ``set.json``: a set A of integers, score Γ(A) = log(|A+A|/|A|) / log(|A-A|/|A|).

The candidate is ``{"elements": [a_1, ..., a_k]}``: distinct JSON integers, 2 <= k <= 512,
|a| <= 10^6. Γ > 1 exactly when A has more sums than differences; larger is better. Both ratios
must exceed 1 (they do for every set of two or more integers, but the check stays explicit).

Emits one JSON object ``{"score", "valid", "feedback", "metrics", "candidate_hash"}`` as the last
line of stdout.
Always exits 0. |A+A| and |A-A| are counted from scratch with Python integers; any other key in
the file (a "score", a proposer's "construction") is ignored. Γ is invariant under x -> u*x + v
(u != 0), so the hash covers a normal form: translated to start at 0, divided by the gcd of the
elements, and the smaller of that and its mirror image. Affine copies hash alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys

from verdict import verdict, write

SET_FILE = "set.json"
MIN_SIZE = 2
MAX_SIZE = 512
MAX_ABS = 10**6
BEST_KNOWN = 1.145427
REFERENCES = (
    ("Dream-RSI", 1.145427),
    ("SimpleTES (|A| = 506)", 1.1448869),
    ("AlphaEvolve-v2 (|A| = 309)", 1.1219357),
)
NO_FILE_HASH = hashlib.sha256(b"").hexdigest()


class Rejected(Exception):
    """The file does not hold a valid set; the message says why."""


def _reject_constant(token: str) -> float:
    raise Rejected(f"{SET_FILE} contains the non-finite number {token}; only integers")


def load_elements(text: str) -> tuple[list[int], list[str]]:
    """Parse and check the file's text; returns the elements and the names of ignored keys."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:  # JSONDecodeError, or an integer literal too long to convert
        raise Rejected(f"{SET_FILE} is not valid JSON: {exc}") from None
    except RecursionError:
        raise Rejected(f"{SET_FILE} is nested too deeply to be a set") from None
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise Rejected(f'{SET_FILE} must hold an object {{"elements": [...]}}, not a {kind}')
    if "elements" not in data:
        raise Rejected("key 'elements' is missing")
    raw = data["elements"]
    if not isinstance(raw, list):
        raise Rejected(f"'elements' must be a list of integers, not a {type(raw).__name__}")
    if not MIN_SIZE <= len(raw) <= MAX_SIZE:
        raise Rejected(
            f"'elements' has {len(raw)} entries; between {MIN_SIZE} and {MAX_SIZE} are required"
        )
    seen: dict[int, int] = {}
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, int):
            hint = " (write integers without a decimal point)" if isinstance(v, float) else ""
            raise Rejected(f"elements[{i}] = {json.dumps(v)[:40]} is not an integer{hint}")
        if abs(v) > MAX_ABS:
            raise Rejected(f"elements[{i}] = {v} exceeds the bound |a| <= {MAX_ABS}")
        if v in seen:
            raise Rejected(f"elements[{i}] = {v} repeats elements[{seen[v]}]; A must be a set")
        seen[v] = i
    ignored = sorted(str(key) for key in data if key != "elements")
    return list(raw), ignored


def normal_form(elements: list[int]) -> list[int]:
    """The affine normal form: start at 0, divide by the gcd, the smaller of it and its mirror."""
    low = min(elements)
    shifted = sorted(a - low for a in elements)
    g = math.gcd(*shifted) or 1
    forward = [a // g for a in shifted]
    top = forward[-1]
    mirror = sorted(top - a for a in forward)
    return min(forward, mirror)


def canonical_hash(elements: list[int]) -> str:
    """sha256 of the affine normal form, so translated, scaled or mirrored copies hash alike."""
    text = ",".join(map(str, normal_form(elements)))
    return hashlib.sha256(text.encode()).hexdigest()


def evaluate(path: str = SET_FILE) -> dict:
    """Score the set at ``path`` and explain the score."""
    metrics: dict = {"size": None, "best_known": BEST_KNOWN}
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return verdict(None, False, f"invalid: {SET_FILE} is missing", metrics, NO_FILE_HASH)
    except OSError as exc:
        feedback = f"invalid: cannot read {SET_FILE}: {exc}"
        return verdict(None, False, feedback, metrics, NO_FILE_HASH)
    try:
        elements, ignored = load_elements(raw.decode("utf-8"))
    except UnicodeDecodeError:
        feedback = f"invalid: {SET_FILE} is not UTF-8"
        return verdict(None, False, feedback, metrics, hashlib.sha256(raw).hexdigest())
    except Rejected as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, hashlib.sha256(raw).hexdigest())

    a = sorted(elements)
    n = len(a)
    sums = len({x + y for i, x in enumerate(a) for y in a[i:]})
    differences = len({x - y for x in a for y in a})
    span = a[-1] - a[0]
    metrics.update(
        size=n,
        sums=sums,
        differences=differences,
        sum_ratio=sums / n,
        difference_ratio=differences / n,
        span=span,
        density=n / (span + 1),
        missing_sums=2 * span + 1 - sums,
        missing_differences=2 * span + 1 - differences,
    )
    digest = canonical_hash(a)
    if sums <= n or differences <= n:
        feedback = (
            f"invalid: |A+A|/|A| = {sums}/{n} and |A-A|/|A| = {differences}/{n} must both "
            "exceed 1 for the logarithms to be positive"
        )
        return verdict(None, False, feedback, metrics, digest)
    score = math.log(sums / n) / math.log(differences / n)
    metrics["gap_to_best"] = BEST_KNOWN - score
    return verdict(score, True, _explain(score, metrics, ignored), metrics, digest)


def _explain(score: float, m: dict, ignored: list[str]) -> str:
    """Feedback for a valid set: the value, where it stands, what limits it."""
    gap = BEST_KNOWN - score
    standing = f"gap {gap:.4g}" if gap > 0 else f"beats it by {-gap:.4g}"
    others = "; ".join(f"{name} {value}" for name, value in REFERENCES[1:])
    excess = m["sums"] - m["differences"]
    if excess > 0:
        balance = f"{excess} more sums than differences (Γ > 1)"
    elif excess == 0:
        balance = "as many sums as differences (Γ = 1)"
    else:
        balance = f"{-excess} more differences than sums (Γ < 1)"
    text = (
        f"Γ = {score:.7f} with |A| = {m['size']}: |A+A| = {m['sums']} "
        f"(x{m['sum_ratio']:.4g}), |A-A| = {m['differences']} (x{m['difference_ratio']:.4g}), "
        f"{balance}. Best known {BEST_KNOWN} ({standing}); {others}. A spans {m['span']} "
        f"(density {m['density']:.3g}); A+A misses {m['missing_sums']} and A-A misses "
        f"{m['missing_differences']} of the {2 * m['span'] + 1} values in their ranges. "
        "Γ grows when sums are gained or differences lost at a fixed |A|. In the bulk, a set "
        "periodic mod M with residue pattern P scores about ln(2|P+P|/|P|) / ln(2|P-P|/|P|) "
        "(P+P, P-P taken mod M); the two ends add or lose the rest."
    )
    if ignored:
        text += f" Ignored key(s) {', '.join(ignored)}: the score is always recomputed."
    return text




def main() -> int:
    return write(evaluate, {}, NO_FILE_HASH)


if __name__ == "__main__":
    sys.exit(main())
