"""A predicts run read back for offline re-scoring: its log's histories and online runs, with
each history's recorded trees from the run's kept stores (``--stores``).

``bench_replay_predicts.py`` spends its time on the online runs (each candidate of each
history, ten seeds). Its log keeps them, so a later script can replay the same candidates
another way, or re-dream the same histories under other settings, and judge the result
against those runs without running anything online.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_replay_predicts as predicts  # noqa: E402
from _predicts_stats import Yardstick  # noqa: E402
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.history import load_history  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402


@dataclass(frozen=True, slots=True)
class Logged:
    """One logged history.

    Attributes:
        h: Its number.
        item: What the log holds of it (settings, runs, candidates, pick).
        folder: Its kept store.
        trees: Its recorded trees, loaded from the store.
        online: Per candidate (the log's order), the outcome of each online run, seed by
            seed (the same seeds for every candidate): the run's best on the yardstick.
    """

    h: int
    item: dict[str, Any]
    folder: Path
    trees: list[RecordedTree]
    online: list[np.ndarray]

    @property
    def initial(self) -> int:
        """Where π_1 (the dream's incumbent) stands among the candidates."""
        return next(k for k, c in enumerate(self.item["candidates"]) if c["incumbent"])

    def index(self, spec: dict[str, Any]) -> int:
        """Where ``spec`` stands among the candidates (``ValueError``: not among them)."""
        for k, c in enumerate(self.item["candidates"]):
            if c["spec"] == spec:
                return k
        raise ValueError(f"history {self.h}: {PolicySpec.from_json(spec).label()} is not "
                         "among its logged candidates")


def load_logged(log: Path, stores: Path) -> tuple[dict[str, Any], list[Logged]]:
    """A predicts run's settings and histories, each with its trees and online outcomes.

    Raises:
        ValueError: The log holds no history, histories with other settings, a candidate
            without its online runs or with other seeds than the rest, or the stores lack a
            history or hold other trees than it.
    """
    histories, runs = predicts.read_log(log)
    if not histories:
        raise ValueError(f"{log} holds no history of a predicts run")
    settings = histories[min(histories)]["settings"]
    task = resolve_task(settings["task"])
    read = []
    for h, item in sorted(histories.items()):
        if item["settings"] != settings:
            raise ValueError(f"history {h} of {log} has other settings than history "
                             f"{min(histories)}")
        folder = stores / f"history-{h}"
        if not (folder / "store.db").is_file():
            raise ValueError(f"{folder} holds no store: pass the predicts run's --stores")
        with SqliteRunStore.open(folder) as store:
            trees = list(load_history(store, task.name, task.digest,
                                      task.evaluator_digest).trees)
        if [t.tree_id for t in trees] != item["trees"]:
            raise ValueError(f"{folder} holds other trees than history {h} of {log}")
        seeds = [sorted(j for (hh, c, j) in runs if (hh, c) == (h, k))
                 for k in range(len(item["candidates"]))]
        if not seeds or not seeds[0] or any(s != seeds[0] for s in seeds):
            raise ValueError(f"history {h} of {log}: a candidate without online runs, or "
                             "candidates run with other seeds")
        bests = [[runs[(h, k, j)]["best"] for j in s] for k, s in enumerate(seeds)]
        read.append((h, item, folder, trees, bests))
    yardstick = Yardstick.of(
        [b for _, item, _, _, bests in read
         for b in bests[next(k for k, c in enumerate(item["candidates"]) if c["incumbent"])]
         if b is not None],
        min(f for _, item, _, _, _ in read for f in item["floors"] if f is not None))
    return settings, [Logged(h, item, folder, trees,
                             [np.array([yardstick.z(b) for b in bs]) for bs in bests])
                      for h, item, folder, trees, bests in read]


def offline_parser(description: str) -> argparse.ArgumentParser:
    """The options every offline script takes: the predicts run's log and stores, and
    ``--no-section``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--log", type=Path, required=True,
                        help="what a bench_replay_predicts.py run printed")
    parser.add_argument("--stores", type=Path, required=True, help="that run's --stores folder")
    parser.add_argument("--no-section", action="store_true",
                        help="print the summary without writing BENCHMARKS.md")
    return parser


def write_offline_section(name: str, title: str, settings: dict[str, Any], histories: int,
                          text: str, script: str) -> None:
    """Write an offline script's section ``NAME-TASK-context-N`` of BENCHMARKS.md."""
    write_section(f"{name}-{settings['task']}-context-{settings['context']}",
                  f"{title} ({settings['task']}, {settings['context']} earlier trees as "
                  f"context, {histories} histories, re-scored offline)", text,
                  f"python benchmarks/{script} --log <the predicts run's log> "
                  "--stores <its --stores folder>")
