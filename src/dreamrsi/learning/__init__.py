"""Learning across runs (seed 000's levels L2 and L3): statistical priors and a value model
fitted from a task family's recorded runs, stored versioned, read by the ``prior`` and
``value`` policy kinds.

- :mod:`~dreamrsi.learning.family`: what a task family is, and its recorded trees;
- :mod:`~dreamrsi.learning.priors`: L2, the cost of an attempt and P(improve) by depth and
  operator, with Beta posteriors;
- :mod:`~dreamrsi.learning.value`: L3, a logistic model of whether extending a branch pays;
- :mod:`~dreamrsi.learning.versions`: fit, store and read versions;
- :mod:`~dreamrsi.learning.kinds`: the policy kinds ``prior:`` and ``value:`` specs name;
- :mod:`~dreamrsi.learning.holdout`: a value model judged on held-out trees, by replay.
"""
