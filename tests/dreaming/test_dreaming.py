"""Dreaming end to end on small real histories, and the selection's guarantees."""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import (
    DreamConfig,
    LoopConfig,
    ParetoAUC,
    RarityQuality,
    RelativeQuality,
    ReplaySettings,
    Split,
    dream,
    parse_quality,
    parse_split,
    run_loop,
)
from dreamrsi.dreaming.evaluate import QualityScale, score_policy
from dreamrsi.dreaming.history import load_history, pool_branches
from dreamrsi.dreaming.select import paired_interval, select
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

FAST = DreamConfig(trials=36, keep=2, replay=ReplaySettings(workers=2, attempt_budget=8))


def record_runs(store: SqliteRunStore, task_dir: Path, seeds: range,
                policy: str = "fixed:branches=2,refine=3") -> None:
    task = load_task(task_dir)
    for seed in seeds:
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed,
                                         policy=parse_spec(policy), isolation="off"))


@pytest.fixture
def history_store(store: SqliteRunStore, make_task: TaskFactory) -> tuple[SqliteRunStore, Path]:
    task_dir = make_task()
    record_runs(store, task_dir, range(4))
    return store, task_dir


def test_dream_records_versions_scores_and_evidence(
    history_store: tuple[SqliteRunStore, Path]
) -> None:
    store, task_dir = history_store
    task = load_task(task_dir)
    incumbent = PolicySpec("fixed", {"branches": 2, "refine": 3})
    report = dream(store, task, incumbent, FAST)
    assert len(report.train_trees) + len(report.holdout_trees) == 4
    assert len(report.holdout_trees) >= 1 and not report.holdout_is_train
    assert set(report.train_trees).isdisjoint(report.holdout_trees)
    families = {c.spec.name for c in report.candidates}
    assert families == set(FAST.families)
    # the incumbent is a candidate, and nothing selected has a lower mean than it
    inc = report.row_of(incumbent)
    chosen = report.row_of(report.selected)
    assert chosen.train.value >= inc.train.value
    # every candidate is stored as a version of the task with lineage and per-tree scores
    versions = {v.version_id: v for v in store.list_policies(task.digest)}
    for c in report.candidates:
        version = versions[c.version_id]
        assert version.spec == c.spec
        if c.version_id != incumbent.version_id():
            assert version.parent_id == incumbent.version_id()
            assert version.dream_id == report.dream_id
        rows = store.scores(version_id=c.version_id, dream_id=report.dream_id)
        assert len(rows) == 4
    # the decision is a ledger event citing the studies and the replay
    assert store.verify_ledger(report.dream_id).ok
    rows = list(store.ledger(report.dream_id))
    assert all(r.event.actor is Actor.DREAMER and r.event.admissible for r in rows)
    decision = rows[-1].event
    assert decision.cmd.split()[0] in ("promote", "keep")
    cited = set(decision.parsed["evidence"])  # type: ignore[index]
    assert cited == {r.event.event_id for r in rows[:-1]}
    stored = store.get_dream(report.dream_id)
    assert stored.selected == report.selected.version_id()
    assert stored.promoted == report.promoted


def _attack(store: SqliteRunStore, *statements: tuple[str, tuple[str, ...]]) -> None:
    """Change the database as an attacker would: a plain connection beside the writer."""
    conn = sqlite3.connect(store.root / "store.db", isolation_level=None)
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


