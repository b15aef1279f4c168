"""A Dream Run's state as the fold of its events: every misuse refused with a clear error."""

from __future__ import annotations

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.budget import parse_budget
from dreamrsi.repo_runs.state import DreamStatus, EventKind, WorkState, apply, fold

OPEN = ("r0", "open", {"objective": "o", "repo": "/r", "head": "h", "root_node": "n0"})
D1 = ("r1", "dream", {"dream": "d1", "kind": "primary", "parent": None, "start_node": "n0"})


def _state(*more: tuple[str, str, dict[str, object]]) -> WorkState:
    return fold("run", [OPEN, D1, *more])


def test_events_fold_into_dreams_and_checkpoints() -> None:
    s = _state(("r2", "checkpoint", {"dream": "d1", "node": "n1"}),
               ("r3", "checkpoint", {"dream": "d1", "node": "n2"}),
               ("r4", "revert", {"dream": "d1", "node": "n1"}))
    d = s.dreams["d1"]
    assert d.checkpoints == ("n1", "n2") and d.head_node == "n2" and d.work_node == "n1"
    assert s.events == 5 and s.next_id("d") == "d2"


@pytest.mark.parametrize(("kind", "payload", "message"), [
    ("open", OPEN[2], "already open"),
    ("dream", {"dream": "d1", "kind": "primary", "start_node": "n0"}, "exists already"),
    ("dream", {"dream": "d2", "kind": "shadow", "start_node": "n0", "question": "q",
               "decision": "d", "returns": "r", "budget": 0}, "budget"),
    ("dream", {"dream": "d2", "kind": "shadow", "start_node": "n0", "question": "q",
               "decision": "", "returns": "r", "budget": 1}, "decision"),
    ("revert", {"dream": "d1", "node": "n7"}, "not a checkpoint"),
    ("checkpoint", {"dream": "d9", "node": "n1"}, "no dream"),
    ("answer", {"dream": "d1", "answer": "a"}, "not a shadow"),
    ("belief", {"hypothesis": "h1", "status": "eliminated", "cites": ["x"]}, "no hypothesis"),
    ("status", {"dream": "d1", "status": "merged"}, "cannot become"),
    ("status", {"dream": "d1", "status": "done"}, "does not fit: ValueError"),
    ("checkpoint", {"dream": "d1"}, "does not fit: KeyError"),
])
def test_misuse_is_refused(kind: str, payload: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        apply(_state(), EventKind(kind), payload)


def test_a_belief_needs_cites_and_an_ended_dream_takes_no_work() -> None:
    s = _state(("r2", "hypothesis", {"hypothesis": "h1", "text": "t"}))
    with pytest.raises(ConfigError, match="cite"):
        apply(s, EventKind.BELIEF, {"hypothesis": "h1", "status": "eliminated"})
    s = apply(s, EventKind.STATUS, {"dream": "d1", "status": "abandoned"})
    assert s.dreams["d1"].status is DreamStatus.ABANDONED
    with pytest.raises(ConfigError, match="abandoned"):
        apply(s, EventKind.CHECKPOINT, {"dream": "d1", "node": "n1"})


def test_only_an_opened_run_takes_events_and_a_closed_one_takes_none() -> None:
    with pytest.raises(ConfigError, match="not a Dream Run"):
        fold("run", [D1])
    s = apply(_state(), EventKind.CLOSE, {"reason": "done"})
    with pytest.raises(ConfigError, match="closed"):
        apply(s, EventKind.SUBGOAL, {"text": "more"})


def test_budget_words() -> None:
    assert parse_budget(["90m, $2.5", "12"]) == {"wall_s": 5400.0, "money_usd": 2.5,
                                                 "attempts": 12}
    for bad in (["0"], ["$-1"], ["$nan"], ["5 weeks"], ["1h", "2h"]):
        with pytest.raises(ConfigError, match="budget"):
            parse_budget(bad)
