"""Write ``dreams-v3.db``: a small store whose dreams the figures test replays.

``dreams-v2.db`` was made by the code as it stood before dreaming's modes became objects
(commit b0e5179): it showed that change moved no figure, and it keeps the old form of stored
dream rows, which ``test_modes.py`` loads. ``dreams-v3.db`` was made after the plan context
stopped showing an episode its own branches lent back by pooling (issue 15, point 4): against
v2 that fix moved only the ``planned`` family's rows, in the four pooled dreams, as it should.
Made with::

    PYTHONPATH=src python tests/dreaming/golden/make_dreams_store.py OUT_DIR

It records five runs of the toy task of ``tests/conftest.py`` and then seven dreams through the
command line, each with other settings (quality modes, objectives, selection splits, root
orders, charged misses, pooling, the cross-validation gate). Only ``store.db`` is kept: replay
needs the nodes, not the blobs or the workspace repository. ``test_figures.py`` rebuilds every
dream from its stored row and checks that today's code selects the same policy with the same
scores.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.conftest import write_task  # noqa: E402

from dreamrsi.cli.main import app  # noqa: E402

RUNS = [
    ("--seed", "0", "--policy", "fixed:branches=2,refine=3"),
    ("--seed", "1", "--policy", "fixed:branches=2,refine=3"),
    ("--seed", "2", "--policy", "fixed:branches=3,refine=2"),
    ("--seed", "3", "--policy", "greedy:branches=3,top=1"),
    ("--seed", "4", "--policy", "fixed:branches=2,refine=3"),
]
DREAMS = [
    ("--trials", "40"),
    ("--trials", "40", "--quality", "rarity", "--select-on", "holdout", "--holdout", "0.5"),
    ("--trials", "40", "--quality", "raw", "--root-orders", "2", "--charge-misses",
     "--no-pool-branches", "--beta1", "0.01"),
    ("--trials", "40", "--quality", "relative", "--require-gain", "--k2", "6", "--budget", "6"),
    ("--trials", "16", "--objective", "pareto", "--pareto-lam", "0.05",
     "--families", "fixed,greedy,ucb,planned"),
    ("--trials", "24", "--families", "fixed,greedy", "--beta1", "0.2", "--crossval", "2"),
    ("--trials", "16", "--objective", "pareto", "--families",
     "halving,stagnation,ladder,allocation", "--root-orders", "2", "--select-on", "holdout",
     "--seed", "7"),
]


def main(out: Path) -> None:
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        task = write_task(Path(tmp) / "task")
        store = Path(tmp) / "store"

        def cli(*args: str) -> str:
            result = runner.invoke(app, [*args, "--store", str(store), "--json"])
            if result.exit_code != 0:
                raise SystemExit(result.output)
            return result.output

        for args in RUNS:
            cli("run", str(task), "--budget", "8", "--workers", "2", "--isolation", "off", *args)
        for args in DREAMS:
            report = json.loads(cli("dream", str(task), *args))
            print(report["selected"], report["promoted"], report["reason"])
        out.mkdir(parents=True, exist_ok=True)
        target = out / "dreams-v3.db"
        shutil.copy(store / "store.db", target)
    with sqlite3.connect(target) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    with sqlite3.connect(target) as conn:
        conn.execute("VACUUM")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
