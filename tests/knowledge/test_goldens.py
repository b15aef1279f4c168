"""Golden cases and the reward that speaks: a score and why for each, the metrics, the
weighted objective from the config repository and the CI floor."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.check import check_goldens, load_objective, load_outputs
from dreamrsi.knowledge.goldens import Golden, add_goldens, golden_from, list_goldens
from dreamrsi.store.memory import MemoryRunStore

SCORER = """
import json, os
g = json.load(open(os.environ["DREAM_GOLDEN"]))
polite = "please" in g["output"].lower()
right = g["expected"] in g["output"]
print("some chatter")
print(json.dumps({"score": 1.0 if right else 0.25, "feedback": "right" if right else
                  "missed " + g["expected"], "metrics": {"politeness": float(polite)}}))
"""


def _repo(tmp_path: Path, objective: str) -> Path:
    repo = tmp_path / "config"
    repo.mkdir()
    (repo / "objective.toml").write_text(objective)
    (repo / "score.py").write_text(SCORER)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "objective"], check=True)
    return repo


GOLDENS = [
    {"id": "g1", "input": "2+2?", "expected": "4", "tags": ["math"]},
    {"id": "g2", "input": "capital of France?", "expected": "Paris", "match": "contains",
     "split": "heldout"},
    {"id": "g3", "input": "a date", "expected": r"\d{4}-\d\d-\d\d", "match": "regex",
     "canary": True},
    {"id": "g4", "input": "refund order 7", "expected": "order 7", "command":
     "python score.py"},
    {"id": "g5", "input": "be kind", "rubric": "Is the answer kind?"},
]


def test_goldens_are_added_once_and_listed() -> None:
    with MemoryRunStore() as store:
        added = add_goldens(store, [golden_from(g, f"line {k}") for k, g in enumerate(GOLDENS)])
        assert [g.match for g in added] == ["exact", "contains", "regex", "command", "rubric"]
        assert [g.golden_id for g in list_goldens(store, split="heldout")] == ["g2"]
        assert [g.golden_id for g in list_goldens(store, tag="math")] == ["g1"]
        before = store.knowledge_events()
        with pytest.raises(ConfigError, match="golden 'g3' already exists"):
            add_goldens(store, [golden_from({"input": "new", "expected": "x"}, "a"),
                                golden_from({"id": "g3", "input": "x", "expected": "y"}, "b")])
        assert store.knowledge_events() == before
        assert golden_from({"input": "q", "expected": "a"}, "x").golden_id.startswith("g-")


@pytest.mark.parametrize(("obj", "message"), [
    ({"expected": "x"}, "needs an 'input'"),
    ({"input": "q"}, "match 'exact' needs an 'expected'"),
    ({"input": "q", "expected": "(", "match": "regex"}, "not a regular expression"),
    ({"input": "q", "match": "command"}, "needs a 'command'"),
    ({"input": "q", "rubric": "kind?", "canary": True}, "a canary needs a locked"),
    ({"input": "q", "expected": "a", "split": "test"}, "split 'test'"),
    ({"input": "q", "expected": "a", "colour": "red"}, "unknown fields colour"),
    ({"input": "q", "expected": "a", "id": "../x"}, "is not a name"),
    ({"input": "q", "expected": 4}, "'expected' is not text"),
])
def test_a_bad_golden_is_refused(obj: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        golden_from(obj, "goldens.jsonl:3")


def test_the_reward_speaks(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "[weights]\ncorrectness = 0.8\npoliteness = 0.2\n"
                           "[floor]\ncorrectness = 0.5\npoliteness = 0.9\n")
    goldens = [golden_from(g, "x") for g in GOLDENS]
    outputs = {"g1": " 4 ", "g2": "It is Lyon.", "g3": "on 2026-01-02",
               "g4": "Please wait: refunding order 7", "g5": "sure"}
    report = check_goldens(goldens, outputs, objective=load_objective(repo), config_repo=repo)
    by = {r.golden_id: r for r in report.results}
    assert [by[g].score for g in ("g1", "g2", "g3", "g4")] == [1.0, 0.0, 1.0, 1.0]
    assert by["g2"].feedback == "the output does not contain 'Paris'" and not by["g2"].passed
    assert by["g4"].feedback == "right" and by["g4"].metrics == {"correctness": 1.0,
                                                                 "politeness": 1.0}
    assert by["g5"].score is None and "unscored" in by["g5"].feedback
    assert by["g3"].canary and by["g2"].split == "heldout"
    assert report.metrics == {"correctness": 0.75, "politeness": 1.0}
    assert report.objective == pytest.approx(0.8 * 0.75 + 0.2)
    assert report.floor_passed
    worse = check_goldens(goldens, {**outputs, "g4": "refund order 7", "g1": "5"},
                          objective=load_objective(repo), config_repo=repo)
    assert worse.results[0].feedback == "expected '4', got '5'"
    assert worse.results[3].score == 1.0 and worse.metrics["politeness"] == 0.0
    assert worse.floor_failures == ("politeness: 0 below the floor 0.9",)


def test_a_scoring_command_cannot_break_the_check(tmp_path: Path) -> None:
    cases = {"exit": "exit 3", "words": "echo fine", "range": "echo 7",
             "escape": "touch /tmp/../$HOME/../../leak && echo 1", "network":
             "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\""
             " && echo 1"}
    goldens = [golden_from({"id": k, "input": "q", "expected": "a", "command": c}, k)
               for k, c in cases.items()]
    report = check_goldens(goldens, {k: "a" for k in cases})
    by = {r.golden_id: r for r in report.results}
    assert all(r.score == 0.0 for r in report.results), by
    assert "exit 3" in by["exit"].feedback
    assert "not a verdict" in by["words"].feedback and "from 0 to 1" in by["range"].feedback
    assert "failed" in by["network"].feedback
    assert not (tmp_path.parent / "leak").exists()


def test_outputs_and_objectives_are_checked(tmp_path: Path) -> None:
    lines = tmp_path / "out.jsonl"
    lines.write_text('{"id": "g1", "output": "4"}\n\n{"id": "g2", "output": "x"}\n')
    assert load_outputs(lines) == {"g1": "4", "g2": "x"}
    (tmp_path / "o.json").write_text(json.dumps({"g1": "4"}))
    assert load_outputs(tmp_path / "o.json") == {"g1": "4"}
    lines.write_text('{"id": "g1", "output": "4"}\n{"id": "g1", "output": "5"}\n')
    with pytest.raises(ConfigError, match="out.jsonl:2: a second output"):
        load_outputs(lines)
    lines.write_text('{"id": "g1"}\n')
    with pytest.raises(ConfigError, match="out.jsonl:1: not an object with text"):
        load_outputs(lines)
    for text, message in (("[weights]\nx = -1\n", "weights.x is not a number"),
                          ("[floor]\nx = 1\n", "names no metric"),
                          ("[weights]\nx = 1\n[extra]\n", "unknown tables extra"),
                          ("weights = [", "cannot read it")):
        (tmp_path / "objective.toml").write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_objective(tmp_path)
    with pytest.raises(ConfigError, match="no objective file"):
        load_objective(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="no goldens to check"):
        check_goldens([], {})
    report = check_goldens([Golden("g", "q", "a")], {})
    assert report.results[0].feedback == "no output was given for this golden"
    assert report.weights == {"correctness": 1.0} and report.objective == 0.0
