"""Distilling: the statistical distiller finds a planted separating tool and nothing in noise;
the model distiller, against a loopback server, gets well-formed rules through and turns every
hostile answer into an error or a reasoned drop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.agents.client import ModelClient
from dreamrsi.core.model import NodeStatus
from dreamrsi.knowledge.answers import instruction_problem
from dreamrsi.knowledge.distill import Limits, propose
from dreamrsi.knowledge.proposal import ConfigEdit
from dreamrsi.knowledge.stats import fisher_tail
from dreamrsi.knowledge.traces import import_run, judge
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice
from dreamrsi.testing.builders import TASK, make_node, make_run
from tests.agents.fake_openai import FakeOpenAI, Reply

from .sessions import put, session


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteRunStore]:
    handle = SqliteRunStore.open(tmp_path / "store", writer=True, holder="test")
    yield handle
    handle.close()


def planted(store: SqliteRunStore) -> None:
    """6 failures, 4 of which call `drop_table`; 6 wins, 5 of which call `lookup`; `search`
    everywhere."""
    put(store, [session(f"f{k}", thumb=-1,
                        tools=["search", *(["drop_table"] if k < 4 else [])],
                        errors=["drop_table"] if k == 0 else [])
                for k in range(6)]
        + [session(f"w{k}", thumb=1, tools=["search", *(["lookup"] if k < 5 else [])])
           for k in range(6)])


def test_the_statistical_distiller_finds_a_planted_tool(store: SqliteRunStore) -> None:
    planted(store)
    out = propose(store, model=None, scope=None, seed=0)
    texts = [p.text for p in out.proposals]
    assert texts == [
        "Call the tool `lookup` before answering: it was seen in 5 of 6 successful sessions "
        "and 0 of 6 failed ones.",
        "Do not call the tool `drop_table`: it was seen in 4 of 6 failed sessions and 0 of 6 "
        "successful ones."]
    [g] = out.groups
    assert all(p.distiller == "statistical" and p.group == g.group_id and p.edit is None
               and p.scope == "refunds" and set(p.sources) == set(g.trace_ids)
               for p in out.proposals)
    assert (out.tokens_in, out.tokens_out, out.errors) == (0, 0, [])
    assert propose(store, model=None, scope=None, seed=0) == out
    assert all(instruction_problem(t) is None for t in texts)


def test_the_same_rule_from_two_groups_is_one_proposal_with_both_sources(
        store: SqliteRunStore) -> None:
    put(store, [session(f"f{k}", thumb=-1, user=f"{'refund' if k % 2 else 'reset'} {k}",
                        tools=["drop_table"]) for k in range(8)]
        + [session(f"w{k}", thumb=1, user=f"{'refund' if k % 2 else 'reset'} {k}")
           for k in range(8)])
    out = propose(store, model=None, scope=None, seed=0, limits=Limits(max_group=8))
    assert len(out.groups) == 2
    [p] = out.proposals
    assert p.text.startswith("Do not call the tool `drop_table`")
    assert set(p.sources) == {i for g in out.groups for i in g.trace_ids}


def test_a_tool_that_errs_in_failures_only(store: SqliteRunStore) -> None:
    put(store, [session(f"f{k}", thumb=-1, tools=["refund"], errors=["refund"])
                for k in range(3)]
        + [session(f"w{k}", thumb=1, tools=["refund"]) for k in range(3)])
    [p] = propose(store, model=None, scope=None, seed=0).proposals
    assert p.text == ("Check the arguments of the tool `refund` before calling it: its calls "
                      "returned an error in 3 of 3 failed sessions and 0 of 3 successful ones.")


def test_the_statistical_distiller_proposes_nothing_on_noise(store: SqliteRunStore) -> None:
    tools = ["a", "b", "c", "d"]
    put(store, [session(f"f{k}", thumb=-1, tools=[tools[k % 4], tools[(k + 1) % 4]],
                        errors=[tools[k % 4]] if k % 2 else [])
                for k in range(6)]
        + [session(f"w{k}", thumb=1, tools=[tools[k % 4], tools[(k + 1) % 4]],
                   errors=[tools[k % 4]] if k % 2 else [])
           for k in range(6)])
    out = propose(store, model=None, scope=None, seed=0)
    assert len(out.groups) == 1 and out.proposals == []


def test_operators_and_parameters_of_our_own_runs(store: SqliteRunStore) -> None:
    run = make_run()
    store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest, {}))
    store.create_run(run)
    bad = dict(status=NodeStatus.ERROR, valid=False, plan="scale the step factor=10")
    store.add_nodes([make_node(run.run_id, 0, None)]
                    + [make_node(run.run_id, k, 0, **bad) for k in (1, 2, 3)]
                    + [make_node(run.run_id, k, 0, plan=f"shift it by={k}") for k in (4, 5, 6)])
    for i in import_run(store, run.run_id):
        judge(store, i.record.trace_id, "accepted")
    texts = [p.text for p in propose(store, model=None, scope=TASK.name, seed=0).proposals]
    assert texts == [
        "Avoid the operator `scale`: it was seen in 3 of 3 failed sessions and 0 of 3 "
        "successful ones.",
        "Prefer the operator `shift`: it was seen in 3 of 3 successful sessions and 0 of 3 "
        "failed ones.",
        "Avoid the setting `factor=10`: it was seen in 3 of 3 failed sessions and 0 of 3 "
        "successful ones."]


def test_fisher_tail() -> None:
    assert fisher_tail(4, 5, 4, 11) == pytest.approx(5 / 330)
    assert fisher_tail(0, 5, 4, 11) == pytest.approx(1.0)


# -- the model distiller -------------------------------------------------------------------

GOOD = {"proposals": [
    {"rule": "Always confirm the order number before refunding.",
     "edit": {"path": "prompts/system.md", "old": "",
              "new": "Always confirm the order number before refunding.\n"}},
    {"rule": "When a refund fails, tell the user and stop.", "edit": None}]}


class Scripted:
    """One loopback server for the module (stopping one takes half a second): each test
    sets the replies it serves, in order, the last one repeating."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.server = FakeOpenAI(responder=self.next)

    def next(self, seen: object) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def __call__(self, *replies: Reply) -> ModelClient:
        """Serve ``replies``; a client of the server."""
        self.replies = list(replies)
        self.server.requests.clear()
        settings = LlmSettings(models=(ModelChoice("fake-small"),),
                               base_url=self.server.base_url, call_timeout_s=5.0,
                               max_retries=0)
        return ModelClient(settings, environ={})


