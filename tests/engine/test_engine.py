"""The online engine end to end on small real tasks: budgets, parallelism, evidence, seeds."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.config import default_policy
from dreamrsi.engine.run import RunProgress
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.base import RunStatus
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import PROPOSE_STEP, TaskFactory
from tests.engine.test_bad_input import attempts, run

# the step proposer, failing when it extends a node of depth 1
PROPOSE_STEP_OR_FAIL = PROPOSE_STEP + """
if ctx["parent"]["depth"] == 1:
    raise SystemExit(3)
"""


def test_run_spends_its_budget_and_records_everything(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    summary, nodes = run(store, make_task(), budget=6, workers=2,
                         policy="fixed:branches=2,refine=9")
    assert summary.status is RunStatus.FINISHED
    assert summary.stop_reason == "attempt budget"
    assert summary.attempts == 6 and len(nodes) == 7
    assert [n.seq for n in nodes] == list(range(7))
    root = nodes[0]
    assert root.is_root and root.round == 0 and root.raw_score == 0.0
    # two branches from the root, then each refined along its own chain
    assert sorted(n.parent_id for n in nodes if n.round == 1) == [root.node_id] * 2
    children: dict[str | None, int] = {}
    for n in attempts(nodes):
        children[n.parent_id] = children.get(n.parent_id, 0) + 1
        assert n.status is NodeStatus.OK and n.plan and n.plan.startswith("add ")
        assert n.commit and n.commit != root.commit
    assert all(v == 1 for k, v in children.items() if k != root.node_id)
    best = max((n for n in nodes if n.score is not None), key=lambda n: n.score or 0)
    assert summary.best is not None and summary.best.node_id == best.node_id


def test_every_node_cites_admissible_ledger_rows(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    summary, nodes = run(store, make_task(), budget=3)
    rows = {r.event.event_id: r for r in store.ledger(summary.run_id)}
    assert store.verify_ledger(summary.run_id).ok
    for node in attempts(nodes):
        cited = [rows[e] for e in node.evidence]
        assert all(r.event.admissible for r in cited)
        actors = [r.event.actor for r in cited]
        assert Actor.TACTICAL in actors and Actor.EVAL in actors and Actor.EXECUTION in actors
        evals = [r for r in cited if r.event.actor is Actor.EVAL]
        assert evals[0].event.parsed["score"] == node.raw_score  # type: ignore[index]
        narration = [r for r in rows.values()
                     if r.event.node_id == node.node_id and r.event.cmd == "narration"]
        assert len(narration) == 1
        assert not narration[0].event.admissible and narration[0].event.parsed is None
        text = store.get_blob(narration[0].event.artifacts[0].sha256).decode()
        assert "PLAN: add" in text
    decisions = [r for r in rows.values() if r.event.actor is Actor.STRATEGIC]
    assert len(decisions) == 3


def test_same_seed_same_tree(tmp_path: Path, make_task: TaskFactory) -> None:
    task = make_task()

    def scores(store_name: str, seed: int) -> list[float | None]:
        with SqliteRunStore.open(tmp_path / store_name, writer=True) as s:
            _, nodes = run(s, task, budget=5, workers=2, policy="fixed:branches=2,refine=9",
                           seed=seed)
            return [n.raw_score for n in nodes]

    first = scores("a", 7)
    assert scores("b", 7) == first
    assert scores("c", 8) != first


def test_workers_run_attempts_in_parallel(store: SqliteRunStore,
                                          make_task: TaskFactory) -> None:
    propose = "import time; time.sleep(1.0); open('value.txt', 'w').write('1')"
    started = time.monotonic()
    summary, _ = run(store, make_task(propose=propose), budget=4, workers=4,
                     policy="fixed:branches=4,refine=0")
    took = time.monotonic() - started
    assert summary.attempts == 4
    assert took < 3.5, f"4 one-second attempts on 4 workers took {took:.1f} s"


def test_round_budget(store: SqliteRunStore, make_task: TaskFactory) -> None:
    summary, nodes = run(store, make_task(), budget=50, max_rounds=3)
    assert summary.stop_reason == "round budget"
    assert max(n.round for n in nodes) == 3 and summary.attempts == 3


def test_policy_stops_with_an_empty_batch(store: SqliteRunStore,
                                          make_task: TaskFactory) -> None:
    summary, _ = run(store, make_task(), budget=50, workers=2,
                     policy="fixed:branches=2,refine=1")
    assert summary.stop_reason == "empty batch"
    assert summary.attempts == 4


def test_wall_time_budget_cuts_attempts_in_flight(store: SqliteRunStore,
                                                  make_task: TaskFactory) -> None:
    propose = "import time; time.sleep(30)"
    started = time.monotonic()
    summary, nodes = run(store, make_task(propose=propose, proposer_timeout=60), budget=5,
                         wall_time_s=2.0)
    assert time.monotonic() - started < 15
    assert summary.stop_reason == "wall-time budget"
    cut = attempts(nodes)
    assert len(cut) == 1 and cut[0].status is NodeStatus.LOST
    assert "wall-time budget" in cut[0].feedback
    assert store.in_flight(summary.run_id) == []


def test_token_budget_is_a_hard_ceiling(store: SqliteRunStore, make_task: TaskFactory) -> None:
    propose = """
    import json, os
    open("value.txt", "w").write("1")
    json.dump({"tokens_in": 60, "tokens_out": 40, "cost_usd": 0.01},
              open(os.environ["DREAM_COST"], "w"))
    """
    summary, nodes = run(store, make_task(propose=propose), budget=50, max_tokens=250)
    assert summary.stop_reason == "token budget"
    assert summary.attempts == 3
    assert all(n.cost.tokens == 100 and n.cost.money_usd == 0.01 for n in attempts(nodes))
    summary, _ = run(store, make_task(propose=propose), budget=50, max_cost_usd=0.025)
    assert summary.stop_reason == "cost budget"


def test_minimize_direction_normalises_scores(store: SqliteRunStore,
                                              make_task: TaskFactory) -> None:
    summary, nodes = run(store, make_task(direction="minimize"), budget=4)
    for n in nodes:
        assert n.score == -n.raw_score  # type: ignore[operator]
    assert summary.best is not None
    assert summary.best.raw_score == min(n.raw_score for n in nodes)  # type: ignore[type-var]


def test_user_files_are_never_written(store: SqliteRunStore, make_task: TaskFactory) -> None:
    task = make_task()

    def digest() -> str:
        h = hashlib.sha256()
        for p in sorted(task.rglob("*")):
            h.update(str(p).encode())
            if p.is_file():
                h.update(p.read_bytes())
        return h.hexdigest()

    before = digest()
    run(store, task, budget=3, isolation="off")
    assert digest() == before
    assert not (task / "seed" / ".git").exists()


def test_context_reaches_the_proposer(store: SqliteRunStore, make_task: TaskFactory) -> None:
    propose = """
    import json, os
    ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
    open("value.txt", "w").write(str(ctx["parent"]["depth"] + 1))
    open("seen.json", "w").write(json.dumps(ctx))
    """
    _, nodes = run(store, make_task(propose=propose), budget=3)
    assert [n.raw_score for n in nodes] == [0.0, 1.0, 2.0, 3.0]
    from dreamrsi.workspace.git import WorkspaceRepo

    out = store.root / "exported"
    WorkspaceRepo(store.root / "repo.git").export(nodes[3].commit or "", out, [])
    ctx = json.loads((out / "seen.json").read_text())
    assert ctx["task"]["objective"] == "Make the number large."
    assert ctx["attempt_id"] == nodes[3].node_id and ctx["round"] == 3
    assert ctx["parent"]["node_id"] == nodes[2].node_id
    assert [a["node_id"] for a in ctx["ancestors"]] == [nodes[0].node_id, nodes[1].node_id]
    assert ctx["parent"]["feedback"] == "value 2.0"
    assert ctx["budget"]["attempts_left"] == 1


def test_unknown_policy_is_a_config_error(store: SqliteRunStore,
                                          make_task: TaskFactory) -> None:
    with pytest.raises(ConfigError, match="unknown policy 'nope'.*fixed"):
        start_run(store, load_task(make_task()),
                  RunConfig(budget=1, policy=parse_spec("nope")))
    with pytest.raises(ConfigError, match="no parameter 'depth'"):
        parse_spec("fixed:depth=3")
    with pytest.raises(ConfigError, match="expected int"):
        parse_spec("fixed:branches=many")


def test_a_run_stops_when_its_target_is_reached(store: SqliteRunStore,
                                               make_task: TaskFactory) -> None:
    summary, nodes = run(store, make_task(), budget=40, policy="fixed:branches=1,refine=39",
                         target=2.0)
    reached = [n for n in attempts(nodes) if (n.raw_score or 0.0) >= 2.0]
    assert reached, "the toy task climbs past 2 within 40 attempts"
    assert summary.stop_reason == "target reached"
    assert summary.best is not None and summary.best.node_id == reached[0].node_id
    assert nodes[-1].node_id == reached[0].node_id  # nothing was launched after it (W = 1)
    assert summary.attempts < 40
    again, _ = run(store, make_task(), budget=40, policy="fixed:branches=1,refine=39")
    assert again.attempts == 40 and again.stop_reason == "attempt budget"


def test_a_target_follows_the_task_direction(store: SqliteRunStore,
                                             make_task: TaskFactory) -> None:
    # the seed scores 0: a minimising task has reached 0.5 before any attempt, a maximising
    # one has not
    low, nodes = run(store, make_task(direction="minimize"), budget=5, target=0.5)
    assert low.attempts == 0 and len(nodes) == 1
    assert low.stop_reason == "target reached"
    high, _ = run(store, make_task(), budget=2, target=0.5, policy="fixed:branches=2,refine=0")
    assert high.attempts >= 1 and high.best is not None and high.best.raw_score is not None
    assert (high.stop_reason == "target reached") == (high.best.raw_score >= 0.5)


@pytest.mark.parametrize("bad", [{"budget": 0}, {"workers": 0}, {"wall_time_s": -1.0},
                                 {"isolation": "sometimes"}, {"max_rounds": 0},
                                 {"target": float("nan")}, {"target": float("inf")},
                                 {"target": "high"}, {"target": True}])
def test_bad_run_config_is_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RunConfig(**bad)  # type: ignore[arg-type]


def test_default_policy_is_a_grid_of_short_branches_that_fills_the_budget() -> None:
    shapes = {budget: (default_policy(budget, 2).params["branches"],
                       default_policy(budget, 2).params["refine"] + 1)
              for budget in (20, 40, 60, 110, 200)}
    assert shapes == {20: (4, 5), 40: (6, 7), 60: (8, 8), 110: (10, 11), 200: (14, 15)}
    assert default_policy(10, 4).params == {"branches": 4, "refine": 2}
    assert default_policy(1, 3).params == {"branches": 3, "refine": 0}
    assert default_policy(None, 3).params == {"branches": 3, "refine": 19}
    for budget in range(1, 400):
        for workers in (1, 2, 5):
            params = default_policy(budget, workers).params
            cells = params["branches"] * (params["refine"] + 1)
            assert params["branches"] >= workers
            assert budget <= cells < budget + params["branches"], (budget, workers, params)


@pytest.mark.slow
def test_context_of_a_deep_chain_is_bounded(store: SqliteRunStore,
                                            make_task: TaskFactory) -> None:
    propose = """
    import json, os
    ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
    anc, p = ctx["ancestors"], ctx["parent"]["depth"]
    expected = [0, *range(p - 50, p)] if ctx["ancestors_omitted"] else list(range(p))
    ok = [a["depth"] for a in anc] == expected and p == len(anc) + ctx["ancestors_omitted"]
    open("value.txt", "w").write(str(len(anc) + 1000 * ctx["ancestors_omitted"] if ok else -1))
    open("ids.json", "w").write(json.dumps([a["node_id"] for a in anc]))
    """
    _, nodes = run(store, make_task(propose=propose), budget=55,
                   policy="fixed:branches=1,refine=60")
    depths_seen = [int(n.raw_score or 0) for n in nodes[1:]]
    assert depths_seen[:3] == [0, 1, 2]
    assert depths_seen[51] == 51  # root + 50 nearest: nothing omitted yet
    assert depths_seen[52] == 51 + 1000  # one omitted from here on
    assert depths_seen[54] == 51 + 3000
    from dreamrsi.workspace.git import WorkspaceRepo

    out = store.root / "exported"
    WorkspaceRepo(store.root / "repo.git").export(nodes[55].commit or "", out, [])
    ids = json.loads((out / "ids.json").read_text())  # the parent is nodes[54]
    assert ids == [nodes[0].node_id, *(n.node_id for n in nodes[4:54])]


def test_replay_of_the_behaviour_policy_reproduces_an_online_run(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    from dreamrsi.core.replay import RecordedTree, replay
    from dreamrsi.policies import make_policy

    summary, nodes = run(store, make_task(), budget=7, workers=3,
                         policy="fixed:branches=2,refine=4")
    tree = RecordedTree.from_nodes(summary.run_id, nodes)
    result = replay(make_policy("fixed:branches=2,refine=4"), tree, workers=3,
                    max_rounds=100, attempt_budget=7)
    assert list(result.order) == [n.node_id for n in nodes[1:]]
    assert [tree.nodes[i].round for i in result.order] == [n.round for n in nodes[1:]]
    assert result.rounds == summary.rounds


def test_a_planning_policy_plans_from_earlier_runs_only(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task = make_task()
    first, nodes = run(store, task, budget=6, workers=2, policy="planned")
    config = store.get_run(first.run_id).config
    assert config["plan"]["branch_count"] == 2 and config["plan"]["refine_count"] == 2
    assert "no history" in config["plan"]["reason"]
    assert len([n for n in nodes if n.parent_id == nodes[0].node_id]) == 2
    plan_rows = [r for r in store.ledger(first.run_id) if r.event.cmd.startswith("plan ")]
    assert len(plan_rows) == 1 and plan_rows[0].event.parsed["refine_count"] == 2  # type: ignore[index]
    second, _ = run(store, task, budget=6, workers=2, policy="planned")
    later = store.get_run(second.run_id).config["plan"]
    assert "past branches peaked" in later["reason"]


def test_an_illegal_decision_fails_the_run_with_its_reason(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    from dreamrsi.core.policy import Budget, PolicyContext
    from dreamrsi.core.view import TreeView
    from dreamrsi.errors import PolicyError

    class Rogue:
        name = "rogue"

        def reset(self, context: PolicyContext) -> None:
            pass

        def select(self, view: TreeView, budget: Budget) -> list[str]:
            return [view.root_id] if view.size == 0 else ["no-such-node"]

    task = load_task(make_task())
    # a policy that is not registered: hand it to the engine in place of the registry's
    with pytest.raises(PolicyError, match="round 2: node no-such-node is outside"):
        start_run(store, task, RunConfig(budget=5), policy=Rogue())
    [run] = store.list_runs()
    assert run.status is RunStatus.FAILED and "no-such-node" in (run.stop_reason or "")
    assert len(store.nodes(run.run_id)) == 2  # the root and the one legal attempt


def test_start_run_takes_a_policy_object(store: SqliteRunStore, make_task: TaskFactory) -> None:
    """A library user's own policy class runs without being registered."""
    from collections.abc import Sequence

    from dreamrsi.core.policy import Budget, PolicyContext, PolicySpec
    from dreamrsi.core.view import TreeView

    class TwoDeep:
        name = "two-deep"

        def __init__(self) -> None:
            self.resets = 0

        def reset(self, context: PolicyContext) -> None:
            self.resets += 1

        def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
            if view.size == 0:
                return [view.root_id]
            return list(view.leaves()) if view.size < 2 else []

    own = TwoDeep()
    summary = start_run(store, load_task(make_task()),
                        RunConfig(budget=5, policy=PolicySpec("two-deep")), policy=own)
    nodes = store.nodes(summary.run_id)
    assert own.resets == 1 and summary.stop_reason == "empty batch"
    assert [n.parent_id for n in nodes] == [None, nodes[0].node_id, nodes[1].node_id]
    assert store.get_run(summary.run_id).policy == PolicySpec("two-deep")


def test_progress_events_agree_with_the_store(store: SqliteRunStore,
                                              make_task: TaskFactory) -> None:
    """The engine keeps its progress counts as it records nodes: at every event they are
    what the store itself counts, failed attempts and the best node included."""
    propose = PROPOSE_STEP_OR_FAIL
    seen: list[tuple[str, int, dict[str, int], str | None]] = []

    def observer(event: str, progress: RunProgress, node: object) -> None:
        counts = store.counts(progress.run_id)
        assert progress.by_status == counts.by_status, event
        assert progress.attempts == counts.attempts
        assert (progress.best.node_id if progress.best else None) == counts.best_node
        seen.append((event, progress.attempts, dict(progress.by_status),
                     progress.best.node_id if progress.best else None))

    cfg = RunConfig(budget=8, workers=2, policy=parse_spec("fixed:branches=3,refine=9"))
    summary = start_run(store, load_task(make_task(propose=propose)), cfg, observer)
    events = [e for e, *_ in seen]
    assert events[0] == "start" and events[-1] == "finish" and events.count("node") == 8
    statuses = seen[-1][2]
    assert statuses.get("error", 0) > 0 and statuses.get("ok", 0) > 1  # both kinds counted
    assert summary.by_status == statuses and summary.attempts == 8