@pytest.mark.parametrize(("statements", "expected"), [
    ([("DELETE FROM ledger WHERE chain = ?", ("{d}",)),
      ("DELETE FROM chains WHERE chain = ?", ("{d}",))],
     "dream {d} finished (its record says so) but its chain holds no rows"),
    ([("UPDATE dreams SET promoted = 1 - promoted WHERE dream_id = ?", ("{d}",))],
     "dream {d}: promoted is"),
    ([("UPDATE dreams SET selected = 'v-forged' WHERE dream_id = ?", ("{d}",))],
     'dream {d}: selected is "v-forged"'),
    ([("UPDATE dreams SET finished_at = NULL WHERE dream_id = ?", ("{d}",))],
     "dream {d} is recorded as unfinished but its chain holds"),
    ([("DELETE FROM policy_scores WHERE dream_id = ?", ("{d}",)),
      ("UPDATE policies SET dream_id = NULL WHERE dream_id = ?", ("{d}",)),
      ("DELETE FROM dreams WHERE dream_id = ?", ("{d}",))],
     "the chain records dream {d} (row 1) but the store has no such dream"),
])
def test_a_dream_whose_chain_or_outcome_was_changed_fails_verification(
    history_store: tuple[SqliteRunStore, Path],
    statements: list[tuple[str, tuple[str, ...]]], expected: str,
) -> None:
    """Without a head kept outside: a finished dream's chain ends in its decision, so deleting
    the chain, or editing the outcome it records, is caught from the store alone."""
    store, task_dir = history_store
    report = dream(store, load_task(task_dir), PolicySpec("fixed", {"branches": 2, "refine": 3}),
                   FAST)
    d = report.dream_id
    assert store.verify(d).ok
    _attack(store, *[(sql, tuple(p.format(d=d) for p in params)) for sql, params in statements])
    with SqliteRunStore.open(store.root) as reader:
        found = reader.verify(d)
    assert not found.ok and expected.format(d=d) in str(found.problem), found


def test_selection_on_holdout_trees_compares_candidates_there(
    history_store: tuple[SqliteRunStore, Path]
) -> None:
    store, task_dir = history_store
    task = load_task(task_dir)
    incumbent = PolicySpec("fixed", {"branches": 2, "refine": 3})
    # no gate: two held-out trees rarely give an interval above zero, and what this test
    # judges is where the argmax is taken
    config = dataclasses.replace(FAST, split=parse_split("holdout", 0.5), require_gain=False,
                                 gate="value")
    report = dream(store, task, incumbent, config)
    assert report.select_on == "holdout" and report.selection_trees == report.holdout_trees
    assert len(report.holdout_trees) == 2 and not report.holdout_is_train
    inc, chosen = report.row_of(incumbent), report.row_of(report.selected)
    # the selected candidate is the best on the holdout trees (incumbent included) ...
    best = max(c.holdout.value for c in report.candidates)
    assert chosen.holdout.value == best >= inc.holdout.value
    # ... and its stated difference to the incumbent is measured there
    assert chosen.comparison.difference == pytest.approx(
        chosen.holdout.value - inc.holdout.value)
    assert store.verify_ledger(report.dream_id).ok
    with pytest.raises(ConfigError, match="unknown selection split 'all'"):
        parse_split("all")


@pytest.mark.parametrize("pool", [True, False])
def test_versions_are_reproducible_from_the_store_alone(
    history_store: tuple[SqliteRunStore, Path], pool: bool
) -> None:
    store, task_dir = history_store
    task = load_task(task_dir)
    report = dream(store, task, PolicySpec("fixed", {"branches": 2, "refine": 3}),
                   dataclasses.replace(FAST, pool_branches=pool))
    # everything needed is in the store: the dream's settings and its splits, in order
    record = store.get_dream(report.dream_id)
    assert record.config["pool_branches"] is pool and record.report is not None
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    trees = {t.tree_id: t for t in history.trees}
    compared = 0
    splits = {}
    for split in ("train", "holdout"):
        members = [trees[i] for i in record.report[f"{split}_trees"]]
        splits[split] = pool_branches(members) if pool else members
    for split in ("train", "holdout"):
        judged = {t.tree_id: t for t in splits[split]}
        for version in store.list_policies(task.digest):
            stored = [s for s in store.scores(version_id=version.version_id,
                                              dream_id=report.dream_id) if s.split == split]
            # a plan for either split is made from the training trees, as the dream made it
            again = score_policy(version.spec, [judged[s.tree_id] for s in stored],
                                 FAST.replay, history=splits["train"],
                                 scale=QualityScale.of(history.trees))
            assert [s.value for s in stored] == [a.value for a in again]
            assert [s.revealed for s in stored] == [a.result.revealed for a in again]
            compared += len(stored)
    assert compared >= 2 * len(history.trees)


def test_dream_without_history_is_a_clear_error(store: SqliteRunStore,
                                                make_task: TaskFactory) -> None:
    with pytest.raises(ConfigError, match="no recorded trees of task toy"):
        dream(store, load_task(make_task()), PolicySpec("fixed"), FAST)