@pytest.fixture(scope="module")
def serve() -> Iterator[Scripted]:
    scripted = Scripted()
    with scripted.server:
        yield scripted


def two_sides(store: SqliteRunStore) -> None:
    put(store, [session("f1", user="Refund order 7 please", tools=["refund"],
                        errors=["refund"], thumb=-1),
                session("f2", user="Refund order 8 please", tools=["refund"], thumb=-1),
                session("w1", user="Refund order 9 please", tools=["lookup", "refund"],
                        thumb=1)])


def test_well_formed_rules_go_through_and_the_prompt_shows_both_sides(
        store: SqliteRunStore, serve: Scripted) -> None:
    two_sides(store)
    model = serve(Reply.text("```json\n" + json.dumps(GOOD) + "\n```", 321, 45))
    out = propose(store, model=model, scope="refunds", seed=3, allowed=("prompts/",),
                  files={"prompts/system.md": "You are a support agent.\n" + "y" * 20_000})
    [chat] = serve.server.chats
    [g] = out.groups
    assert [(p.text, p.edit) for p in out.proposals] == [
        (GOOD["proposals"][0]["rule"],
         ConfigEdit("prompts/system.md", "", "Always confirm the order number before "
                    "refunding.\n")),
        ("When a refund fails, tell the user and stop.", None)]
    assert all(p.distiller == "model:fake-small" and p.group == g.group_id
               and p.scope == "refunds" and set(p.sources) == set(g.trace_ids)
               for p in out.proposals)
    assert (out.tokens_in, out.tokens_out, out.errors, out.dropped) == (321, 45, [], [])
    system, user = (m["content"] for m in chat.body["messages"])  # type: ignore[index]
    assert '{"proposals"' in system and "never a summary" in system
    config, sessions = user.split("=== FAILED SESSIONS")
    assert "Files an edit may touch: prompts/" in config
    assert "--- prompts/system.md ---\nYou are a support agent." in config
    assert len(config) < 12_500 and "more]" in config
    failed, won = sessions.split("=== SUCCESSFUL SESSIONS (1) ===")
    assert failed.startswith(" (2) ===") and failed.count("(FAILED;") == 2
    assert "Refund order 7 please" in failed and "Refund order 8 please" in failed
    assert "call refund" in failed and "ERROR -> boom" in failed
    assert "thumbs-down: wrong order refunded" in failed
    assert "Refund order 9 please" in won and "call lookup" in won and "(SUCCEEDED;" in won


