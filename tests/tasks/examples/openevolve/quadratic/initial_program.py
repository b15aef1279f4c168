"""An OpenEvolve-style candidate: find the x that maximises f(x) = 10 - (x - 3)^2."""

# EVOLVE-BLOCK-START
X = 0.5


def guess() -> float:
    """Return the best x found so far."""
    return X


# EVOLVE-BLOCK-END


def run() -> float:
    """The entry point the evaluator calls."""
    return guess()
