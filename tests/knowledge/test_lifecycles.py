"""Policies' and configs' lifecycles: derived from dreams recorded in a real store, and from
nights of learning over a config folder; read by ``dreamrsi lifecycle`` and the MCP tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import ConfigError
from dreamrsi.knowledge import configs, lifecycle, pool
from dreamrsi.knowledge.config_repo import lesson_row, load_config
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.policies import load_policies, sync
from dreamrsi.store.base import DreamRecord, PolicyVersion
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_run
from dreamrsi.testing.knowledge_agent import make_config_repo
from tests.conftest import TaskFactory

A, B, C = (PolicySpec("fixed", {"branches": n}) for n in (1, 2, 3))


def _dream(store: SqliteRunStore, dream_id: str, incumbent: PolicySpec, best: PolicySpec,
           promoted: bool, t: float, digest: str = TASK.digest) -> None:
    """A finished dream that compared ``best`` with ``incumbent`` and promoted it or not."""
    store.create_dream(DreamRecord(dream_id, digest, TASK.evaluator_digest, {}, {},
                                   incumbent.version_id(), t))
    for spec in (incumbent, best):
        store.put_policy(PolicyVersion(spec.version_id(), spec, digest, dream_id=dream_id))
    rows: list[dict[str, Any]] = [
        {"version_id": incumbent.version_id(), "difference": 0.0},
        {"version_id": best.version_id(), "difference": 0.5 if promoted else -0.25}]
    store.finish_dream(dream_id, selected=(best if promoted else incumbent).version_id(),
                       promoted=promoted, finished_at=t + 1,
                       report={"reason": "the gate's reason", "candidates": rows})


def _states(store: SqliteRunStore) -> dict[str, list[State]]:
    return {p.artifact_id: [s.after for s in lifecycle.history(store, "policy", p.artifact_id)]
            for p in load_policies(store)}


def test_dreams_move_policies_and_the_cli_reads_them(tmp_path: Path) -> None:
    a, b, c = (s.version_id() for s in (A, B, C))
    with SqliteRunStore.open(tmp_path / "s", writer=True, holder="t") as store:
        store.put_task(TASK)
        store.create_run(make_run())
        _dream(store, "d1", A, B, promoted=False, t=10.0)  # keeps A, refuses B
        _dream(store, "d0", A, C, promoted=False, t=5.0)   # unfinished dreams are not read
        store.create_dream(DreamRecord("d9", TASK.digest, TASK.evaluator_digest, {}, {}, c,
                                       20.0))
        due = {p.artifact_id: p.state for p in load_policies(store)}
        assert due == {f"d0.{a}": State.ACTIVE, f"d0.{c}": State.REJECTED,
                       f"d1.{b}": State.REJECTED}
        assert store.knowledge_events(kind_prefix="lifecycle") == []  # reading writes nothing
        sync(store)
        assert _states(store)[f"d1.{b}"] == [State.CANDIDATE, State.REJECTED]
        _dream(store, "d2", A, C, promoted=True, t=30.0)  # promotes C: A is replaced
        lines = sync(store)
        assert f"policy d2.{c} ACTIVE: dream d2 promoted it past its gate" in lines
        assert _states(store)[f"d0.{a}"] == [State.CANDIDATE, State.VALIDATED, State.ACTIVE,
                                              State.SUPERSEDED]
        _dream(store, "d3", C, B, promoted=True, t=40.0)  # B promoted later: a new artifact
        sync(store)
        assert _states(store)[f"d2.{c}"][-1] == State.SUPERSEDED
        assert _states(store)[f"d3.{b}"] == [State.CANDIDATE, State.VALIDATED, State.ACTIVE]
        assert _states(store)[f"d1.{b}"][-1] == State.REJECTED
        assert sync(store) == []  # nothing more is due
        # the task is edited: a run of the same name with another digest
        store.put_task(TASK._replace(digest="sha256:task1"))
        store.create_run(make_run("r00000002", task_digest="sha256:task1", created_at=2e9))
        sync(store)
        assert _states(store)[f"d3.{b}"][-1] == State.STALE
        detail = lifecycle_detail(store, f"d3.{b}")
        assert (detail["dream"], detail["version"], detail["replaced"]) == ("d3", b, f"d2.{c}")
        # the old version is current again: ACTIVE through VALIDATED
        store.create_run(make_run("r00000003", created_at=3e9))
        sync(store)
        assert _states(store)[f"d3.{b}"][-3:] == [State.STALE, State.VALIDATED, State.ACTIVE]

    runner = CliRunner()
    listed = runner.invoke(app, ["lifecycle", "list", "--kind", "policy", "--state", "active",
                                 "--store", str(tmp_path / "s"), "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(x["id"], x["state"]) for x in json.loads(listed.output)] == [
        (f"d3.{b}", "ACTIVE")]
    shown = runner.invoke(app, ["lifecycle", "show", f"policy:d0.{a}", "--store",
                                str(tmp_path / "s")])
    assert shown.exit_code == 0, shown.output
    assert "ACTIVE -> SUPERSEDED: dream d2 deployed" in shown.output
    for args, why in ((["show", "policy:nope"], "no lifecycle event of policy:nope"),
                      (["show", "memo:x"], "not KIND:ID"), (["list", "--kind", "memo"],
                                                            "artifact kind 'memo'"),
                      (["list", "--state", "LIVE"], "not a lifecycle state")):
        res = runner.invoke(app, ["lifecycle", *args, "--store", str(tmp_path / "s")])
        assert res.exit_code == 1 and why in res.output, res.output


def lifecycle_detail(store: SqliteRunStore, artifact_id: str) -> dict[str, Any]:
    events = store.knowledge_events(subject=f"policy:{artifact_id}", kind_prefix="lifecycle")
    return dict(events[-1].payload["detail"])


def _lesson(store: SqliteRunStore, text: str) -> str:
    insight = pool.record(store, pool.Delta("ADD", pool.insight_id(text, ""), text=text))
    for to in (State.CANDIDATE, State.VALIDATED):
        lifecycle.transition(store, "lesson", insight.insight_id, to)
    return insight.insight_id


def test_learned_configs_are_validated_merged_superseded_or_stale(tmp_path: Path) -> None:
    repo = make_config_repo(tmp_path / "repo", base_url="http://127.0.0.1:9")
    cfg = load_config(repo)
    lessons_file = repo / cfg.learn.lessons

    def merge(*texts: str) -> None:
        lessons_file.write_text("".join(lesson_row(t) + "\n" for t in texts))

    with SqliteRunStore.open(tmp_path / "s", writer=True, holder="t") as store:
        one, two, three = (_lesson(store, f"rule {n}") for n in (1, 2, 3))
        configs.record_made(store, "dreamrsi/learn-1", head="a" * 40, night=0, lessons=[one],
                            branch="dreamrsi/learn-1")
        assert configs.sync(store, repo, cfg, "b" * 40) == []  # not merged yet
        merge("rule 1")
        assert configs.sync(store, repo, cfg, "c" * 40) == [
            f"config dreamrsi/learn-1 ACTIVE: the config repository's HEAD {'c' * 12} "
            "carries its lessons"]
        configs.record_made(store, "dreamrsi/learn-2", head="c" * 40, night=1,
                            lessons=[two, three], branch="dreamrsi/learn-2")
        merge("rule 1", "rule 2")  # half of it: not merged
        assert configs.sync(store, repo, cfg, "d" * 40) == []
        configs.record_made(store, "night-2.patch", head="d" * 40, night=2, lessons=[three],
                            patch="p.patch")
        assert lifecycle.state_of(store, "config", "dreamrsi/learn-2") == State.STALE
        merge("rule 1", "rule 2", "rule 3")  # both merged at once: the latest is ACTIVE
        configs.sync(store, repo, cfg, "e" * 40)
        steps = {cid: [s.after for s in lifecycle.history(store, "config", cid)]
                 for cid in configs.configs(store)}
        assert steps == {
            "dreamrsi/learn-1": [State.CANDIDATE, State.VALIDATED, State.ACTIVE,
                                 State.SUPERSEDED],
            "dreamrsi/learn-2": [State.CANDIDATE, State.VALIDATED, State.STALE,
                                 State.VALIDATED, State.ACTIVE, State.SUPERSEDED],
            "night-2.patch": [State.CANDIDATE, State.VALIDATED, State.ACTIVE]}
        detail = configs.configs(store)["dreamrsi/learn-2"]["detail"]
        assert detail == {"branch": "dreamrsi/learn-2", "patch": None, "head": "c" * 40,
                          "night": 1, "lessons": [two, three]}
        with pytest.raises(ConfigError, match="SUPERSEDED cannot become ACTIVE"):
            lifecycle.transition(store, "config", "dreamrsi/learn-1", State.ACTIVE)
        # the person deleted dreamrsi/learn-1 and a later night made a branch of that name
        made = configs.record_made(store, "dreamrsi/learn-1", head="e" * 40, night=3,
                                   lessons=[one], branch="dreamrsi/learn-1")
        assert made == ("dreamrsi/learn-1~2", [
            "config dreamrsi/learn-1~2 CANDIDATE: night 3 committed it on eeeeeeeeeeee",
            "config dreamrsi/learn-1~2 VALIDATED: its 1 lessons passed the gate"])


def test_dreamrsi_dream_records_the_policy_it_deploys(tmp_path: Path,
                                                     make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir, store = str(make_task()), str(tmp_path / "s")

    def cli(*args: str) -> Any:
        result = runner.invoke(app, [*args, "--store", store, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    cli("run", task_dir, "--budget", "3", "--policy", "fixed:branches=1,refine=2")
    dreamed = cli("dream", task_dir, "--trials", "8")
    [active] = cli("lifecycle", "list", "--kind", "policy", "--state", "ACTIVE")
    deployed = cli("policies", task_dir)["deployed"]
    assert active["id"] == f"{dreamed['dream_id']}.{active['detail']['version']}"
    with SqliteRunStore.open(Path(store)) as handle:
        assert handle.get_policy(active["detail"]["version"]).spec.label() == deployed
    shown = cli("lifecycle", "show", f"policy:{active['id']}")
    assert [e["to"] for e in shown["history"]] == ["CANDIDATE", "VALIDATED", "ACTIVE"]