def test_history_refuses_to_mix_digests(store: SqliteRunStore, make_task: TaskFactory) -> None:
    first = make_task()
    record_runs(store, first, range(1))
    (first / "seed" / "evaluate.py").write_text(
        (first / "seed" / "evaluate.py").read_text() + "\n# changed\n")
    record_runs(store, first, range(1))
    runs = store.list_runs()
    task = load_task(first)
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    assert [t.tree_id for t in history.trees] == [runs[1].run_id]
    assert [r for r, _, _ in history.excluded] == [runs[0].run_id]
    with pytest.raises(ConfigError, match=f"cannot replay these runs together.*{runs[0].run_id}"):
        load_history(store, task.name, task.digest, task.evaluator_digest,
                     run_ids=[r.run_id for r in runs])


def test_split_is_stable_and_keeps_both_sides(history_store: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = history_store
    task = load_task(task_dir)
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    train, holdout = Split(holdout_share=0.25).divide(history.trees)
    assert len(holdout) == 1 and len(train) == 3
    assert Split(holdout_share=0.25).divide(history.trees) == (train, holdout)
    train2, holdout2 = parse_split("holdout", 0.5).divide(history.trees)
    assert len(holdout2) == 2 and {t.tree_id for t in holdout} <= {t.tree_id for t in holdout2}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(-10, 10), min_size=3, max_size=3), min_size=1, max_size=6),
       st.booleans())
def test_the_incumbent_is_never_replaced_by_a_lower_mean(table: list[list[float]],
                                                         require_gain: bool) -> None:
    values = {f"v{i}": row for i, row in enumerate(table)}
    selection = select(values, "v0", require_gain=require_gain)
    mean = {k: sum(v) / len(v) for k, v in values.items()}
    assert mean[selection.selected] >= mean["v0"]
    assert mean[selection.selected] == max(mean.values()) or not selection.promoted
    if selection.promoted:
        assert selection.selected != "v0"
        if require_gain:
            assert next(c for c in selection.comparisons
                        if c.version_id == selection.selected).low > 0


def test_paired_interval_brackets_the_mean_difference() -> None:
    cand = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    inc = [0.5, 1.8, 2.1, 3.9, 4.0, 5.5]
    low, high = paired_interval(cand, inc, seed=3)
    mean = sum(c - i for c, i in zip(cand, inc, strict=True)) / len(cand)
    assert low <= mean <= high and low > 0
    assert paired_interval(cand, inc, seed=3) == (low, high)


def test_one_tree_gives_no_interval_and_require_gain_keeps_the_incumbent() -> None:
    assert paired_interval([0.9], [0.5]) == (None, None)
    free = select({"inc": [0.5], "cand": [0.9]}, "inc")
    assert free.promoted and "no interval: one tree" in free.reason
    strict = select({"inc": [0.5], "cand": [0.9]}, "inc", require_gain=True)
    assert not strict.promoted and strict.selected == "inc"
    assert "one tree gives no interval" in strict.reason
    two = select({"inc": [0.5, 0.6], "cand": [0.9, 0.8]}, "inc", require_gain=True)
    assert two.promoted and "95% interval [" in two.reason


def test_require_gain_keeps_an_uncertain_winner_out() -> None:
    values = {"inc": [1.0, 1.0, 1.0, 1.0], "new": [3.0, 0.0, 2.9, 0.0]}
    assert select(values, "inc").selected == "new"
    kept = select(values, "inc", require_gain=True)
    assert kept.selected == "inc" and not kept.promoted and "does not exclude zero" in kept.reason


def test_loop_runs_rounds_and_dreams_between_them(store: SqliteRunStore,
                                                  make_task: TaskFactory) -> None:
    task = load_task(make_task())
    seen = []
    report = run_loop(store, task, LoopConfig(rounds=3, per_round_budget=6, workers=2,
                                              isolation="off", dream=DreamConfig(trials=24)),
                      observer=seen.append)
    assert [r.round for r in report.rounds] == [1, 2, 3] == [r.round for r in seen]
    assert all(r.attempts <= 6 for r in report.rounds)
    assert report.rounds[-1].cumulative_attempts == sum(r.attempts for r in report.rounds)
    assert [r.dream is not None for r in report.rounds] == [True, True, False]
    assert report.rounds[0].why == "the initial policy (π_1)"
    assert report.rounds[1].why.startswith(("promoted by dream", "kept by dream"))
    assert report.rounds[1].policy == report.rounds[0].dream["selected"]  # type: ignore[index]
    stored = store.loop_rounds(report.loop_id)
    assert [r.run_id for r in stored] == [r.run_id for r in report.rounds]
    assert store.get_loop(report.loop_id).status == "finished"
    bests = [r.best_so_far for r in report.rounds]
    assert bests == sorted(bests)  # best so far never decreases (maximize)


