"""The family prior: the first dream on a scarce history borrows the trees of the other tasks
of the task's family, each scored on its own task's scale and lent only its own task's
branches (real stores, real runs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.dreaming import DreamConfig, LoopConfig, ReplaySettings, run_loop
from dreamrsi.dreaming.by_branch import strata
from dreamrsi.dreaming.evaluate import QualityScale, score_policy
from dreamrsi.dreaming.history import borrow_family, load_history, pool_branches
from dreamrsi.dreaming.quality import parse_quality
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import Task, load_task
from tests.conftest import TaskFactory

# the sibling's scores live on another scale: a thousand times the value, plus 10,000
EVALUATE_SCALED = """
import json
v = float(open("value.txt").read())
print(json.dumps({"score": 1000 * v + 10000, "valid": True, "feedback": "scaled",
                  "metrics": {}}))
"""
SMALL = DreamConfig(trials=12, keep=1)


def record(store: SqliteRunStore, task: Task, seeds: range,
           policy: str = "fixed:branches=3,refine=2") -> list[str]:
    """Runs of ``task`` with these seeds; their ids."""
    return [start_run(store, task, RunConfig(budget=8, workers=2, seed=seed,
                                             policy=parse_spec(policy),
                                             isolation="off")).run_id
            for seed in seeds]


@pytest.fixture
def family(store: SqliteRunStore, make_task: TaskFactory) -> tuple[Task, Task, list[str]]:
    """A store holding three runs of ``toy-1`` (the sibling, on its own scale) and two of
    ``other`` (another family); ``toy-2`` (the task measured) has none. Returns toy-2, toy-1
    and the sibling's run ids."""
    sibling = load_task(make_task(name="toy-1", evaluate=EVALUATE_SCALED))
    stranger = load_task(make_task(name="other"))
    siblings = record(store, sibling, range(3))
    record(store, stranger, range(10, 12))
    return load_task(make_task(name="toy-2")), sibling, siblings


def loop_config(**kwargs: object) -> LoopConfig:
    return LoopConfig(**{"rounds": 2, "per_round_budget": 6, "workers": 2, "isolation": "off",
                         "dream": SMALL, **kwargs})  # type: ignore[arg-type]


def test_first_dream_on_a_fresh_store_borrows_the_siblings_trees_only(
        store: SqliteRunStore, family: tuple[Task, Task, list[str]]) -> None:
    task, sibling, siblings = family
    report = run_loop(store, task, loop_config(family_prior=True))
    first = report.first_dream
    assert first is not None
    assert first["borrowed"] == [{"tree": r, "task": "toy-1"} for r in siblings]
    dreams = store.list_dreams(task.digest)
    before = next(d for d in dreams if d.dream_id == first["dream_id"])
    # only the sibling's trees: never the other family's, and toy-2 has none of its own yet
    assert before.config["trees"] == siblings
    assert before.config["borrowed"] == [
        {"run_id": r, "task": "toy-1", "task_digest": sibling.digest,
         "evaluator_digest": sibling.evaluator_digest} for r in siblings]
    assert before.report is not None
    assert before.report["borrowed"] == first["borrowed"]
    # the pick's why names the family evidence
    why = report.rounds[0].why
    assert why.startswith("before round 1, ")
    assert ("family prior: 3 of the 3 trees borrowed from other tasks of the family "
            "(3 of toy-1), 0 of the task's own") in why
    # the dream after round 1 replays the task's own tree only
    after = next(d for d in dreams if d.dream_id != first["dream_id"])
    assert after.config["trees"] == [report.rounds[0].run_id]
    assert "borrowed" not in after.config


def test_turned_off_no_tree_of_another_task_is_used(
        store: SqliteRunStore, family: tuple[Task, Task, list[str]]) -> None:
    task, _, _ = family
    report = run_loop(store, task, loop_config(family_prior=False))
    assert report.first_dream is None
    assert report.rounds[0].why == "the initial policy (π_1)"
    (after,) = store.list_dreams(task.digest)
    assert after.config["trees"] == [report.rounds[0].run_id]
    assert store.get_loop(report.loop_id).config["family_prior"] is False


