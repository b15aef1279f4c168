"""Mutation check: break one line of each family's formula and show that a test fails.

For each built-in family, one line of the decision replay drives (its chooser: what every
dream runs) is changed in a copy of ``src/`` (a constant or an operator, as a slip would
change it), and the tests that guard the families are run against that copy: the paper's
replay definition (``tests/core/test_episode.py``, which drives ``select`` through a loop
written apart from the driver), the references that rank everything every round
(``tests/policies/test_incremental.py``), the chooser-against-loop comparisons
(``tests/policies/test_choosers.py``) and the families' own tests. A mutation no test
catches is reported as SURVIVED and the script exits 1. For the families whose one-slot
and batch choosers share their formula (``fixed``, ``ladder``, ``planned``, ``greedy``), the
mutant is also run against ``tests/policies/test_widths.py``, W = 1 and W above 1 apart: a
line with both caught shows the break fails a test on both paths.

Usage: python benchmarks/check_mutations.py [--families fixed greedy ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ("tests/policies/test_choosers.py", "tests/policies/test_incremental.py",
         "tests/core/test_episode.py", "tests/policies/test_families.py")

WIDTHS = "tests/policies/test_widths.py"
WIDTH_FAMILIES = ("fixed", "ladder", "planned", "greedy")

#: family (or family-part) -> (file under src/dreamrsi/policies, the line as written,
#: the line broken)
MUTATIONS: dict[str, tuple[str, str, str]] = {
    "fixed": ("fixed_refinement.py",
              "return self.refine + 1, self.branches",
              "return self.refine + 2, self.branches"),
    "ladder": ("ladder.py",
               "return self._length, len(self._lengths)",
               "return self._length, len(self._lengths) + 1"),
    "planned": ("planned.py",
                "return grid.refine_count + 1, grid.branch_count",
                "return grid.refine_count + 2, grid.branch_count"),
    "greedy": ("_common.py",
               "return branch.best is None, -(branch.best or 0.0), position",
               "return branch.best is None, (branch.best or 0.0), position"),
    "halving": ("halving.py",
                "keep = max(1, math.ceil(len(survivors) / eta))",
                "keep = max(1, math.ceil(len(survivors) / eta) + 1)"),
    "stagnation": ("stagnation.py",
                   "if revealed.since_best < patience and (",
                   "if revealed.since_best <= patience and ("),
    "ucb": ("ucb.py",
            "value = gains[at] + c * sqrt(log_t / arms[at].length)",
            "value = gains[at] + c * sqrt(log_t / (arms[at].length + 1))"),
    # ucb's catch-up and scan over few branches are written for one slot and for a batch (the
    # W = 1 path's speed needs them apart): the batch's line, opening's value in the one-slot
    # scan, and the one-slot catch-up
    "ucb-batch": ("ucb.py",
                  "found.append((-(gains[at] + c * sqrt(log_t / arms[at].length)), at))",
                  "found.append((-(gains[at] + c * sqrt(log_t / (arms[at].length + 1))), at))"),
    "ucb-open": ("ucb.py",
                 "firsts / count + c * sqrt(log_t / (count + 1)) > top",
                 "firsts / count + c * sqrt(log_t / (count + 2)) > top"),
    "ucb-catch-up": ("ucb.py",
                     "gains[pick] = (score - base) / span",
                     "gains[pick] = (score - base) / span / 2"),
    "allocation": ("allocation.py",
                   "unit, rho = total / length, (revealed.valid + 1) / (length + 2)",
                   "unit, rho = total / length, (revealed.valid + 1) / (length + 3)"),
    # allocation's score is written once, for every path
    "allocation-score": ("allocation.py",
                         "return gain / (1e-6 if 1e-6 > cost else cost) * rho",
                         "return gain / (1e-6 if 1e-6 > cost else cost) * rho * rho"),
}


def run(family: str, work: Path) -> tuple[bool, float, str]:
    """Whether a test failed with ``family``'s mutation, the seconds it took, and the first
    failing test's name."""
    name, line, broken = MUTATIONS[family]
    src = work / family / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    path = src / "dreamrsi" / "policies" / name
    text = path.read_text()
    if text.count(line) != 1:
        raise SystemExit(f"{family}: the line to break is not found once in {name}: {line!r}")
    path.write_text(text.replace(line, broken))
    env = dict(os.environ, PYTHONPATH=str(src))
    where = subprocess.run([sys.executable, "-c", "import dreamrsi; print(dreamrsi.__file__)"],
                           env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    if not where.stdout.startswith(str(src)):
        raise SystemExit(f"the mutated copy is not the one imported: {where.stdout}")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           *TESTS], env=env, cwd=ROOT, capture_output=True, text=True)
    failed = [ln for ln in done.stdout.splitlines() if ln.startswith("FAILED")]
    # caught: a test failed (exit status 1), not an error collecting or running them
    caught = done.returncode == 1 and bool(failed)
    first = failed[0] if failed else done.stdout[-300:]
    if family in WIDTH_FAMILIES:
        caught = caught and widths(family, env)
    return caught, time.monotonic() - started, first


def widths(family: str, env: dict[str, str]) -> bool:
    """Whether the mutant fails ``WIDTHS`` for ``family`` at W = 1 and at W above 1 (each
    printed)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           WIDTHS, "-k", family], env=env, cwd=ROOT, capture_output=True,
                          text=True)
    failed = [ln for ln in done.stdout.splitlines() if ln.startswith("FAILED")]
    one = any(f"[{family}-1]" in ln for ln in failed)
    more = any(f"[{family}-" in ln and f"[{family}-1]" not in ln for ln in failed)
    print(f"{family:10} W = 1: {'caught' if one else 'SURVIVED'}, W > 1: "
          f"{'caught' if more else 'SURVIVED'}", flush=True)
    return done.returncode == 1 and one and more


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", choices=sorted(MUTATIONS),
                        default=list(MUTATIONS))
    args = parser.parse_args()
    survived = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-mutants-") as tmp:
        for family in args.families:
            caught, seconds, first = run(family, Path(tmp))
            print(f"{family:10} {'caught' if caught else 'SURVIVED':8} in {seconds:5.1f} s  "
                  f"{MUTATIONS[family][2]}  {first}", flush=True)
            if not caught:
                survived.append(family)
    sys.exit(1 if survived else 0)


if __name__ == "__main__":
    main()
