"""A batch chooser asked for one slot against the family's one-slot chooser, at W = 1.

Issue 34 asked whether one batch chooser per family could replace the one-slot form, with
the batch-of-one path generated once in the driver rather than written per family. Here each
family with a batch chooser (``allocation``, ``stagnation``, ``ucb``, ``greedy``, ``fixed``,
``ladder``, ``planned``) replays 2,000-node trees
at W = 1 both ways through ``core.episode.play``: its own one-slot chooser, and its batch
chooser wrapped as the driver would wrap it (fed ``[state]``, a shared ``Budget(1)``, the
answer's one entry). Both replays are checked equal first; the table gives the median and
range of three interleaved ratios (batch-of-one / one-slot, reveals per CPU second).

Usage: python benchmarks/bench_batch_of_one.py [--families ...]
"""
import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section
from _shapes import bushy_tree, chain_tree, family_specs
from dreamrsi.core.policy import STOP, Budget, GridPlan
from dreamrsi.core.replay import replay
from dreamrsi.policies import make_policy


def as_batch(policy: Any) -> Any:
    """``policy`` whose chooser at W = 1 is its batch chooser asked for one slot."""
    cls = type(policy)

    class Batch(cls):  # type: ignore[valid-type,misc]
        def chooser(self, root: Any, workers: int, plan: Any) -> Any:
            many = cls.chooser(self, root, 2, plan)
            if many is None:
                return None
            budget = Budget(1, None, None)

            def one(state: Any) -> Any:  # the batch-of-one path a driver would generate
                batch = many([state] if state is not None else [], budget)
                return batch if type(batch) is str else batch[0] if batch else STOP
            return one

        def select(self, view: Any, budget: Any) -> Any:
            return cls.select(self, view, budget)

        def reset(self, context: Any) -> None:
            cls.reset(self, context)

    Batch.__name__ = cls.__name__
    return Batch(**{f: getattr(policy, f) for f in policy.__dataclass_fields__})


def rate(policy: Any, tree: Any, plan: Any, seconds: float = 0.3) -> float:
    """Reveals per CPU second replaying ``tree`` at W = 1 for about ``seconds``."""
    n = 0
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        n += replay(policy, tree, workers=1, max_rounds=tree.size, plan=plan,
                    keep_order=False).revealed
    return n / (time.process_time() - t0)


FAMILIES = ("allocation", "stagnation", "ucb", "greedy", "fixed", "ladder", "planned")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    args = parser.parse_args()
    load = os.getloadavg()[0]
    trees = (("chains", chain_tree(2000)), ("bushy-10", bushy_tree(2000, 0.1)),
             ("bushy-30", bushy_tree(2000, 0.3)))
    lines = ["| family | tree | batch-of-one / one-slot, median [range] |", "|---|---|---:|"]
    print("\n".join(lines), flush=True)
    for shape, tree in trees:
        for family in args.families:
            spec, grid = family_specs(tree)[family]
            plan = None if grid is None else GridPlan(grid[0], grid[1], "bench")
            one, batch = make_policy(spec), as_batch(make_policy(spec))
            assert replay(one, tree, workers=1, max_rounds=tree.size, plan=plan) == replay(
                batch, tree, workers=1, max_rounds=tree.size, plan=plan), (family, shape)
            ratios = sorted(rate(batch, tree, plan) / rate(one, tree, plan) for _ in range(3))
            lines.append(f"| {family} | {shape} | {ratios[1]:.2f} [{ratios[0]:.2f}, "
                         f"{ratios[2]:.2f}] |")
            print(lines[-1], flush=True)
    lines.append(f"\nLoad average (1 min) at the start and the end: {load:.1f}, "
                 f"{os.getloadavg()[0]:.1f} ({len(os.sched_getaffinity(0))} CPUs; above "
                 "that count the machine was shared).")
    write_section("batch-of-one", "A batch chooser asked for one slot against the one-slot "
                  "chooser, at W = 1", "\n".join(lines),
                  "python benchmarks/bench_batch_of_one.py --families "
                  + " ".join(args.families))


if __name__ == "__main__":
    main()