def test_by_default_a_built_in_family_is_borrowed_where_it_applies(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    sibling = load_task(make_task(name="autocorrelation-c1", evaluate=EVALUATE_SCALED))
    siblings = record(store, sibling, range(3))
    record(store, load_task(make_task(name="autocorrelation-9")), range(3, 5))  # a stem alike
    task = load_task(make_task(name="autocorrelation-c3"))
    report = run_loop(store, task, loop_config())
    first = report.first_dream
    assert first is not None
    # the built-in sibling only: a task whose name merely shares the stem is not borrowed
    assert first["borrowed"] == [{"tree": r, "task": "autocorrelation-c1"} for r in siblings]
    assert "family_prior" not in store.get_loop(report.loop_id).config  # left to the default
    # where it cannot apply, the default is off and nothing is refused
    for kwargs in ({"arm": "fixed"}, {"dream_first": False},
                   {"dream": DreamConfig(replay=ReplaySettings(quality=parse_quality("raw")))}):
        assert not loop_config(**kwargs).borrows_family()
    fixed = run_loop(store, task, loop_config(arm="fixed"))
    assert fixed.first_dream is None and fixed.rounds[0].why == "the initial policy (π_1)"


def test_by_default_a_family_by_name_alone_is_not_borrowed(
        store: SqliteRunStore, family: tuple[Task, Task, list[str]]) -> None:
    task, _, _ = family  # toy-2 and toy-1: one family by their names' stem, a guess
    report = run_loop(store, task, loop_config())
    assert report.first_dream is None
    assert report.rounds[0].why == "the initial policy (π_1)"


def test_by_default_a_store_without_the_family_says_nothing(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    record(store, load_task(make_task(name="other")), range(2))
    task = load_task(make_task(name="toy-2"))
    report = run_loop(store, task, loop_config())
    assert report.first_dream is None
    assert report.rounds[0].why == "the initial policy (π_1)"


def test_the_family_prior_is_left_out_when_the_tasks_own_trees_suffice(
        store: SqliteRunStore, family: tuple[Task, Task, list[str]]) -> None:
    task, _, _ = family
    own = record(store, task, range(20, 22))
    report = run_loop(store, task, loop_config(family_prior=True))
    first = report.first_dream
    assert first is not None and "borrowed" not in first
    before = next(d for d in store.list_dreams(task.digest)
                  if d.dream_id == first["dream_id"])
    assert before.config["trees"] == own
    assert report.rounds[0].why.endswith(
        "; family prior not used: the task's own 2 trees are enough to promote on (2)")
    assert store.get_loop(report.loop_id).config["family_prior"] is True


def test_with_no_tree_of_the_family_the_loop_starts_from_pi_1_and_says_why(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    record(store, load_task(make_task(name="other")), range(2))
    task = load_task(make_task(name="toy-2"))
    report = run_loop(store, task, loop_config(family_prior=True))
    assert report.first_dream is None
    assert report.rounds[0].why == (
        "the initial policy (π_1); family prior: the store holds no finished run of another "
        "task of family 'toy', nothing borrowed")


def test_family_prior_refused_where_it_cannot_apply() -> None:
    for kwargs, words in (({"arm": "fixed"}, "dream arm"),
                          ({"dream_first": False}, "dream_first"),
                          ({"dream": DreamConfig(replay=ReplaySettings(
                              quality=parse_quality("raw")))}, "raw scores")):
        with pytest.raises(ConfigError, match=words) as caught:
            LoopConfig(family_prior=True, **kwargs)  # type: ignore[arg-type]
        assert caught.value.key == "family_prior"


def test_cli_loop_takes_family_prior(tmp_path: Path, make_task: TaskFactory) -> None:
    result = CliRunner().invoke(app, ["loop", str(make_task(name="toy-2")), "--arm", "fixed",
                                      "--family-prior", "--store", str(tmp_path / "s")])
    assert result.exit_code != 0
    assert "the family prior is for the dream before round 1" in result.output


def test_borrowed_trees_lend_and_are_lent_only_within_their_own_task(
        store: SqliteRunStore, family: tuple[Task, Task, list[str]]) -> None:
    task, sibling, siblings = family
    (own,) = record(store, task, range(30, 31))
    history = borrow_family(store, load_history(store, task.name, task.digest,
                                                task.evaluator_digest), task.name)
    assert [t.tree_id for t in history.trees] == [own, *siblings]
    assert [t.tree_id for t in history.own] == [own]
    by_id = {t.tree_id: t for t in history.trees}
    pooled = {t.tree_id: t for t in pool_branches(history.trees)}
    # toy-2's only tree has no tree of its own task to borrow from: it stays as recorded
    assert pooled[own] is by_id[own]
    for run in siblings:  # each sibling tree holds its own branches and its siblings' only
        lent = sum(len(by_id[r].root_children) for r in siblings if r != run)
        assert len(pooled[run].root_children) == len(by_id[run].root_children) + lent
    # the branch bootstrap's strata never mix the two tasks
    for stratum in strata(history.trees):
        assert len({history.trees[t].task_digest for t, _ in stratum}) == 1
    assert {history.trees[t].task_digest for s in strata(history.trees) for t, _ in s} == {
        task.digest, sibling.digest}


def test_each_tree_is_scored_on_its_own_tasks_scale(
        store: SqliteRunStore, family: tuple[Task, Task, list[str]]) -> None:
    task, _, _ = family
    record(store, task, range(40, 42))
    history = borrow_family(store, load_history(store, task.name, task.digest,
                                                task.evaluator_digest), task.name)
    settings = ReplaySettings(workers=2, quality=parse_quality("rank"))
    everything = parse_spec("fixed:branches=3,refine=2")  # reveals every recorded node
    own = len(history.own)
    per_task = score_policy(everything, history.trees, settings,
                            scale=QualityScale.per_task(history.trees))
    # each tree measured as if its task's trees were the whole history
    alone = [score_policy(everything, trees, settings, scale=QualityScale.of(trees))
             for trees in (history.own, history.trees[own:])]
    assert [s.quality for s in per_task] == [s.quality for scores in alone for s in scores]
    assert max(s.quality for s in per_task[:own]) == max(
        s.quality for s in per_task[own:]) == 1.0  # each task's best is its own scale's top
    # on one scale for both, toy-2's scores (a few units) sit below every sibling score
    # (thousands): toy-2's best would rank below half
    mixed = score_policy(everything, history.trees, settings,
                         scale=QualityScale.of(history.trees))
    assert all(s.quality < 0.5 for s in mixed[:own])
    # a tree of a task (here: an evaluator) the scale does not hold is refused, not guessed
    stranger = dataclasses.replace(history.trees[-1], evaluator_digest="sha256:elsewhere")
    with pytest.raises(ValueError, match="no scale of task"):
        QualityScale.per_task(history.trees).for_tree(stranger)

