"""A ShinkaEvolve-style candidate: three numbers in [0, 1] whose sum is as large as possible."""


# EVOLVE-BLOCK-START
def construct():
    """Return the three numbers."""
    return [0.1, 0.1, 0.1]


# EVOLVE-BLOCK-END


def run_experiment(seed=0):
    """The entry point the evaluator calls."""
    return construct()
