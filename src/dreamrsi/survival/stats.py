"""The paired delta of a survival pass: its mean and a 95 % t interval."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Delta", "paired_delta", "spread"]


@dataclass(frozen=True, slots=True)
class Delta:
    """Candidate minus base, per repeat, in the normalised (higher is better) direction.

    ``low``/``high`` bound the 95 % t interval of the mean; with no spread (all pairs equal,
    or one pair) the interval is the point ``mean``.
    """

    pairs: tuple[float, ...]
    mean: float
    low: float
    high: float

    def as_dict(self) -> dict[str, object]:
        """The delta as the report holds it."""
        return {"pairs": list(self.pairs), "mean": self.mean, "low": self.low,
                "high": self.high, "confidence": 0.95}


def paired_delta(candidate: Sequence[float], base: Sequence[float]) -> Delta:
    """The delta of paired scores (``candidate[i]`` with ``base[i]``)."""
    from scipy import stats  # type: ignore[import-untyped]

    pairs = tuple(c - b for c, b in zip(candidate, base, strict=True))
    if not pairs:
        raise ValueError("no paired repeats")
    mean = statistics.fmean(pairs)
    sd = statistics.stdev(pairs) if len(pairs) > 1 else 0.0
    if sd == 0.0 or not math.isfinite(sd):
        return Delta(pairs, mean, mean, mean)
    half = float(stats.t.ppf(0.975, len(pairs) - 1)) * sd / math.sqrt(len(pairs))
    return Delta(pairs, mean, mean - half, mean + half)


def spread(values: Sequence[float]) -> float:
    """The largest minus the smallest of ``values`` (0 for none)."""
    return max(values) - min(values) if values else 0.0
