"""``next_actions``: the allocation score from the ledger, halving, stagnation signals.

Every state is made by real verbs on a real store: a git repository, checkpoints evaluated in
the sandbox, commands run through the session.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dreamrsi.policies.allocation import AllocationScore
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.allocate import Action, ActionKind, Allocation, _halve, next_actions
from dreamrsi.repo_runs.evidence import read_facts
from dreamrsi.repo_runs.journal import check_cites, record
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.stagnation import signals
from dreamrsi.repo_runs.state import EventKind
from tests.repo_runs._control import checkpoints, make_repo, open_run, set_value

pytestmark = pytest.mark.usefixtures("bwrap")


def _actions(session: Session, **knobs: int) -> list[Action]:
    return next_actions(session.store, session.state(), config=Allocation(**knobs))


def _one(actions: list[Action], kind: ActionKind, dream: str | None = None) -> Action:
    found = [a for a in actions if a.kind is kind and (dream is None or a.dream == dream)]
    assert len(found) == 1, [(a.kind, a.dream) for a in actions]
    return found[0]


def _kinds(actions: list[Action], dream: str) -> set[ActionKind]:
    return {a.kind for a in actions if a.dream == dream}


def _formula(action: Action) -> float:
    t = action.terms
    return AllocationScore(lam=t["lam"]).value(t["gain"], t["info"], t["cost"], t["rho"])


def _check_cites(session: Session, actions: list[Action]) -> None:
    for action in actions:
        assert check_cites(session.store, session.run_id, action.cites) == action.cites


def test_a_dream_with_gains_outranks_a_flat_one(tmp_path: Path) -> None:
    store, session, _ = open_run(tmp_path, make_repo(tmp_path))
    checkpoints(session, "d1", ["2", "4"])
    verbs.fork(session, "d1", at=session.state().root_node)
    checkpoints(session, "d2", ["1", "1"])  # the root holds 1: no gain
    actions = _actions(session)
    up, flat = _one(actions, ActionKind.STEP, "d1"), _one(actions, ActionKind.STEP, "d2")
    assert up.terms["gain"] > 0 and flat.terms["gain"] == 0
    assert up.score == pytest.approx(_formula(up)) and flat.score == pytest.approx(_formula(flat))
    assert actions.index(up) < actions.index(flat)
    assert up.cites and all(c in read_facts(store, session.state()).admissible for c in up.cites)
    assert "gained" in up.reason and "gained nothing" in flat.reason
    _check_cites(session, actions)
    assert actions[-1].kind is ActionKind.STOP


def test_an_unreliable_dream_is_discounted(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    checkpoints(session, "d1", ["2", "4"])
    verbs.fork(session, "d1", at=session.state().root_node)
    checkpoints(session, "d2", ["2", "oops", "4", "oops"])
    set_value(session, "d2", "4")  # its files as they were at its last good checkpoint
    actions = _actions(session)
    good, shaky = _one(actions, ActionKind.STEP, "d1"), _one(actions, ActionKind.STEP, "d2")
    assert good.terms["rho"] == pytest.approx(3 / 4)
    assert shaky.terms["rho"] == pytest.approx(3 / 6)
    assert shaky.terms["gain"] == pytest.approx(good.terms["gain"])
    # ĉ is each dream's measured step wall time, which a loaded machine moves either way; the
    # discount is judged per unit of cost (the cost term has tests of its own)
    assert shaky.score * shaky.terms["cost"] < good.score * good.terms["cost"]
    assert shaky.score == pytest.approx(_formula(shaky))


def test_halving_picks_the_dream_behind_while_evidence_is_thin(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    checkpoints(session, "d1", ["3"])
    verbs.fork(session, "d1", at=session.state().root_node)
    actions = _actions(session)
    chosen = _one(actions, ActionKind.STEP, "d2")
    assert chosen.terms["rung"] == 1 and "successive halving" in chosen.reason
    assert chosen.score == max(a.score for a in actions if a.kind is ActionKind.STEP)
    checkpoints(session, "d2", ["2"])
    actions = _actions(session)
    chosen = _one(actions, ActionKind.STEP, "d1")  # the better half goes on to rung 2
    assert chosen.terms["rung"] == 2
    assert "rung" not in _one(actions, ActionKind.STEP, "d2").terms
    checkpoints(session, "d1", ["4"])
    checkpoints(session, "d2", ["5"])
    actions = _actions(session)  # no longer thin: the formula alone
    assert all("rung" not in a.terms for a in actions)


def test_halving_keeps_the_better_half_at_each_rung() -> None:
    counts = {"a": 1, "b": 1, "c": 1, "d": 0}
    best = {"a": 0.5, "b": 0.9, "c": 0.1, "d": -math.inf}
    assert _halve(counts, best, 3) == ("d", 1, ["a", "b", "c", "d"])
    counts["d"] = 1
    best["d"] = 0.7
    assert _halve(counts, best, 3) == ("b", 2, ["b", "d"])
    counts.update(b=2, d=2)
    assert _halve(counts, best, 3) == ("b", 3, ["b"])
    counts["b"] = 3
    assert _halve(counts, best, 3) == (None, 3, ["b"])


def test_no_progress_fires_and_calls_for_interventions(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    nodes = checkpoints(session, "d1", ["5", "3", "4", "5"])
    facts = read_facts(session.store, session.state())
    found = signals(facts, facts.dreams["d1"], 3, lambda c: c)
    assert [s.kind for s in found] == ["no_progress"]
    assert found[0].cites == facts.evals_of([facts.nodes[n] for n in nodes[1:]])
    actions = _actions(session)
    assert {ActionKind.CHALLENGE, ActionKind.RIVALS, ActionKind.CRITIC} <= _kinds(actions, "d1")
    challenge = _one(actions, ActionKind.CHALLENGE, "d1")
    assert challenge.score > _one(actions, ActionKind.STEP, "d1").score
    assert challenge.detail["instruction"] and challenge.cites == found[0].cites
    _check_cites(session, actions)


def test_a_healthy_run_raises_no_signal(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    checkpoints(session, "d1", ["2", "3", "4", "5"])
    for word in ("one", "two", "three"):  # failing commands, each its own way
        session.execute("d1", [f"echo {word}; exit 1"], timeout_s=30)
    facts = read_facts(session.store, session.state())
    assert signals(facts, facts.dreams["d1"], 3,
                   lambda c: session.store.workspaces.tree(c, [])) == []
    kinds = _kinds(_actions(session), "d1")
    assert kinds == {ActionKind.STEP, ActionKind.SUBMIT, ActionKind.ALTERNATIVE}


def test_repeated_identical_failures_call_for_a_shadow_then_end_the_path(
        tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    verbs.fork(session, "d1", at=session.state().root_node)
    checkpoints(session, "d2", ["x", "x", "x"])
    actions = _actions(session)
    assert {ActionKind.BLOCKER, ActionKind.REFRESH} <= _kinds(actions, "d2")
    blocker = _one(actions, ActionKind.BLOCKER, "d2")
    assert "not a number" in blocker.reason and len(blocker.cites) == 3
    assert ActionKind.ABANDON not in _kinds(actions, "d2")
    checkpoints(session, "d2", ["x", "x", "x"])  # twice the window: the path ends
    actions = _actions(session)
    end = _one(actions, ActionKind.ABANDON, "d2")
    assert end.detail["autopsy"].startswith("repeated failure, 6 times")
    assert end.score > _one(actions, ActionKind.STEP, "d2").score
    _check_cites(session, actions)


def test_repeated_identical_command_failures_fire_different_ones_do_not(
        tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    for _ in range(3):
        session.execute("d1", ["echo same; exit 3"], timeout_s=30)
    facts = read_facts(session.store, session.state())
    found = signals(facts, facts.dreams["d1"], 3, lambda c: c)
    assert [s.kind for s in found] == ["repeated_failure"]
    assert found[0].cites == tuple(r.event.event_id for r in facts.dreams["d1"].execs)
    session.execute("d1", ["echo other; exit 3"], timeout_s=30)
    facts = read_facts(session.store, session.state())
    assert signals(facts, facts.dreams["d1"], 3, lambda c: c) == []


def test_busy_without_new_information(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    checkpoints(session, "d1", ["2"])
    for _ in range(3):
        verbs.checkpoint(session, "d1", "nothing changed")
    facts = read_facts(session.store, session.state())
    tree = lambda c: session.store.workspaces.tree(c, [])  # noqa: E731
    assert "busy" in [s.kind for s in signals(facts, facts.dreams["d1"], 3, tree)]
    actions = _actions(session)
    assert {ActionKind.REFRESH, ActionKind.CRITIC} <= _kinds(actions, "d1")
    assert _one(actions, ActionKind.REFRESH, "d1").detail["signal"] in ("busy", "no_progress")
    checkpoints(session, "d1", ["3"])  # a change: no longer busy
    facts = read_facts(session.store, session.state())
    assert "busy" not in [s.kind for s in signals(facts, facts.dreams["d1"], 3, tree)]


def test_revert_test_and_shadow_actions(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    best, _ = checkpoints(session, "d1", ["6", "3"])
    hid = verbs.hypothesize(session, "the value is a number", test="python3 -c 'float(1)'")
    verbs.shadow(session, question="is 6 the most?", decision="whether to go on",
                 budget=1, returns="a yes or a no")
    actions = _actions(session)
    revert = _one(actions, ActionKind.REVERT, "d1")
    assert revert.detail["node"] == best and revert.terms["gain"] > 0
    test = _one(actions, ActionKind.TEST)
    assert test.detail["hypothesis"] == hid and test.terms["info"] == 1
    answer = _one(actions, ActionKind.ANSWER, "d2")
    assert "is 6 the most?" in answer.reason
    verbs.revert(session, "d1", best)
    assert ActionKind.REVERT not in _kinds(_actions(session), "d1")


def test_a_head_at_the_success_mark_stops_first(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    checkpoints(session, "d1", ["10"])
    actions = _actions(session)
    assert actions[0].kind is ActionKind.STOP and actions[0].dream == "d1"
    assert math.isinf(actions[0].score) and "success" in actions[0].reason
    assert actions[0].as_dict()["score"] == "inf"


def test_a_survivor_stops_the_work(tmp_path: Path) -> None:
    _, session, _ = open_run(tmp_path, make_repo(tmp_path))
    [node] = checkpoints(session, "d1", ["3"])
    record(session.store, session.run_id, EventKind.SUBMIT,
           {"dream": "d1", "node": node, "verdict": "survived", "pass_id": "p1"})
    actions = _actions(session)
    assert actions[0].kind is ActionKind.STOP and "survived its submit" in actions[0].reason
    assert actions[0].cites == read_facts(session.store, session.state()).evals_of(
        [session.store.get_node(node)])
