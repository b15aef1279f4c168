"""The golden sets made for the test agent: the model obeys each rule only when its text is in
the system prompt and only for its own goldens; noise and wrong feedback come at the stated
rates; the scripted distiller proposes the rule a failure shows, and its decoys; the tools
set's model obeys the statistical distiller's rules as it words them, and its agent's tool
calls reach the day's traces."""

from __future__ import annotations

import json
import random
from pathlib import Path

from dreamrsi.knowledge.config_repo import load_config
from dreamrsi.knowledge.goldens import Golden
from dreamrsi.knowledge.runner import run_agent
from dreamrsi.knowledge.stats import Marker, features, markers, rule_text
from dreamrsi.knowledge.traces import read_traces
from dreamrsi.testing.knowledge_agent import make_config_repo
from dreamrsi.testing.knowledge_sets import (
    DECOYS,
    FAMILIES,
    SETS,
    answer,
    day_traces,
    decoy_kind,
    distiller_answer,
)
from dreamrsi.testing.knowledge_tools import TOOLS_AGENT_SOURCE, stops_guessing, tool_reply
from tests.agents.fake_openai import FakeOpenAI, Reply


def _ask(question: str, *rules: str, noise: float = 0.0,
         rng: random.Random | None = None) -> str:
    return answer([{"role": "system", "content": "Be brief.\n" + "\n".join(
        f"- {r}" for r in rules)}, {"role": "user", "content": question}], noise=noise, rng=rng)


def test_each_rule_decides_its_own_goldens_only() -> None:
    goldens = SETS["more-rules"].goldens()
    for family in FAMILIES.values():
        mine = [g for g in goldens if g.get("tags") == [family.name]]
        others = [g for g in goldens if g.get("tags") and g["tags"] != [family.name]]
        assert len(mine) >= 4 and {g["split"] for g in mine} == {"train", "heldout"}
        assert sum(g["split"] == "train" for g in mine) == 2
        assert all(_ask(g["input"]) != g["expected"] for g in mine)
        assert all(_ask(g["input"], family.rule) == g["expected"] for g in mine)
        assert all(_ask(g["input"], family.rule) == _ask(g["input"]) for g in others)
    canaries = [g for g in goldens if g.get("canary")]
    everything = [f.rule for f in FAMILIES.values()]
    assert len(canaries) == 2
    assert all(_ask(g["input"], *everything) == g["expected"] for g in canaries)


def test_a_rule_naming_subjects_applies_to_those_only() -> None:
    narrow = f"{FAMILIES['units'].rule} Only for the ridge."
    assert _ask("length of the ridge trail?", narrow) == "50 km"
    assert _ask("length of the coast trail?", narrow) == "62 miles"


def test_noise_ignores_the_prompt_at_its_rate() -> None:
    rng = random.Random(3)
    rule = FAMILIES["cities"].rule
    answers = [_ask("home city of the league?", rule, noise=0.2, rng=rng) for _ in range(2000)]
    assert 0.17 < answers.count("porto") / len(answers) < 0.23
    assert set(answers) == {"porto", "Porto"}
    assert _ask("capital of France?", noise=1.0, rng=rng) == "Paris"  # facts are never noisy


def test_day_traces_flip_verdicts_at_the_stated_rate(tmp_path: Path) -> None:
    goldens = SETS["noisy"].goldens()
    outputs = {g["id"]: g["expected"] for g in goldens}  # every answer right
    flipped = total = 0
    for day in range(40):
        for path in day_traces(tmp_path / str(day), goldens, outputs, day=day, flip=0.2,
                               seed=1):
            records = [json.loads(line) for line in path.read_text().splitlines()]
            feedback = records[-1]
            total += 1
            flipped += not feedback["passed"]
            assert feedback["text"].startswith("expected ")
    assert total == 40 * 10  # train goldens only
    assert 0.16 < flipped / total < 0.24
    clean = day_traces(tmp_path / "clean", goldens, outputs, day=0, flip=0.0, seed=1)
    assert all(json.loads(p.read_text().splitlines()[-1])["passed"] for p in clean)


def _prompt(failed: str, won: str = "") -> list[dict[str, str]]:
    return [{"role": "system", "content": "You improve an AI agent"},
            {"role": "user", "content": f"Task: x\n=== FAILED SESSIONS (1) ===\n{failed}\n"
                                        f"=== SUCCESSFUL SESSIONS (1) ===\n{won}"}]


