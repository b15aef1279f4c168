"""Hypothesis strategies for random parameters of every built-in policy family."""

from __future__ import annotations

from hypothesis import strategies as st

FAMILIES: dict[str, st.SearchStrategy[dict[str, object]]] = {
    "fixed": st.fixed_dictionaries({"branches": st.integers(1, 4), "refine": st.integers(0, 5)}),
    "greedy": st.fixed_dictionaries({"branches": st.integers(1, 4), "top": st.integers(0, 2)}),
    "ucb": st.fixed_dictionaries({"c": st.floats(0.0, 2.0), "fresh": st.floats(0.0, 1.0),
                                  "max_branches": st.integers(1, 4)}),
    "halving": st.fixed_dictionaries({"n0": st.integers(1, 4), "r0": st.integers(1, 3),
                                      "eta": st.integers(2, 3), "finish": st.booleans()}),
    "stagnation": st.fixed_dictionaries({"patience": st.integers(1, 4),
                                         "initial": st.integers(0, 3),
                                         "max_branches": st.integers(1, 4)}),
    "allocation": st.fixed_dictionaries({"lam": st.floats(0.0, 1.0),
                                         "max_branches": st.integers(1, 4)}),
    "planned": st.fixed_dictionaries({"quantile": st.floats(0.0, 1.0),
                                      "min_branches": st.integers(1, 3)}),
    "ladder": st.fixed_dictionaries({"longest": st.integers(1, 5), "levels": st.integers(1, 3)}),
}
"""Each family's name and a strategy for a dict of its parameters."""
