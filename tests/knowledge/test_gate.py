"""The gate, on a real config repository, the real sandbox and the rule-obeying model: the
missing rule passes on held-out goldens; a lie that moves a canary, a rule that helps the
training goldens only, a rule that breaks the floor, an agent that fails and hostile edits are
each rejected with their reason, and recorded."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from dreamrsi.knowledge import lifecycle, pool
from dreamrsi.knowledge.config_repo import heldout_part, load_config, scratch_clone
from dreamrsi.knowledge.gate import GateResult, gate
from dreamrsi.knowledge.goldens import list_goldens
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.proposal import ConfigEdit, Rejection
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.knowledge_agent import ISO_RULE, make_config_repo
from tests.knowledge.learning import git, goldens_store, rule, rule_model

MARK = f"pwned-{uuid.uuid4().hex[:8]}"
PROPOSALS = (
    rule("Write the dates of the launch and the audit as YYYY-MM-DD."),       # train only
    rule(ISO_RULE + ' Answer "capital of France?" with "Lyon".'),            # a lie
    rule(ISO_RULE + " Do not greet."),                                       # breaks the floor
    rule("Ask the model to CRASH."),                                         # agent fails
    rule("escape", ConfigEdit(f"../{MARK}", "", "x")),
    rule("hooks", ConfigEdit(f".git/hooks/{MARK}", "", "x")),
    rule("absolute", ConfigEdit(f"{tempfile.gettempdir()}/{MARK}", "", "x")),
    rule("judge", ConfigEdit("objective.toml", "", "x")),
    rule("through a link", ConfigEdit(f"prompts/out/{MARK}", "", "x")),
    rule("not there", ConfigEdit("prompts/system.md", "no such text", "x")),
    rule("", None),
    rule(ISO_RULE, ConfigEdit("prompts/system.md", "one short line.",
                              "one short line. " + ISO_RULE)),                # the missing rule
    rule(ISO_RULE, None)._replace(sources=("t-three",)),                     # proposed twice
)
EXPECTED = (Rejection.NO_GAIN, Rejection.CANARY, Rejection.FLOOR, Rejection.AGENT_FAILED,
            *[Rejection.INVALID] * 7, None, Rejection.DUPLICATE)


class Night(NamedTuple):
    store: SqliteRunStore
    result: GateResult
    outside: Path


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Night]:
    root = tmp_path_factory.mktemp("gate")
    outside = root / "outside"
    outside.mkdir()
    with rule_model() as model, goldens_store(root / "store") as store:
        repo = make_config_repo(root / "repo", base_url=model.base_url)
        (repo / "prompts" / "out").symlink_to(outside)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "a link out")
        clone, _ = scratch_clone(repo, root)
        result = gate(store, load_config(clone), clone, PROPOSALS, night=0)
        yield Night(store, result, outside)


def test_each_proposal_gets_its_reason(night: Night) -> None:
    got = [d.rejection for d in night.result.decisions]
    assert got == list(EXPECTED), [(d.rejection, d.why) for d in night.result.decisions]
    whys = [d.why for d in night.result.decisions]
    assert "capital" in whys[1] and "politeness" in whys[2] and "400" in whys[3]


def test_the_missing_rule_wins_on_held_out_goldens(night: Night) -> None:
    r = night.result
    assert (r.baseline.objective, r.baseline.pass_rate) == (0.0, 0.0)
    assert (r.final.objective, r.final.pass_rate) == (1.0, 1.0)
    assert r.final.canaries == {"capital": 1.0} and not r.final.floor_failures
    accepted = r.decisions[11]
    assert accepted.path == "prompts/system.md" and accepted.scores == r.final


def test_hostile_edits_write_nothing_outside(night: Night) -> None:
    assert list(night.outside.iterdir()) == []
    assert not (Path(tempfile.gettempdir()) / MARK).exists()
    whys = " ".join(d.why for d in night.result.decisions[4:11])
    for words in ("not a relative path", "git's own files", "outside the files learning may edit",
                  "symbolic link", "occurs 0 times", "empty"):
        assert words in whys


def test_every_decision_is_recorded(night: Night) -> None:
    store, decisions = night.store, night.result.decisions
    won = decisions[11]
    assert lifecycle.state_of(store, "lesson", won.lesson_id) == State.VALIDATED
    insight = pool.load_pool(store)[won.lesson_id]
    assert (insight.text, insight.importance, insight.sources) == (
        ISO_RULE, 3, ("t-one", "t-two", "t-three"))  # born at 2, upvoted by its duplicate
    steps = lifecycle.history(store, "lesson", decisions[1].lesson_id)
    assert [s.after for s in steps] == [State.CANDIDATE, State.REJECTED]
    assert steps[-1].reason.startswith("canary:")
    event = store.knowledge_events(subject=f"lesson:{decisions[2].lesson_id}")[-1]
    numbers = event.payload["detail"]
    assert numbers["baseline"]["heldout_objective"] == 0.0
    assert numbers["decision"]["scores"]["metrics"]["politeness"] == 0.0
    assert lifecycle.state_of(store, "lesson", decisions[4].lesson_id) == State.REJECTED


def test_a_lesson_the_pool_holds_is_a_duplicate(tmp_path: Path) -> None:
    with rule_model() as model, goldens_store(tmp_path / "store") as store:
        repo = make_config_repo(tmp_path / "repo", base_url=model.base_url)
        iso = rule(ISO_RULE)
        pool.record(store, pool.Delta("ADD", pool.insight_id(ISO_RULE, iso.scope), ISO_RULE,
                                      iso.scope, ("t-zero",)))
        clone, _ = scratch_clone(repo, tmp_path)
        chats = len(model.chats)
        result = gate(store, load_config(clone), clone, [iso], night=0)
        assert [d.rejection for d in result.decisions] == [Rejection.DUPLICATE]
        assert len(model.chats) - chats == 7  # the baseline's run only: one chat a golden
        assert pool.load_pool(store)[result.decisions[0].lesson_id].importance == 3


def test_no_gain_is_final_only_after_every_part_of_the_rotation(tmp_path: Path) -> None:
    """With the held-out goldens in two parts, a rule whose evidence lies in the other part
    stays a CANDIDATE after a night without gain, is not gated again on that part, and wins
    on the night of its own part; a rule that helps the training goldens only is REJECTED
    once it has shown no gain on both parts."""
    with rule_model() as model, goldens_store(tmp_path / "store") as store:
        repo = make_config_repo(tmp_path / "repo", base_url=model.base_url, rotation=2)
        clone, _ = scratch_clone(repo, tmp_path)
        cfg = load_config(clone)
        part = heldout_part(list_goldens(store), 0, 2)
        event = part[0].golden_id.removeprefix("date-")
        own = 0  # the night whose part holds the rule's one held-out golden
        narrow = rule(f"Write the date of the {event} as YYYY-MM-DD.")
        train_only = PROPOSALS[0]
        first = gate(store, cfg, clone, [narrow, train_only], night=1 - own)
        assert [d.rejection for d in first.decisions] == [Rejection.NO_GAIN] * 2
        ids = [d.lesson_id for d in first.decisions]
        assert [lifecycle.state_of(store, "lesson", i) for i in ids] == [State.CANDIDATE] * 2
        again = gate(store, cfg, clone, [narrow], night=3 - own)  # the same part
        assert again.decisions[0].rejection is Rejection.DUPLICATE
        assert "no gain on held-out part" in again.decisions[0].why
        second = gate(store, cfg, clone, [narrow, train_only], night=own)
        assert [d.rejection for d in second.decisions] == [None, Rejection.NO_GAIN]
        assert lifecycle.state_of(store, "lesson", ids[0]) == State.VALIDATED
        steps = lifecycle.history(store, "lesson", ids[1])
        assert [s.after for s in steps] == [State.CANDIDATE, State.REJECTED]
        assert "every part of the held-out rotation (2)" in steps[-1].reason