def test_loop_stops_in_the_round_that_reaches_its_target(store: SqliteRunStore,
                                                          make_task: TaskFactory) -> None:
    task = load_task(make_task())
    report = run_loop(store, task, LoopConfig(rounds=3, per_round_budget=40, workers=1,
                                              isolation="off", dream=DreamConfig(trials=8),
                                              initial=parse_spec("fixed:branches=1,refine=39"),
                                              target=2.0))
    assert len(report.rounds) == 1 and report.rounds[0].dream is None
    assert report.stop == "target reached in round 1 (2)"
    assert report.best is not None and report.best >= 2.0
    assert report.rounds[0].attempts < 40  # the round itself stopped at the target
    assert store.list_dreams(task.digest) == []
    assert store.get_loop(report.loop_id).status == "finished"


def test_fixed_arm_keeps_the_initial_policy(store: SqliteRunStore,
                                            make_task: TaskFactory) -> None:
    task = load_task(make_task())
    report = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=4, workers=2,
                                              arm="fixed", isolation="off"))
    assert len({r.policy for r in report.rounds}) == 1
    assert all(r.dream is None for r in report.rounds)
    assert store.list_dreams(task.digest) == []


def test_dream_first_starts_the_loop_from_the_earlier_trees(
    history_store: tuple[SqliteRunStore, Path]
) -> None:
    store, task_dir = history_store
    task = load_task(task_dir)
    report = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=6, workers=2,
                                              isolation="off", dream=DreamConfig(trials=24),
                                              dream_first=True))
    first = report.first_dream
    assert first is not None
    dreams = store.list_dreams(task.digest)
    assert [d.dream_id for d in dreams] == [first["dream_id"],
                                            report.rounds[0].dream["dream_id"]]  # type: ignore[index]
    before = next(d for d in dreams if d.dream_id == first["dream_id"])
    assert before.incumbent == LoopConfig(per_round_budget=6).initial_policy().version_id()
    # round 1 deploys the first dream's choice and says why
    assert report.rounds[0].policy == first["selected"]
    assert report.rounds[0].why.startswith(("before round 1, promoted by dream",
                                            "before round 1, kept by dream"))
    assert store.get_loop(report.loop_id).config["first_dream"] == first["dream_id"]
    # the first dream saw only the four earlier trees; the one after round 1 sees five
    assert [len(d.config["trees"]) for d in dreams] == [4, 5]


def test_dream_first_without_history_or_in_the_fixed_arm_runs_pi_1(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task = load_task(make_task())
    fresh = run_loop(store, task, LoopConfig(rounds=1, per_round_budget=4, workers=2,
                                             isolation="off", dream_first=True))
    assert fresh.first_dream is None and fresh.rounds[0].why == "the initial policy (π_1)"
    assert store.get_loop(fresh.loop_id).config["first_dream"] is None
    fixed = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=4, workers=2,
                                             arm="fixed", isolation="off", dream_first=True))
    assert fixed.first_dream is None and store.list_dreams(task.digest) == []
    assert {r.why for r in fixed.rounds} == {"the initial policy (π_1)"}