def test_a_rendered_prompt_is_bounded(
        store: SqliteRunStore, serve: Scripted) -> None:
    put(store, [session(f"f{k}", user="Refund " + "x" * 50_000, tools=["t"] * 300, thumb=-1)
                for k in range(3)] + [session("w", thumb=1)])
    out = propose(store, model=serve(Reply.text('{"proposals": []}')), scope=None, seed=0,
                  limits=Limits(trace_chars=2_000, prompt_chars=5_000))
    [chat] = serve.server.chats
    user = chat.body["messages"][1]["content"]  # type: ignore[index]
    assert len(user) < 4 * 2_000 + 500 and "characters left out" in user
    assert out.proposals == [] and out.errors == []


HOSTILE = {
    "not JSON": ("Sure! Here are my thoughts.", "the answer is not JSON"),
    "a list": ("[1, 2]", "a JSON list, not an object"),
    "wrong key": ('{"rules": []}', 'not {"proposals": [...]}'),
    "extra key": ('{"proposals": [], "note": "hi"}', 'not {"proposals": [...]}'),
    "proposals a string": ('{"proposals": "x"}', 'not {"proposals": [...]}'),
    "deep nesting": ("[" * 100_000 + "]" * 100_000, "the answer is not JSON"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_unreadable_answer_is_an_error_naming_the_group(
        store: SqliteRunStore, serve: Scripted, name: str) -> None:
    answer, said = HOSTILE[name]
    two_sides(store)
    out = propose(store, model=serve(Reply.text(answer)), scope=None, seed=0)
    [g] = out.groups
    assert out.proposals == [] and len(out.errors) == 1
    assert out.errors[0].startswith(f"group {g.group_id} (refunds): ") and said in out.errors[0]


def test_a_huge_answer_is_an_error_and_a_long_list_is_cut(
        store: SqliteRunStore, serve: Scripted) -> None:
    two_sides(store)
    out = propose(store, model=serve(Reply.text("{" + " " * 300_000 + "}")), scope=None, seed=0)
    assert out.proposals == [] and "more than the 262144 accepted" in out.errors[0]
    many = {"proposals": [{"rule": f"Always check item {k}.", "edit": None}
                          for k in range(5_000)]}
    out = propose(store, model=serve(Reply.text(json.dumps(many))), scope=None, seed=0)
    assert [p.text for p in out.proposals] == [f"Always check item {k}." for k in range(5)]
    assert out.dropped[0].endswith("4995 proposals past the first 5 dropped")


def item(rule: str, path: str | None = None) -> str:
    edit = None if path is None else {"path": path, "old": "", "new": "x"}
    return json.dumps({"proposals": [{"rule": rule, "edit": edit}]})


RULE = "Always confirm the order number."
DROPPED = {
    "a number for a rule": (json.dumps({"proposals": [{"rule": 5}]}), "not a non-empty"),
    "a string for a proposal": (json.dumps({"proposals": ["Always x"]}), "is a str"),
    "an unknown key": (json.dumps({"proposals": [{"rule": RULE, "why": "x"}]}),
                       "unknown keys why"),
    "an overlong rule": (item("Always " + "check " * 400), "more than 2000"),
    "a control character": (item("Always confirm\x00 the order."), "control or format"),
    "a summary": (item("The agent failed because it never confirmed the order."),
                  "reads as a summary"),
    "a past-tense summary": (item("Failed sessions skipped the lookup."), "reads as a summary"),
    "a conditional summary": (item("When refunds failed, the agent skipped the lookup."),
                              "reads as a summary"),
}


@pytest.mark.parametrize("name", sorted(DROPPED))
def test_a_bad_proposal_is_dropped_with_its_reason(
        store: SqliteRunStore, serve: Scripted, name: str) -> None:
    answer, said = DROPPED[name]
    two_sides(store)
    out = propose(store, model=serve(Reply.text(answer)), scope=None, seed=0)
    [g] = out.groups
    assert out.proposals == [] and out.errors == []
    [line] = out.dropped
    assert line.startswith(f"group {g.group_id} (refunds): proposal 1 dropped") and said in line


BAD_PATHS = {"../x": "not a relative path inside", ".git/config": "names git's own files",
             "/etc/passwd": "not a relative path inside", "~/.bashrc": "not a relative path",
             "skills/../../x": "not a relative path inside", "secrets/key": "outside the files",
             "prompts/.gitattributes": "names git's own files", "prompts/": "names no file",
             "prompts/a\x00b": "names no file", "prompts/\u202ex.md": "names no file"}


@pytest.mark.parametrize("path", sorted(BAD_PATHS))
def test_an_edit_outside_the_allowed_files_is_dropped_and_its_rule_kept(
        store: SqliteRunStore, serve: Scripted, path: str) -> None:
    two_sides(store)
    out = propose(store, model=serve(Reply.text(item(RULE, path))), scope=None, seed=0,
                  allowed=("prompts/", "skills/"))
    [p] = out.proposals
    assert p.text == RULE and p.edit is None and out.errors == []
    [line] = out.dropped
    assert "its edit dropped" in line and BAD_PATHS[path] in line


@pytest.mark.parametrize(("edit", "said"), [
    ({"path": "prompts/a", "old": "same", "new": "same"}, "changes nothing"),
    ({"path": "prompts/a", "new": "x"}, "exactly the keys path, old, new"),
    ({"path": "prompts/a", "old": "", "new": 5}, "must be strings"),
    ({"path": "prompts/a", "old": "", "new": "x" * 20_001}, "longer than 20000"),
    ("prompts/a", "is a str, not an object")])
def test_a_malformed_edit_is_dropped_and_its_rule_kept(
        store: SqliteRunStore, serve: Scripted, edit: object, said: str) -> None:
    two_sides(store)
    answer = json.dumps({"proposals": [{"rule": RULE, "edit": edit}]})
    out = propose(store, model=serve(Reply.text(answer)), scope=None, seed=0)
    [p] = out.proposals
    assert p.edit is None and said in out.dropped[0] and out.errors == []


def test_without_allowed_paths_any_file_inside_the_repository(
        store: SqliteRunStore, serve: Scripted) -> None:
    two_sides(store)
    model = serve(Reply.text(item(RULE, "notes/./rules.md")))
    [p] = propose(store, model=model, scope=None, seed=0).proposals
    assert p.edit == ConfigEdit("notes/rules.md", "", "x")
    out = propose(store, model=serve(Reply.text(item(RULE, "."))), scope=None, seed=0)
    assert out.proposals[0].edit is None and "names no file" in out.dropped[0]


def test_a_failed_endpoint_stops_the_night_without_raising(
        store: SqliteRunStore, serve: Scripted) -> None:
    put(store, [session("f", thumb=-1), session("w", thumb=1),
                session("g", task="billing", thumb=-1), session("v", task="billing", thumb=1)])
    out = propose(store, model=serve(Reply.error(500)), scope=None, seed=0)
    assert len(serve.server.chats) == 1
    assert len(out.groups) == 2 and out.proposals == []
    assert "the model call failed" in out.errors[0] and "HTTP 500" in out.errors[0]
    assert out.errors[1] == "1 groups not asked: the endpoint failed"
    model = serve(Reply.raw("<html>not a completion</html>"), Reply.text(json.dumps(GOOD)))
    out = propose(store, model=model, scope=None, seed=0)
    assert len(out.errors) == 1 and len(out.proposals) == 2  # the next group is still asked


@pytest.mark.parametrize("text", [
    "Always confirm the order.", "Never call `drop_table`.", "Do not guess order numbers.",
    "Confirm the order number first.", "When a refund fails, tell the user.",
    "Before answering call lookup", "Use the lookup tool to find the order."])
def test_rules_that_read_as_instructions(text: str) -> None:
    assert instruction_problem(text) is None


@pytest.mark.parametrize("text", [
    "The agent failed because it guessed.", "In the failed sessions, the agent guessed.",
    "Overall, the successful sessions looked up the order.", "Agents guessed order numbers.",
    "Guessing order numbers led to failure.", "It never confirmed.", "", "..."])
def test_summaries_do_not(text: str) -> None:
    assert instruction_problem(text) is not None
