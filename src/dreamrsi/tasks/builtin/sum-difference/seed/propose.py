"""Propose a new ``set.json``: search residue patterns mod M, realise them, polish the two ends.

Why patterns: a set that is periodic mod M with residue pattern P has, away from its ends,
|A+A| ~ 2N|P+P|/M and |A-A| ~ 2N|P-P|/M for N periods of length M, so its Γ tends to
ln(2|P+P|/|P|) / ln(2|P-P|/|P|) with P+P and P-P taken in Z_M. A pattern whose sums cover Z_M
while its differences miss residues therefore scores well above 1, and the search over P is
cheap (bitsets of M bits). The ends ("fringes") are then tuned element by element.

Reads the attempt context from ``$DREAM_CONTEXT`` (defaults when absent: seed 0, improve the set
in place). A child of the root (depth 0) starts a fresh branch: simulated annealing over
patterns P in Z_M for four random moduli M, the best pattern's best phase and length as an
integer set (|A| <= 512), then annealing of the fringes; or, when the context names elites of
earlier trees (``history``), half the time one operator below applied to an elite's set (its
plan names the elite, and its ``HISTORY:`` line the elite's run; every other attempt prints
``HISTORY: none``, having used nothing of the history). Deeper attempts detect the parent's
period and pattern and apply one operator: re-anneal the pattern, lift it to modulus 2M and
anneal it there, jump to a fresh pattern (at a multiple of M or another modulus), re-anneal
the fringes, or resize the core by whole periods. Without a detectable period only the
fringe annealing runs. Element moves update multiplicity counters of sums and differences in
O(|A|) (numpy), never recounting from scratch. Step counts are fixed and all randomness comes
from the context's seed, so the same context reproduces the same set; a child that would equal
its parent (up to the evaluator's affine normal form) gets one forced fringe move.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

SET_FILE = "set.json"
MAX_SIZE = 512
MAX_ABS = 10**6
FRESH_MODULI = (20, 24, 28, 30, 32, 36, 40, 42, 48)
FRESH_RESTARTS, FRESH_STEPS = 4, 4000  # pattern annealing of a fresh branch
CHILD_STEPS = 5000  # pattern annealing of a child
MAX_PERIOD = 256  # longest period looked for in a parent


# ----------------------------------------------------------------------------- patterns mod M


def pattern_gamma(pattern: set[int], m: int) -> float:
    """The bulk Γ of a set periodic mod m with these residues: ln(2|P+P|/|P|)/ln(2|P-P|/|P|)."""
    n = len(pattern)
    if n < 2:
        return 0.0
    mask = neg = 0
    for p in pattern:
        mask |= 1 << p
        neg |= 1 << (-p % m)
    sums = diffs = 0
    for p in pattern:
        sums |= mask << p
        diffs |= neg << p
    full = (1 << m) - 1
    s = ((sums & full) | (sums >> m)).bit_count()
    d = ((diffs & full) | (diffs >> m)).bit_count()
    return math.log(2 * s / n) / math.log(2 * d / n)


def anneal_pattern(
    pattern: set[int], m: int, steps: int, t_hot: float, t_cold: float, rng: np.random.Generator
) -> tuple[set[int], float]:
    """Simulated annealing over residue sets: swap one residue (70%) or toggle one (30%)."""
    pattern = set(pattern)
    current = best_value = pattern_gamma(pattern, m)
    best = set(pattern)
    u = rng.random((steps, 3))
    temps = t_hot * (t_cold / t_hot) ** (np.arange(steps) / max(steps, 1))
    for step in range(steps):
        members = sorted(pattern)
        y = int(u[step, 1] * m)
        if u[step, 0] < 0.7:
            if y in pattern:
                continue
            x = members[int(u[step, 2] * len(members))]
            pattern.remove(x)
            pattern.add(y)
            removed, added = x, y
        elif y in pattern:
            if len(pattern) <= 3:
                continue
            pattern.remove(y)
            removed, added = y, None
        else:
            pattern.add(y)
            removed, added = None, y
        value = pattern_gamma(pattern, m)
        if value >= current or u[step, 2] < math.exp((value - current) / temps[step]):
            current = value
            if value > best_value:
                best_value, best = value, set(pattern)
        else:
            if added is not None:
                pattern.remove(added)
            if removed is not None:
                pattern.add(removed)
    return best, best_value


# ------------------------------------------------------------------------------ integer sets


def gamma_of(elements: list[int]) -> float:
    """Γ of a set, counting sums and differences with one FFT (exact for these sizes)."""
    a = np.asarray(elements, dtype=np.int64)
    a -= a.min()
    ind = np.zeros(int(a.max()) + 1)
    ind[a] = 1.0
    size = 1 << int(2 * ind.size).bit_length()
    f = np.fft.rfft(ind, size)
    sums = np.count_nonzero(np.fft.irfft(f * f, size) > 0.5)
    diffs = np.count_nonzero(np.fft.irfft(f * np.conj(f), size) > 0.5)
    return math.log(sums / a.size) / math.log(diffs / a.size)


def realise(pattern: set[int], m: int, rng: np.random.Generator, tries: int = 12) -> list[int]:
    """The best of a few phases and tail lengths for a periodic set with this pattern."""
    n = len(pattern)
    periods = max(2, (MAX_SIZE - n) // n)
    best: tuple[float, list[int]] | None = None
    for _ in range(tries):
        phase, tail = int(rng.integers(m)), int(rng.integers(m))
        elements = [x for x in range(phase, phase + periods * m + tail) if x % m in pattern]
        if not 2 <= len(elements) <= MAX_SIZE:
            continue
        value = gamma_of(elements)
        if best is None or value > best[0]:
            best = (value, elements)
    assert best is not None, "a periodic set always fits"
    return best[1]


def detect_period(elements: list[int]) -> tuple[int, set[int]] | None:
    """The smallest period of the middle half of the set and its residues, if there is one."""
    a = np.asarray(sorted(elements), dtype=np.int64) - min(elements)
    span = int(a[-1])
    ind = np.zeros(span + 1, dtype=bool)
    ind[a] = True
    lo, hi = span // 4, 3 * span // 4
    for m in range(1, min(MAX_PERIOD, (hi - lo) // 3) + 1):
        if np.array_equal(ind[lo : hi - m], ind[lo + m : hi]):
            residues = {int(x) % m for x in np.flatnonzero(ind[lo:hi]) + lo}
            shift = min(elements)
            return m, {(r + shift) % m for r in residues}
    return None


class Counter:
    """A set of integers in [0, width) with multiplicity counters of its sums and differences."""

    def __init__(self, elements: list[int], width: int):
        self.width = width
        self.members = np.zeros(MAX_SIZE + 1, dtype=np.int64)
        self.index: dict[int, int] = {}
        self.sums = np.zeros(2 * width, dtype=np.int32)  # unordered pairs, a <= b
        self.diffs = np.zeros(2 * width, dtype=np.int32)  # ordered pairs a != b, at d + width
        self.distinct_sums = 0
        self.distinct_diffs = 1  # 0 is always a difference
        for x in elements:
            self.add(x)

    @property
    def size(self) -> int:
        return len(self.index)

    def gamma(self) -> float:
        n = self.size
        return math.log(self.distinct_sums / n) / math.log(self.distinct_diffs / n)

    def add(self, x: int) -> None:
        others = self.members[: self.size]
        at = others + x
        before = self.sums[at]
        self.distinct_sums += int(np.count_nonzero(before == 0)) + int(self.sums[2 * x] == 0)
        self.sums[at] = before + 1
        self.sums[2 * x] += 1
        for at in (x - others + self.width, others - x + self.width):
            before = self.diffs[at]
            self.distinct_diffs += int(np.count_nonzero(before == 0))
            self.diffs[at] = before + 1
        self.members[self.size] = x
        self.index[x] = self.size

    def remove(self, x: int) -> None:
        slot = self.index.pop(x)
        last = int(self.members[self.size])
        if slot != self.size:
            self.members[slot] = last
            self.index[last] = slot
        others = self.members[: self.size]
        at = others + x
        after = self.sums[at] - 1
        self.sums[at] = after
        self.sums[2 * x] -= 1
        self.distinct_sums -= int(np.count_nonzero(after == 0)) + int(self.sums[2 * x] == 0)
        for at in (x - others + self.width, others - x + self.width):
            after = self.diffs[at] - 1
            self.diffs[at] = after
            self.distinct_diffs -= int(np.count_nonzero(after == 0))

    def toggle(self, x: int) -> None:
        if x in self.index:
            self.remove(x)
        else:
            self.add(x)

    def elements(self) -> list[int]:
        return sorted(self.index)


def _fringe_counter(elements: list[int], reach: int) -> tuple[Counter, np.ndarray, int]:
    """A counter of the set shifted to start at ``reach + 1``, the positions within ``reach`` of
    either end (and up to ``2 reach`` inside), and the shift."""
    low = min(elements)
    span = max(elements) - low
    margin = reach + 1
    width = span + 2 * margin + 1
    counter = Counter([x - low + margin for x in elements], width)
    ends = np.concatenate(
        (
            np.arange(margin - reach, margin + 2 * reach),
            np.arange(margin + span - 2 * reach, margin + span + reach + 1),
        )
    )
    ends = np.unique(ends[(ends >= 0) & (ends < width)])
    return counter, ends, margin - low


def anneal_fringes(
    elements: list[int], reach: int, steps: int, rng: np.random.Generator
) -> list[int]:
    """Anneal single-element toggles near either end of the set; returns the best set seen."""
    counter, ends, shift = _fringe_counter(elements, reach)
    current = best_value = counter.gamma()
    best = counter.elements()
    picks = rng.integers(ends.size, size=steps)
    u = rng.random(steps)
    temps = 5e-5 * (0.02 ** (np.arange(steps) / max(steps, 1)))
    for step in range(steps):
        x = int(ends[picks[step]])
        adding = x not in counter.index
        if (adding and counter.size >= MAX_SIZE) or (not adding and counter.size <= 2):
            continue
        counter.toggle(x)
        value = counter.gamma()
        if value >= current or u[step] < math.exp((value - current) / temps[step]):
            current = value
            if value > best_value:
                best_value, best = value, counter.elements()
        else:
            counter.toggle(x)
    return [x - shift for x in best]


def forced_move(elements: list[int], reach: int, rng: np.random.Generator) -> list[int]:
    """The least harmful of a few random single toggles near the ends (|A| changes by one)."""
    counter, ends, shift = _fringe_counter(elements, reach)
    best: tuple[float, int] | None = None
    for x in rng.choice(ends, size=min(24, ends.size), replace=False):
        x = int(x)
        adding = x not in counter.index
        if (adding and counter.size >= MAX_SIZE) or (not adding and counter.size <= 2):
            continue
        counter.toggle(x)
        if best is None or counter.gamma() > best[0]:
            best = (counter.gamma(), x)
        counter.toggle(x)
    if best is not None:
        counter.toggle(best[1])
    return [x - shift for x in counter.elements()]


# ------------------------------------------------------------------------------------ driver


def fresh_branch(rng: np.random.Generator) -> tuple[list[int], str]:
    """A random modulus, an annealed pattern, its best realisation, annealed fringes."""
    best: tuple[float, int, set[int]] = (-math.inf, 0, set())
    moduli = rng.choice(FRESH_MODULI, size=FRESH_RESTARTS, replace=False)
    for m in map(int, moduli):
        start = {int(x) for x in rng.choice(m, size=max(3, m // 3), replace=False)}
        pattern, value = anneal_pattern(start, m, FRESH_STEPS, 1e-2, 3e-4, rng)
        if value > best[0]:
            best = (value, m, pattern)
    value, m, pattern = best
    elements = anneal_fringes(realise(pattern, m, rng), m, 300, rng)
    tried = ", ".join(map(str, sorted(map(int, moduli))))
    return elements, (
        f"fresh branch: annealed residue patterns mod {tried}; the best, mod {m} "
        f"(|P| = {len(pattern)}, bulk Γ {value:.5f}), realised as a periodic set, fringes annealed"
    )


def child(elements: list[int], rng: np.random.Generator) -> tuple[list[int], str]:
    """Apply one operator to the parent's set."""
    found = detect_period(elements)
    if found is None:
        reach = max(4, (max(elements) - min(elements)) // 4)
        new = anneal_fringes(elements, reach, 1500, rng)
        return new, f"no period found: annealed single elements within {reach} of the ends"
    m, pattern = found
    ops = ["pattern", "lift", "jump", "fringes", "resize"]
    op = rng.choice(ops, p=[0.25, 0.25, 0.15, 0.2, 0.15])
    if op == "lift" and 2 * m > MAX_PERIOD:
        op = "pattern"
    before = pattern_gamma(pattern, m)
    if op == "pattern":
        pattern, value = anneal_pattern(pattern, m, CHILD_STEPS, 1e-2, 1e-4, rng)
        new = anneal_fringes(realise(pattern, m, rng), m, 200, rng)
        return new, f"re-annealed the pattern mod {m} (bulk Γ {before:.5f} -> {value:.5f})"
    if op == "jump":  # a new pattern from scratch, at a multiple of m or another modulus
        multiple = m * int(rng.integers(2, 4))
        other = int(rng.choice(FRESH_MODULI))
        best: tuple[float, int, set[int]] = (-math.inf, 0, set())
        for k in (multiple, other) if multiple <= 3 * max(FRESH_MODULI) else (other,):
            start = {int(x) for x in rng.choice(k, size=max(3, k // 3), replace=False)}
            found, value = anneal_pattern(start, k, CHILD_STEPS // 2, 1e-2, 3e-4, rng)
            if value > best[0]:
                best = (value, k, found)
        value, k, pattern = best
        new = anneal_fringes(realise(pattern, k, rng), k, 200, rng)
        return new, (
            f"jumped from the pattern mod {m} (bulk Γ {before:.5f}) to a fresh one mod {k} "
            f"(bulk Γ {value:.5f})"
        )
    if op == "lift":
        lifted = pattern | {p + m for p in pattern}
        pattern, value = anneal_pattern(lifted, 2 * m, CHILD_STEPS, 5e-3, 1e-4, rng)
        new = anneal_fringes(realise(pattern, 2 * m, rng), 2 * m, 200, rng)
        idea = f"lifted the pattern mod {m} to mod {2 * m} and annealed it (bulk Γ {value:.5f})"
        return new, idea
    if op == "resize":
        k = int(rng.integers(1, 4))
        a = sorted(elements)
        mid = (a[0] + a[-1]) // 2  # inside the periodic core, so whole periods cut cleanly
        if rng.random() < 0.5 or len(a) + k * len(pattern) > MAX_SIZE:
            resized = [x for x in a if x < mid] + [x - k * m for x in a if x >= mid + k * m]
            what = f"removed {k} period(s) of {m} from the middle of the core"
        else:
            inserted = [x for x in range(mid, mid + k * m) if x % m in pattern]
            resized = [x for x in a if x < mid] + inserted + [x + k * m for x in a if x >= mid]
            what = f"inserted {k} period(s) of {m} into the core"
        if not 2 <= len(resized) <= MAX_SIZE:
            resized, what = a, "kept the core's length"
        new = anneal_fringes(resized, m, 600, rng)
        return new, f"{what}, then annealed the fringes"
    new = anneal_fringes(elements, 2 * m, 1500, rng)
    return new, f"annealed single elements within {2 * m} of the ends (period {m})"


def normal_form(elements: list[int]) -> list[int]:
    """The evaluator's affine normal form (start at 0, divide by the gcd, min with the mirror)."""
    low = min(elements)
    shifted = sorted(a - low for a in elements)
    g = math.gcd(*shifted) or 1
    forward = [a // g for a in shifted]
    return min(forward, sorted(forward[-1] - a for a in forward))


def load_set(path: str = SET_FILE) -> list[int] | None:
    """The parent's elements, or None when the file is missing or not a usable set."""
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)["elements"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(raw, list) or not all(type(x) is int for x in raw):
        return None
    elements = sorted(set(raw))
    if not 2 <= len(elements) <= MAX_SIZE:
        return None
    return elements


def save_set(elements: list[int], path: str = SET_FILE) -> None:
    """Write the set, translated to start at 0 (or centred on 0 when it spans over 10^6)."""
    span = max(elements) - min(elements)
    low = min(elements) + (span // 2 if span > MAX_ABS else 0)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"elements": [x - low for x in sorted(elements)]}, fh)
        fh.write("\n")
    os.replace(tmp, path)


def read_context() -> dict:
    """The attempt context, or defaults when ``$DREAM_CONTEXT`` is unset."""
    path = os.environ.get("DREAM_CONTEXT")
    if not path:
        return {"seed": 0, "parent": None}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def pick_elite(ctx: dict, rng: np.random.Generator) -> dict | None:
    """An elite of the completed history to start a fresh branch from, or None.

    The context's ``history`` names the best nodes of the task's earlier trees, each with a
    folder holding its workspace. When it names any, half the fresh branches start from one
    of them (chosen uniformly); without history nothing is drawn, so a run without it is what
    it always was.
    """
    elites = [e for e in ctx.get("history") or [] if isinstance(e, dict)
              and isinstance(e.get("workspace"), str)]
    if not elites or rng.random() < 0.5:
        return None
    return elites[int(rng.integers(len(elites)))]


def elite_name(elite: dict) -> str:
    """How a plan names the elite it starts from."""
    score = elite.get("score")
    shown = f"{score:.7f}" if isinstance(score, int | float) else "unscored"
    return f"elite {elite.get('node_id')} of run {elite.get('run_id')} ({shown})"


def main() -> int:
    ctx = read_context()
    rng = np.random.default_rng(abs(int(ctx.get("seed") or 0)))
    parent = ctx.get("parent") or {}
    elements = load_set()
    elite = pick_elite(ctx, rng) if parent.get("depth") == 0 else None
    from_elite = None if elite is None else load_set(os.path.join(elite["workspace"],
                                                                  SET_FILE))
    if from_elite is not None:
        new, idea = child(from_elite, rng)
        if normal_form(new) == normal_form(from_elite):
            new = forced_move(new, max(4, (max(new) - min(new)) // 8), rng)
        idea = f"new branch from {elite_name(elite or {})}: {idea}"
    elif elements is None or parent.get("depth") == 0:
        new, idea = fresh_branch(rng)
    else:
        new, idea = child(elements, rng)
        if normal_form(new) == normal_form(elements):
            new = forced_move(new, max(4, (max(new) - min(new)) // 8), rng)
            idea += " (that gave the parent back, so one forced fringe move)"
    print(f"PLAN: {idea}")
    print(f"HISTORY: {'none' if from_elite is None else (elite or {}).get('run_id')}")
    save_set(new)
    before = "none" if elements is None else f"{gamma_of(elements):.7f}"
    print(f"Γ {gamma_of(new):.7f} with |A| = {len(new)} (parent set {before})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
