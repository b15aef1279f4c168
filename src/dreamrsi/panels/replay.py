"""A recorded tree replayed under a chosen policy, revealed round by round: the dreams' own
replay (``dreaming.evaluate.replay_tree``, through the core's episode driver and ``Child``), with
its reveal order cut into the rounds the policy decided."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dreamrsi.errors import ConfigError, PolicyError

if TYPE_CHECKING:
    from dreamrsi.core.replay import RecordedTree
    from dreamrsi.store.base import RunRecord, RunsStore, RunStore

__all__ = ["TREE_LIMIT", "replay_choices", "replay_steps"]

TREE_LIMIT = 5000
"""A replay of a larger tree lists only its root and the nodes the replay revealed."""


def _tree(store: RunsStore, run: RunRecord) -> RecordedTree:
    from dreamrsi.core.replay import RecordedTree
    from dreamrsi.store.integrity import check_tree

    nodes = store.replay_nodes(run.run_id)
    if not nodes:
        raise ConfigError(f"run {run.run_id} has no recorded node to replay", key="RUN")
    check_tree(store.location, run.run_id, nodes)
    task = store.get_task(run.task_digest)
    return RecordedTree.from_nodes(run.run_id, nodes, task_digest=run.task_digest,
                                   evaluator_digest=task.evaluator_digest,
                                   start=run.config.get("start_from") or "seed",
                                   task_name=run.task_name)


def replay_choices(store: RunStore, run_id: str) -> dict[str, Any]:
    """What a replay of ``run_id`` may be asked for: the run's own policy, its W and budget,
    every version recorded for its task (newest first) and the deployed one."""
    from dreamrsi.panels.dreams import deployed

    run = store.get_run(run_id)
    versions = sorted(store.list_policies(run.task_digest), key=lambda v: -v.created_at)
    return {"run_id": run.run_id, "task": run.task_name, "policy": run.policy.label(),
            "workers": run.config.get("workers"), "budget": run.config.get("budget"),
            "versions": [{"version_id": v.version_id, "policy": v.spec.label()}
                         for v in versions],
            "deployed": deployed(store, run.task_digest)}


def replay_steps(store: RunStore, run_id: str, policy: str | None = None, *,
                 workers: int | None = None, budget: int | None = None,
                 tree_limit: int = TREE_LIMIT) -> dict[str, Any]:
    """Replay run ``run_id``'s tree under ``policy`` (a spec; default: the run's own) with W
    ``workers`` and an attempt ``budget`` (defaults: the run's), from the root with a fresh
    policy state, as a dream replays it.

    Returns:
        ``tree``: every recorded node (id, parent, seq, round, depth, branch, score, status,
        plan), or, for a tree of more than ``tree_limit`` nodes, the root and the revealed
        nodes only (``tree_cut``; ``tree_size`` counts them all); ``rounds``: for each
        decision round the node ids it revealed, in reveal order; ``result``: V and its
        parts, and why the replay stopped.

    Raises:
        NotFound: An unknown run.
        ConfigError: A malformed policy spec, bad W or budget, a run without nodes, or a
            policy that broke the decision interface (a program that failed in its worker).
    """
    from dreamrsi.dreaming.evaluate import ReplaySettings, replay_tree
    from dreamrsi.engine.queries import tree_rows
    from dreamrsi.policies.registry import open_policy, parse_spec
    from dreamrsi.programs import ProgramLimits

    run = store.get_run(run_id)
    spec = run.policy if policy is None else parse_spec(policy)
    w = int(run.config.get("workers") or 1) if workers is None else workers
    cap = run.config.get("budget") if budget is None else budget
    if cap is not None and (not isinstance(cap, int) or cap < 1):
        raise ConfigError(f"budget must be a whole number of attempts, got {cap!r}",
                          key="budget")
    settings = ReplaySettings(workers=w, attempt_budget=cap)
    tree = _tree(store, run)
    try:
        with open_policy(spec, store, ProgramLimits()) as chosen:
            history: tuple[RecordedTree, ...] = ()
            if hasattr(chosen, "plan"):  # a planning policy sees the task's other trees
                from dreamrsi.dreaming.history import load_history

                task = store.get_task(run.task_digest)
                history = load_history(store, run.task_name, task.digest,
                                       task.evaluator_digest).trees
            scored = replay_tree(chosen, tree, settings, history, keep_order=True)
    except PolicyError as exc:  # the chosen policy broke the decision interface, or its
        # program failed in its worker: a bad choice, reported with the reason
        raise ConfigError(f"policy {spec.label()} cannot be replayed: {exc}",
                          key="policy") from None
    result = scored.result
    rounds, at = [], 0
    for number, size in enumerate(result.batch_sizes, start=1):
        rounds.append({"round": number, "revealed": list(result.order[at:at + size])})
        at += size
    cut = tree.size + 1 > tree_limit
    shown = set(result.order) | {tree.root.node_id}
    rows = [r for r in tree_rows(store, run.run_id) if not cut or r["node_id"] in shown]
    return {"run_id": run.run_id, "policy": spec.label(), "workers": w, "budget": cap,
            "tree": rows, "tree_size": tree.size + 1, "tree_cut": cut, "rounds": rounds,
            "result": {"value": scored.value, "quality": result.quality,
                       "revealed": result.revealed, "rounds": result.rounds,
                       "out_of_support": result.out_of_support,
                       "selections": result.selections, "stop": str(result.stop)}}
