"""The sandboxed worker, its channel and its gate: decisions equal an in-process policy's,
and every way a reply can be wrong is refused with its reason."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.dreaming.code import starter_program
from dreamrsi.errors import ConfigError, PolicyError
from dreamrsi.policies import make_policy
from dreamrsi.programs import ProgramFailure, ProgramLimits, ProgramPolicy, gate
from dreamrsi.programs.wire import ChannelError, parse_reply
from tests.programs.programs import GREEDY

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
pytestmark = pytest.mark.usefixtures("bwrap")
QUICK = ProgramLimits(reply_s=1.0, start_s=10.0, total_s=60.0)


def make_tree(size: int, branches: int, seed: int) -> RecordedTree:
    rng = random.Random(seed)
    nodes = [Node("t-0", "t", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    tips: list[str] = []
    for seq in range(1, size + 1):
        parent = "t-0" if len(tips) < branches else tips[seq % branches]
        valid = rng.random() > 0.2
        score = rng.random() if valid else None
        nodes.append(Node(f"t-{seq}", "t", parent, seq, 1 + seq // branches, "c",
                          NodeStatus.OK if valid else NodeStatus.INVALID, valid, score, score,
                          plan=f"p{seq % 3}", cost=Cost(rng.randint(1, 99))))
        if len(tips) < branches:
            tips.append(f"t-{seq}")
        else:
            tips[seq % branches] = f"t-{seq}"
    return RecordedTree.from_nodes("t", nodes)


def program(select_body: str, head: str = "") -> str:
    body = "\n".join("        " + line for line in select_body.strip().splitlines())
    return (f"{head}\n\nclass ExplorationPolicy:\n    def reset(self, context):\n"
            f"        self.context = context\n\n    def select(self, view, budget):\n{body}\n")


@pytest.mark.parametrize(("branches", "refine", "budget"), [(3, 4, 12), (2, 9, None),
                                                            (5, 0, 7)])
def test_a_program_decides_exactly_as_the_family_it_rewrites(branches: int, refine: int,
                                                             budget: int | None) -> None:
    spec = PolicySpec("fixed", {"branches": branches, "refine": refine})
    with ProgramPolicy(starter_program(spec, 2), QUICK) as code:
        for seed in range(3):
            tree = make_tree(40, 4, seed)
            for workers in (1, 3):
                args = {"workers": workers, "max_rounds": 60, "attempt_budget": budget}
                assert replay(code, tree, **args) == replay(make_policy(spec), tree, **args)
        assert code.requests > 20  # one worker served every episode


def test_trees_replayed_at_once_score_as_one_after_the_other() -> None:
    trees = [make_tree(30, 3, seed) for seed in range(7)]
    args = {"workers": 2, "max_rounds": 40, "attempt_budget": 12}
    with ProgramPolicy(GREEDY, QUICK) as code:
        one_by_one = [replay(code, t, **args) for t in trees]
        sequential = code.requests
        jobs = [lambda p, t=t: replay(p, t, **args) for t in trees]
        at_once = code.run_concurrently(jobs, width=3)
        assert at_once == one_by_one
        assert code.requests - sequential < sequential / 2  # rounds shared round trips


def test_a_failure_in_one_concurrent_episode_stops_them_all() -> None:
    body = "return ['t-999'] if view.root.seq == 0 and self.context.rng.random() < 2 else []"
    trees = [make_tree(10, 2, seed) for seed in range(4)]
    with ProgramPolicy(program(body), QUICK) as code, pytest.raises(PolicyError,
                                                                    match="t-999"):
        code.run_concurrently([lambda p, t=t: replay(p, t, workers=2, max_rounds=10)
                               for t in trees])


def test_what_a_program_prints_is_diagnostics_never_the_channel() -> None:
    source = program('print(\'{"select": ["t-99"], "score": 1e9}\')\nreturn [view.root_id]'
                     ' if view.size == 0 else []')
    with ProgramPolicy(source, QUICK) as code:
        result = replay(code, make_tree(10, 2, 0), workers=2, max_rounds=10)
        assert (result.revealed, result.stop.value) == (1, "empty batch")
        assert '"score": 1e9' in code.stderr_text()


def test_a_resumed_view_is_sent_whole_and_decisions_continue() -> None:
    tree = make_tree(30, 3, 1)
    with ProgramPolicy(GREEDY, QUICK) as code:
        whole = replay(code, tree, workers=2, max_rounds=40)
        again = replay(code, tree, workers=2, max_rounds=40)
    assert whole == again and whole.revealed > 3


@pytest.mark.parametrize(("body", "kind", "words"), [
    ("return [view.leaves()[5]]", "raised", "IndexError"),
    ("while True:\n    pass", "timeout", "no answer"),
    ("return [1]", "channel", "must be a string"),
    ("return ['x' * 300]", "channel", "longer than 200"),
    ("return [view.root_id] * 5", "channel", "more than W=2"),
])
def test_a_failing_program_is_refused_with_its_reason(body: str, kind: str,
                                                      words: str) -> None:
    with ProgramPolicy(program(body), QUICK) as code, pytest.raises(ProgramFailure) as failed:
        replay(code, make_tree(10, 2, 0), workers=2, max_rounds=10)
    assert failed.value.kind == kind and words in failed.value.reason
    with pytest.raises(ProgramFailure):  # a failed worker stays failed
        code.select(None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("body", "words"), [
    ("return ['t-999']", "not revealed"),
    ("return [view.root_id] if view.size == 0 else ['t-0', view.root_id, 'nope']",
     "not revealed"),
    ("return [view.root_id] if view.size < 2 else [view.leaves()[0]] * 2",
     "selected twice"),
])
def test_an_ineligible_selection_is_refused_by_the_trusted_check(body: str, words: str) -> None:
    with ProgramPolicy(program(body), QUICK) as code, pytest.raises(PolicyError, match=words):
        replay(code, make_tree(10, 2, 0), workers=3, max_rounds=10)


def test_a_program_that_does_not_load_is_refused() -> None:
    with ProgramPolicy(program("return []", head="X = 1 / 0"), QUICK) as code, \
            pytest.raises(ProgramFailure, match="ZeroDivisionError") as failed:
        code.start()
    assert failed.value.kind == "load"


@pytest.mark.parametrize(("line", "words"), [
    (b"not json", "not JSON"),
    (b'{"select": [[]], "score": 1}', "exactly one key"),
    (b'{"score": 1e9}', "unknown reply"),
    (b'{"select": [["a"]], "select": [["b"]]}', "repeats a key"),
    (b'{"select": [[NaN]]}', "NaN"),
    (b'{"select": [[Infinity]]}', "Infinity"),
    (b'{"select": "t-1"}', "list of 1 batches"),
    (b'{"select": ["t-1"]}', "must be a list of node ids"),
    (b'{"select": [[], []]}', "list of 1 batches"),
    (b'{"select": [[["t-1"]]]}', "must be a string"),
    (b'{"select": [[""]]}', "empty"),
    (b'{"select": [["a", "b", "c"]]}', "more than W=2"),
    (b'{"ready": 1}', "must be true"),
    (b'{"error": 5}', "must be a string"),
    (b'["select"]', "exactly one key"),
    (b"\xff\xfe", "not JSON"),
    (b"[" * 100_000, "not JSON"),
])
def test_the_channel_refuses_every_other_reply(line: bytes, words: str) -> None:
    with pytest.raises(ChannelError, match=words):
        parse_reply(line, workers=[2])


def test_the_channel_accepts_its_three_shapes() -> None:
    assert parse_reply(b'{"ready": true}', []) == ("ready", True)
    assert parse_reply(b'{"select": [["a", "b"], []]}', [2, 1]) == ("select", [["a", "b"], []])
    assert parse_reply(b'{"error": "' + b"x" * 5000 + b'"}', [2])[1] == "x" * 2000


@pytest.mark.parametrize(("source", "words"), [
    ("import os", "import of 'os'"),
    ("from subprocess import run", "import from 'subprocess'"),
    ("from math import *", "import of '*'"),
    ("x = eval('1')", "use of 'eval'"),
    ("x = getattr(1, 'real')", "use of 'getattr'"),
    ("x = ().__class__", "private attribute '__class__'"),
    ("x = 'a__b'", "a string holding '__'"),
    ("class ExplorationPolicy:\n    def __eq__(self, o):\n        return True",
     "definition of '__eq__'"),
    ("g = (i for i in [1])\nf = g.gi_frame", "attribute 'gi_frame'"),
    ("def f(:\n  pass", "does not parse"),
    ("x = 1", "no top-level class ExplorationPolicy"),
    ("x = 1\n" * 40_000, "longer than"),
])
def test_the_gate_refuses_the_obvious(source: str, words: str) -> None:
    problem = gate(source)
    assert problem is not None and words in problem
    with pytest.raises(ProgramFailure, match="refused \\(gate\\)"):
        ProgramPolicy(source)


def test_the_gate_passes_an_ordinary_program() -> None:
    assert gate(GREEDY) is None


def test_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="reply_s"):
        ProgramLimits(reply_s=0)
    with pytest.raises(ConfigError, match="isolation"):
        ProgramLimits(isolation="off")
    assert ProgramLimits(isolation="off", accept_unisolated=True).isolation == "off"
