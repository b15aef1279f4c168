"""What the model is told, read from the requests a loopback server received: which way is
better, the program's metrics, and never an endpoint's error as a program's feedback."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.agents.conftest import LlmTaskFactory, improve
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen

pytestmark = pytest.mark.usefixtures("key_env")

EVALUATE_METRICS = '''\
import json, subprocess, sys
out = subprocess.run([sys.executable, "initial_program.py"], capture_output=True, text=True)
v = float(out.stdout.strip().splitlines()[-1])
print(json.dumps({"score": v, "valid": True, "feedback": f"value() returned {v}",
                  "metrics": {"evaluations": 17, "spread": 0.125, "converged": True}}))
'''


def run_chain(store: SqliteRunStore, task: Path, budget: int) -> None:
    start_run(store, load_task(task), RunConfig(budget=budget, workers=1,
                                                policy=parse_spec("fixed:branches=1,refine=9")))


@pytest.mark.parametrize(("direction", "better", "worse"), [("minimize", "lower", "higher"),
                                                            ("maximize", "higher", "lower")])
def test_the_prompt_says_which_way_is_better_and_shows_the_metrics(
        direction: str, better: str, worse: str, llm_task: LlmTaskFactory,
        store: SqliteRunStore) -> None:
    with FakeOpenAI(responder=improve) as server:
        task = llm_task(server.base_url, files={"evaluate.py": EVALUATE_METRICS})
        toml = task / "task.toml"
        toml.write_text(toml.read_text().replace('direction = "maximize"',
                                                 f'direction = "{direction}"'))
        run_chain(store, task, 2)
    text = server.chats[0].user_text()
    assert "raise the score" not in text
    assert f"A {better} score is better" in text and f"make the score {better}" in text
    assert f"A {worse} score is better" not in text
    assert f"Scores are to be {direction}d" in text
    assert "Its metrics: evaluations = 17; spread = 0.125; converged = True" in text
    second = server.chats[1].user_text()  # the ancestors' metrics too
    assert "Metrics: evaluations = 17; spread = 0.125; converged = True" in second


def test_an_endpoint_error_is_never_shown_as_the_programs_feedback(
        llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    calls = iter(range(1000))

    def respond(seen: Seen) -> Reply:
        return Reply.error(500, "upstream exploded at rack 7") if next(calls) == 0 \
            else improve(seen)

    with FakeOpenAI(responder=respond) as server:
        run_chain(store, llm_task(server.base_url, proposer="max_retries = 0\n"), 3)
    nodes = store.nodes(store.list_runs()[0].run_id)
    assert nodes[1].feedback.startswith("infrastructure: ")
    assert "upstream exploded at rack 7" in nodes[1].feedback  # recorded, for the user
    later = [seen.user_text() for seen in server.chats[1:]]
    assert later and nodes[2].parent_id == nodes[1].node_id  # the error node was a parent
    for text in later:
        assert "upstream exploded" not in text and "HTTP 500" not in text
    assert "This attempt produced no program" in later[0]
    assert "none (the starting program)" not in later[0].split("# The program now")[1]