def test_cli_dream_policies_replay_and_loop(tmp_path: Path, make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")

    def cli(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code == code, result.output
        return result.output

    cli("replay", task_dir, code=1)  # nothing recorded yet: a clear error
    out = json.loads(cli("loop", task_dir, "--rounds", "2", "--per-round-budget", "4",
                         "--trials", "12", "--isolation", "off", "--json"))
    assert [r["round"] for r in out["rounds"]] == [1, 2]
    dreamed = json.loads(cli("dream", task_dir, "--trials", "12", "--json"))
    shown = cli("dream", task_dir, "--trials", "12", "--select-on", "holdout")
    letters = "".join(ch for ch in shown if ch.isalnum())  # the table folds narrow columns
    assert "vsincumbentonholdout" in letters
    held = json.loads(cli("dream", task_dir, "--trials", "12", "--select-on", "holdout",
                          "--json"))
    assert held["select_on"] == "holdout"
    assert "unknown selection split 'sideways'" in cli("dream", task_dir, "--select-on",
                                                       "sideways", code=1)
    assert dreamed["selected"] and dreamed["candidates"]
    listed = json.loads(cli("policies", task_dir, "--json"))
    assert listed["deployed"] == dreamed["selected"]
    assert any(v["scores"] for v in listed["versions"])
    verified = json.loads(cli("ledger", "verify", dreamed["dream_id"], "--json"))
    assert verified["ok"] and verified["rows"] == len(FAST.families) + 2
    table = json.loads(cli("replay", task_dir, "--policy", "greedy:branches=1", "--json"))
    assert len(table["trees"]) == 2 and table["policy"] == "greedy:branches=1"
    assert {"value", "quality", "attempts", "rounds", "out_of_support"} <= set(table["trees"][0])
    text = cli("loop", task_dir, "--rounds", "1", "--per-round-budget", "2", "--trials", "8",
               "--isolation", "off")
    assert "round 1" in text and "best so far" in text
    round_run = text.split("round 1", 1)[1].split("run ", 1)[1].split(":", 1)[0].strip()
    length, digest = cli("ledger", "head", round_run).split()
    assert f"ledger head {length} {digest}" in text  # each round prints its run's head
    cli("loop", task_dir, "--arm", "sideways", code=1)
    wide = json.loads(cli("loop", task_dir, "--rounds", "1", "--per-round-budget", "4",
                          "--initial", "fixed:branches=4,refine=0", "--trials", "8",
                          "--isolation", "off", "--no-dream-first", "--json"))
    assert wide["rounds"][0]["policy"] == "fixed:branches=4,refine=0"
    aimed = json.loads(cli("loop", task_dir, "--rounds", "3", "--per-round-budget", "40",
                           "--initial", "fixed:branches=1,refine=39", "--target", "2",
                           "--trials", "8", "--isolation", "off", "--no-dream-first",
                           "--json"))
    assert aimed["stop"] == "target reached in round 1 (2)" and len(aimed["rounds"]) == 1
    cli("loop", task_dir, "--target", "high", code=2)
    # on a store with trees of the task, a loop dreams before round 1 unless told not to
    carried = json.loads(cli("loop", task_dir, "--rounds", "1", "--per-round-budget", "4",
                             "--trials", "8", "--isolation", "off", "--json"))
    assert carried["first_dream"]["dream_id"]
    assert carried["rounds"][0]["policy"] == carried["first_dream"]["selected"]
    assert wide["first_dream"] is None and aimed["first_dream"] is None


def test_frontier_area_and_knob_sweep() -> None:
    from dreamrsi.dreaming.pareto import _frontier_area, knob_values

    assert _frontier_area([], 0.25) == 0.25
    assert _frontier_area([(0.5, 1.0)], 0.0) == pytest.approx(0.5)
    # a dominated point adds nothing; the frontier is a running maximum
    assert _frontier_area([(0.2, 0.5), (0.4, 0.3), (0.6, 1.0)], 0.0) == pytest.approx(
        0.2 * 0.0 + 0.4 * 0.5 + 0.4 * 1.0)
    knob, values = knob_values("fixed")
    assert knob == "refine" and values[0] == 0 and values[-1] == 40 and len(values) == 6
    assert knob_values("ucb")[0] == "c"


def test_dream_with_the_pareto_objective(history_store: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = history_store
    task = load_task(task_dir)
    config = DreamConfig(trials=14, keep=1, objective=ParetoAUC(0.05),
                         families=("fixed", "greedy"),
                         replay=ReplaySettings(workers=2, attempt_budget=8))
    incumbent = PolicySpec("fixed", {"branches": 2, "refine": 3})
    report = dream(store, task, incumbent, config)
    values = {c.spec: c.train.value for c in report.candidates}
    assert values[report.selected] >= values[incumbent]
    for c in report.candidates:  # AUC in [0, 1] minus a penalty in [0, 1]
        assert -0.05 <= c.train.value <= 1.0
    assert store.verify_ledger(report.dream_id).ok


def test_rank_quality_uses_one_yardstick_for_every_tree() -> None:
    from dreamrsi.core.model import Node, NodeStatus
    from dreamrsi.core.replay import RecordedTree
    from dreamrsi.dreaming.evaluate import QualityScale

    def tree(run: str, scores: list[float]) -> RecordedTree:
        nodes = [Node(f"{run}-0", run, None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
        for i, s in enumerate(scores, 1):
            nodes.append(Node(f"{run}-{i}", run, nodes[-1].node_id, i, i, "c",
                              NodeStatus.OK, True, s, s))
        return RecordedTree.from_nodes(run, nodes)

    small, large = tree("a", [0.2]), tree("b", [0.1, 0.5, 0.9])
    scale = QualityScale.of([small, large])
    settings = ReplaySettings(workers=1, beta1=0.0, beta2=0.0)
    fixed = PolicySpec("fixed", {"branches": 1, "refine": 5})
    on_small, on_large = score_policy(fixed, [small, large], settings, scale=scale)
    assert on_large.value == 1.0  # reached the history's best
    assert on_small.value == scale.rank(0.2) == 0.5  # 2 of the 4 attempts recorded
    bare = {"workers": 1, "beta1": 0.0, "beta2": 0.0}
    relative = score_policy(fixed, [small], ReplaySettings(**bare, quality=RelativeQuality()))
    assert relative[0].value == 1.0  # per tree, a one-node tree looks perfect: rank does not
    assert scale.rank(-1.0) == 0.0 and scale.rank(0.9) == 1.0
    rare = score_policy(fixed, [small, large], ReplaySettings(**bare, quality=RarityQuality()),
                        scale=scale)
    assert rare[1].value == pytest.approx(math.log10(5))  # the best of 4: log10(n + 1)
    assert rare[0].value == pytest.approx(math.log10(5 / 3))  # 2 of the 4 scores above it


def test_rarity_gives_each_tenfold_rarer_score_the_same_step() -> None:
    from dreamrsi.dreaming.evaluate import QualityScale

    scale = QualityScale(tuple(float(i) for i in range(9999)))  # scores 0 .. 9998
    assert scale.rarity(-1.0) == 0.0
    assert scale.rarity(8999.0) == pytest.approx(1.0)  # 999 above: better than ~90%
    assert scale.rarity(9899.0) == pytest.approx(2.0)  # 99 above
    assert scale.rarity(9989.0) == pytest.approx(3.0)  # 9 above
    assert scale.rarity(1e9) == pytest.approx(4.0)  # above all: log10(n + 1)
    # rank barely separates the same top scores
    assert scale.rank(9989.0) - scale.rank(9899.0) < 0.01
    assert QualityScale(()).rarity(1.0) == 0.0
    with pytest.raises(ConfigError, match="unknown quality mode 'rarest'.*rarity"):
        parse_quality("rarest")


def test_warm_start_rounds_begin_at_the_best_so_far(store: SqliteRunStore,
                                                    make_task: TaskFactory) -> None:
    task = load_task(make_task())
    report = run_loop(store, task, LoopConfig(rounds=3, per_round_budget=4, workers=2,
                                              arm="fixed", isolation="off", warm_start=True))
    previous_best = None
    for entry in report.rounds:
        root = store.nodes(entry.run_id)[0]
        if previous_best is not None:
            assert root.commit == previous_best.commit
            assert root.raw_score == previous_best.raw_score
        run_best = max((n for n in store.nodes(entry.run_id) if n.score is not None),
                       key=lambda n: n.score or 0.0)
        if previous_best is None or run_best.raw_score > previous_best.raw_score:  # type: ignore[operator]
            previous_best = run_best
    rows = [r for r in store.ledger(report.rounds[1].run_id) if r.event.cmd.startswith("start")]
    assert len(rows) == 1


def test_start_from_a_node_of_another_task_is_refused(store: SqliteRunStore,
                                                       make_task: TaskFactory) -> None:
    first = load_task(make_task())
    summary = start_run(store, first, RunConfig(budget=1, isolation="off"))
    other = load_task(make_task(name="other"))
    with pytest.raises(ConfigError, match="cannot start from node"):
        start_run(store, other, RunConfig(budget=1, isolation="off",
                                          start_from=f"{summary.run_id}-1"))
