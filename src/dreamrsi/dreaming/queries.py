"""Read-only views of dreaming for the CLI: the deployed policy, versions, replay tables."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from dreamrsi.engine.config import default_policy
from dreamrsi.errors import ConfigError

if TYPE_CHECKING:
    from dreamrsi.core.policy import PolicySpec
    from dreamrsi.dreaming.evaluate import ReplaySettings
    from dreamrsi.store.base import DreamsStore, RunStore
    from dreamrsi.tasks.spec import Task


def deployed_policy(store: RunStore, task_digest: str) -> tuple[PolicySpec, str]:
    """The policy now deployed for ``task`` and where that comes from.

    The latest dream's choice (its selection when it promoted, else its incumbent); without a
    dream, the policy of the task's latest run; without a run, the default policy.
    """
    dreams = store.list_dreams(task_digest)
    if dreams:
        last = dreams[-1]
        chosen = last.selected if last.promoted and last.selected else last.incumbent
        version = store.get_policy(chosen)
        return version.spec, f"dream {last.dream_id}"
    runs = store.list_runs(task_digest)
    if runs:
        return runs[-1].policy, f"run {runs[-1].run_id}"
    return default_policy(60, 1), "the default policy"


def default_workers(store: RunStore, task: Task) -> int:
    """W of the task's latest run (2 without one)."""
    runs = store.list_runs(task.digest)
    return int(runs[-1].config.get("workers", 2)) if runs else 2


def policy_rows(store: DreamsStore, task_digest: str) -> list[dict[str, Any]]:
    """Every version of the task with lineage, parameters and its replay scores per dream;
    a program also with the blob of its diff against its parent (``diff``)."""
    diffs = {r["version_id"]: r["diff"] for d in store.list_dreams(task_digest)
             for r in ((d.report or {}).get("code") or {}).get("revisions", [])
             if r.get("version_id")}
    rows = []
    for version in store.list_policies(task_digest):
        per_dream: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        trees: dict[str, dict[str, float]] = defaultdict(dict)
        for score in store.scores(version_id=version.version_id):
            per_dream[score.dream_id][score.split].append(score.value)
            trees[score.dream_id][score.tree_id] = score.value
        rows.append({
            "version_id": version.version_id,
            "policy": version.spec.label(),
            "family": version.spec.name,
            "params": dict(version.spec.params),
            "code_digest": version.code_digest,
            "diff": diffs.get(version.version_id),
            "parent_id": version.parent_id,
            "dream_id": version.dream_id,
            "scores": {d: {split: sum(v) / len(v) for split, v in splits.items()}
                       for d, splits in per_dream.items()},
            "per_tree": {d: dict(v) for d, v in trees.items()},
        })
    return rows


def replay_rows(store: RunStore, task: Task, spec: PolicySpec,
                settings: ReplaySettings, pool: bool = True) -> dict[str, Any]:
    """One policy's replay of every comparable tree of the task (with ``pool``, each tree with
    the branches of the others of the same start appended, as a dream with
    ``pool_branches`` replays them)."""
    from dreamrsi.dreaming.evaluate import score_policy, summary
    from dreamrsi.dreaming.history import load_history, pool_branches
    from dreamrsi.policies.registry import open_policy
    from dreamrsi.programs import ProgramLimits

    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    if not history.trees:
        raise ConfigError(f"no recorded trees of task {task.name} to replay; run it first")
    trees = pool_branches(history.trees) if pool else history.trees
    with open_policy(spec, store, ProgramLimits()) as policy:  # a program: in its worker
        scores = score_policy(policy, trees, settings)
    rows = [{"tree_id": s.result.tree_id, "value": s.value, "quality": s.quality,
             "attempts": s.revealed, "rounds": s.rounds, "parallelism": s.parallelism,
             "out_of_support": s.out_of_support, "stop": s.result.stop,
             "orders": len(s.replays), "tree_size": trees[i].size}
            for i, s in enumerate(scores)]
    return {"policy": spec.label(), "settings": settings.digest(),
            "charge_misses": settings.charge_misses, "pool_branches": pool, "trees": rows,
            "mean": summary(scores).as_dict(),
            "excluded_runs": [r for r, _, _ in history.excluded]}
