"""Print what a set of dreaming commands answer on a copy of ``dreams-v3.db``, ids masked.

Run it under two versions of the code and compare the outputs: equal outputs mean the same
policies selected with the same scores and the same replay tables::

    PYTHONPATH=OLD/src python tests/dreaming/golden/cli_figures.py > before.json
    PYTHONPATH=src python tests/dreaming/golden/cli_figures.py > after.json
    cmp before.json after.json

Dream ids are random and masked; wall-clock seconds are dropped. Loops are left out: a new
run's id is random, and replay seeds and the train/holdout split follow the trees' ids, so two
loops differ from their second round on whatever the code.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.conftest import write_task  # noqa: E402

from dreamrsi.cli.main import app  # noqa: E402

GOLDEN = Path(__file__).parent / "dreams-v3.db"
COMMANDS: list[tuple[str, ...]] = [
    ("dream", "--trials", "48"),
    ("dream", "--trials", "48", "--quality", "rarity", "--select-on", "holdout"),
    ("dream", "--trials", "48", "--quality", "raw", "--root-orders", "3", "--charge-misses"),
    ("dream", "--trials", "48", "--quality", "relative", "--no-pool-branches", "--k2", "5"),
    ("dream", "--trials", "24", "--objective", "pareto", "--pareto-lam", "0.2"),
    ("dream", "--trials", "24", "--objective", "pareto", "--quality", "raw", "--select-on",
     "holdout", "--holdout", "0.4", "--charge-misses"),
    ("dream", "--trials", "32", "--beta1", "0.1", "--crossval", "3", "--require-gain"),
    ("replay", "--policy", "ucb:c=0.5"),
    ("replay", "--policy", "halving:n0=4,r0=1", "--quality", "rarity", "--root-orders", "2"),
    ("replay", "--policy", "ladder:longest=4,levels=2", "--charge-misses", "--no-pool-branches"),
    ("replay", "--policy", "planned:stretch=1.5", "--quality", "raw", "--budget", "5"),
    ("policies",),
]


def masked(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every id in ``ids`` replaced by its name, and seconds left out."""
    if isinstance(value, dict):
        return {masked(k, ids): masked(v, ids) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [masked(v, ids) for v in value]
    if isinstance(value, str):
        for found, name in ids.items():
            value = value.replace(found, name)
    return value


def main() -> None:
    runner = CliRunner()
    out: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        task = write_task(Path(tmp) / "task")
        store = Path(tmp) / "store"
        store.mkdir()
        shutil.copy(GOLDEN, store / "store.db")
        for command in COMMANDS:
            result = runner.invoke(app, [command[0], str(task), *command[1:], "--store",
                                         str(store), "--json"])
            if result.exit_code != 0:
                raise SystemExit(f"{command}: {result.output}")
            data = json.loads(result.output)
            if "dream_id" in data:
                ids[data["dream_id"]] = f"DREAM{len(ids)}"
            out.append({"command": list(command), "answer": data})
    json.dump(masked(out, ids), sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
