"""Policy programs the tests use: good ones, broken ones, and an answer that wraps one."""

from __future__ import annotations

GREEDY = '''\
"""Open three branches, then extend the two best."""

import math


class ExplorationPolicy:
    name = "greedy-code"

    def reset(self, context):
        self.branches = 3

    def select(self, view, budget):
        if view.branch_count() < self.branches:
            return [view.root_id] * min(budget.workers, self.branches - view.branch_count())
        ranked = sorted(view.leaf_stats(), key=lambda b: -(b.best if b.best is not None
                                                            else -math.inf))
        return [b.tip for b in ranked[:budget.workers]]
'''

FRUGAL = '''\
class ExplorationPolicy:
    name = "one-branch"

    def reset(self, context):
        pass

    def select(self, view, budget):
        if view.size == 0:
            return [view.root_id]
        if view.size < 3:
            return list(view.leaves())[:1]
        return []
'''

RAISES = '''\
class ExplorationPolicy:
    def reset(self, context):
        pass

    def select(self, view, budget):
        return [view.leaves()[7]]
'''

HOSTILE = '''\
class ExplorationPolicy:
    def reset(self, context):
        pass

    def select(self, view, budget):
        g = (x for x in [1])
        frame = g.gi_frame.f_back
        return []
'''


def answer(program: str) -> str:
    """A model's answer holding ``program``."""
    return f"Here is a better policy.\n\n```python\n{program}```\n"