def test_the_distiller_proposes_the_rule_a_failure_shows_and_its_decoys() -> None:
    failed = "user: price of the lamp?\nfeedback: expected '$1,234.50', got '1234.50 USD'"
    won = "user: date of the audit?\nfeedback: expected '2024-11-12', got '12/11/2024'"
    kinds = []
    for call in range(len(DECOYS)):
        rules = [p["rule"] for p in json.loads(distiller_answer(_prompt(failed, won), call))[
            "proposals"]]
        assert rules[0] == FAMILIES["prices"].rule  # the wins' dates are not read
        assert FAMILIES["dates"].rule not in rules
        kinds.append(decoy_kind(rules[-1]))
    assert kinds == [kind for kind, _ in DECOYS]
    assert "Only for the lamp." in json.loads(distiller_answer(_prompt(failed), 1))[
        "proposals"][1]["rule"]
    nothing = json.loads(distiller_answer(_prompt("feedback: the output is right"), 2))
    assert [p["rule"] for p in nothing["proposals"]] == [DECOYS[2][1]["rule"]]


def _calls(question: str, *rules: str, seed: int = 0) -> list[str]:
    system = "Be brief.\n" + "\n".join(f"- {r}" for r in rules)
    reply = tool_reply([{"role": "system", "content": system},
                        {"role": "user", "content": question}], random.Random(seed))
    return [c["function"]["name"] for c in reply["choices"][0]["message"]["tool_calls"]]


def test_the_tools_model_obeys_the_statistical_rules_as_worded() -> None:
    bad = rule_text(Marker("tool:guess_date", "failure", 3, 3, 0, 3, 0.05))
    good = rule_text(Marker("tool:lookup_date", "success", 0, 3, 3, 3, 0.05))
    bystander = rule_text(Marker("tool:check_calendar", "failure", 3, 3, 0, 3, 0.05))
    tower = "year the tower opened?"
    assert {"guess_date" in _calls(tower, seed=s) for s in range(20)} == {True}
    assert {"check_calendar" in _calls(tower, seed=s) for s in range(20)} == {True, False}
    assert _calls(tower, bad) == _calls(tower, good) == ["lookup_date"]
    assert _calls(tower, bystander, seed=3)[-1] == "guess_date"
    assert "check_calendar" not in {n for s in range(20) for n in _calls(tower, bystander,
                                                                         seed=s)}
    assert _calls(tower, "The tool `guess_date` is quick.")[-1] == "guess_date"  # no order
    assert stops_guessing(bad) and stops_guessing(good) and not stops_guessing(bystander)
    metro = "year the metro opened?"
    assert _calls(metro) == ["lookup_date"]
    assert _calls(metro, "Do not call the tool `lookup_date`.") == ["guess_date"]


def test_the_tools_agent_writes_its_calls_and_the_day_traces_carry_them(
        tmp_path: Path) -> None:
    rng = random.Random(0)
    goldens = SETS["tools"].goldens()
    train = [Golden(g["id"], g["input"], g["expected"]) for g in goldens
             if g.get("split") == "train"]
    assert len(train) == 6 and sum(g.get("split") == "heldout" for g in goldens) == 5
    with FakeOpenAI(models=("fake-small",), responder=lambda seen: Reply.raw(json.dumps(
            tool_reply((seen.body or {})["messages"], rng)))) as server:
        repo = make_config_repo(tmp_path / "repo", base_url=server.base_url,
                                extra={"agent.py": TOOLS_AGENT_SOURCE})
        run = run_agent(load_config(repo), repo, train)
        assert run.error == "" and set(run.transcripts) == {g.golden_id for g in train}
        paths = day_traces(tmp_path / "traces", goldens, run.outputs, day=0, flip=0.0,
                           seed=0, transcripts=run.transcripts)
        found = {Path(source).stem: t for source, t, _ in read_traces(paths)}
        assert {k: t.outcome for k, t in found.items()} == {
            "day0-tools-tower": "failure", "day0-tools-canal": "failure",
            "day0-tools-tunnel": "failure", "day0-tools-metro": "success",
            "day0-tools-aquarium": "success", "day0-tools-lighthouse": "success"}
        assert "tool_error:guess_date" in features(found["day0-tools-tunnel"])
        assert "tool:guess_date" in features(found["day0-tools-tower"])
        assert "tool:lookup_date" in features(found["day0-tools-metro"])
        fails = [features(t) for t in found.values() if t.outcome == "failure"]
        wins = [features(t) for t in found.values() if t.outcome == "success"]
        rules = [rule_text(m) for m in markers(fails, wins)]
        first = next(r for r in rules if "`guess_date`" in r)
        assert first.startswith("Do not call the tool `guess_date`")
        (repo / "LESSONS.md").write_text(f"- {first}\n")
        again = run_agent(load_config(repo), repo, train)
    assert again.outputs == {g.golden_id: g.expected for g in train}
