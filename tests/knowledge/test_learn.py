"""`dreamrsi learn` over nights, on a real git config repository, the real sandbox and the
rule-obeying model: the missing rule becomes a branch (the user's checkout untouched) on which
the agent passes what it failed; merged, it becomes ACTIVE; a model change re-validates it by
ablation; a dry run records nothing; the CLI gates a file of proposals."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from typer.testing import CliRunner

from dreamrsi.agents.client import ModelClient
from dreamrsi.cli.main import app
from dreamrsi.knowledge import lifecycle
from dreamrsi.knowledge.check import check_goldens
from dreamrsi.knowledge.config_repo import load_config
from dreamrsi.knowledge.configs import configs
from dreamrsi.knowledge.goldens import list_goldens
from dreamrsi.knowledge.learn import learn
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.runner import run_agent
from dreamrsi.knowledge.traces import import_files, judge
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice
from dreamrsi.testing.knowledge_agent import ISO_RULE, make_config_repo
from tests.knowledge.learning import checkout_state, git, goldens_store, rule, rule_model

DAY = datetime.date(2026, 12, 5)
BRANCH = "dreamrsi/learn-20261205-1"
TRAIN_ONLY = "Write the dates of the launch and the audit as YYYY-MM-DD."


def _set_model(repo: Path, old: str, new: str) -> None:
    toml = repo / "dreamrsi.toml"
    toml.write_text(toml.read_text().replace(f'model = "{old}"', f'model = "{new}"'))
    git(repo, "commit", "-qam", f"config: the agent's model is {new}")


def test_nights_of_learning(tmp_path: Path) -> None:
    with rule_model() as model, goldens_store(tmp_path / "store") as store:
        repo = make_config_repo(tmp_path / "repo", base_url=model.base_url)
        (repo / "prompts" / "system.md").write_text("a person's unsaved edit\n")
        (repo / "notes.txt").write_text("untracked\n")
        before = checkout_state(repo)
        first = learn(store, repo, proposals=[rule(TRAIN_ONLY), rule(ISO_RULE)], today=DAY)
        assert checkout_state(repo) == before
        data = first.as_dict()
        assert (data["accepted"], data["rejected"], data["pool_size"]) == (1, {"no_gain": 1}, 1)
        assert (data["baseline"]["heldout_pass_rate"], data["final"]["heldout_pass_rate"]) == (
            0.0, 1.0)
        assert first.branch == BRANCH
        assert git(repo, "show", f"{BRANCH}:LESSONS.md") == f"- {ISO_RULE}\n"
        log = git(repo, "log", "--format=%B%x00", f"main..{BRANCH}").split("\0")
        assert "Held-out objective 0 -> 1" in log[0] and "[no_gain]" in log[0]
        assert log[1].strip().startswith("learn: Write every date")
        assert "Sources: t-one, t-two" in log[1]

        # on the branch the agent passes the cases it failed
        branch = tmp_path / "branch"
        git(tmp_path, "clone", "-q", "-b", BRANCH, str(repo), str(branch))
        goldens = list_goldens(store)
        after = check_goldens(goldens, run_agent(load_config(branch), branch, goldens).outputs)
        assert all(r.passed for r in after.results)
        lesson = first.gate.decisions[1].lesson_id
        assert lifecycle.state_of(store, "lesson", lesson) == State.VALIDATED
        assert lifecycle.state_of(store, "config", BRANCH) == State.VALIDATED
        made = lifecycle.history(store, "config", BRANCH)[-1]
        assert made.reason == "its 1 lessons passed the gate"
        assert configs(store)[BRANCH]["detail"] == {
            "branch": BRANCH, "patch": None, "head": first.head, "night": 0,
            "lessons": [lesson]}

        # the person merges it: the next night makes it ACTIVE, and nothing new passes
        git(repo, "checkout", "-q", "--", "prompts/system.md")
        git(repo, "merge", "-q", "--ff-only", BRANCH)
        second = learn(store, repo, proposals=[rule(ISO_RULE)], today=DAY)
        assert second.activated == (lesson,) and second.branch is None
        assert second.gate.decisions[0].rejection == "duplicate"
        assert lifecycle.state_of(store, "lesson", lesson) == State.ACTIVE
        assert lifecycle.state_of(store, "config", BRANCH) == State.ACTIVE
        assert second.configs == (f"config {BRANCH} ACTIVE: the config repository's HEAD "
                                  f"{second.head[:12]} carries its lessons",)

        # a model change re-validates it by ablation: kept while it still earns its place...
        _set_model(repo, "fake-small", "fake-same")
        third = learn(store, repo, proposals=[], today=DAY)
        assert [(r.lesson_id, r.state) for r in third.revalidated] == [(lesson, "VALIDATED")]
        # ... archived once the model writes ISO dates without being told
        _set_model(repo, "fake-same", "fake-large")
        fourth = learn(store, repo, proposals=[], today=DAY)
        assert fourth.activated == (lesson,)
        assert [(r.lesson_id, r.state) for r in fourth.revalidated] == [(lesson, "ARCHIVED")]
        assert "remove its row from the lessons file" in fourth.summary
        assert [s.after for s in lifecycle.history(store, "lesson", lesson)][-3:] == [
            State.ACTIVE, State.STALE, State.ARCHIVED]
        nights = store.knowledge_events(kind_prefix="learn.run")
        assert [e.payload["night"] for e in nights] == [0, 1, 2, 3]
        assert [e.payload["model"] for e in nights][-1] == "fake-large"


def _trace(path: Path, question: str, answer: str, feedback: str, passed: bool) -> Path:
    records = [{"type": "meta", "session_id": path.stem, "task": "dates"},
               {"role": "user", "content": question}, {"role": "assistant", "content": answer},
               {"type": "feedback", "step": 1, "score": float(passed), "passed": passed,
                "name": "exact", "text": feedback}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_traces_of_failures_in_the_rule_out(tmp_path: Path) -> None:
    with rule_model() as model, goldens_store(tmp_path / "store") as store:
        repo = make_config_repo(tmp_path / "repo", base_url=model.base_url)
        files = [_trace(tmp_path / "launch.jsonl", "date of the launch?", "03/04/2025",
                        "expected '2025-04-03', got '03/04/2025'", False),
                 _trace(tmp_path / "audit.jsonl", "date of the audit?", "12/11/2024",
                        "expected '2024-11-12', got '12/11/2024'", False),
                 _trace(tmp_path / "capital.jsonl", "capital of France?", "Paris",
                        "the output is the expected answer", True)]
        for imported in import_files(store, files):
            judge(store, imported.record.trace_id, "accepted")
        client = ModelClient(LlmSettings(models=(ModelChoice("fake-small"),),
                                         base_url=model.base_url, max_retries=0),
                             environ={})
        report = learn(store, repo, model=client, today=DAY)
        client.close()
        data = report.as_dict()
        assert (data["proposals"], data["accepted"], data["branch"]) == (1, 1, BRANCH)
        assert data["tokens_in"] > 0 and data["distill_errors"] == []
        assert report.gate.decisions[0].proposal.distiller == "model:fake-small"
        assert git(repo, "show", f"{BRANCH}:LESSONS.md") == f"- {ISO_RULE}\n"


def test_a_dry_run_records_nothing_and_a_patch_applies(tmp_path: Path) -> None:
    with rule_model() as model, goldens_store(tmp_path / "store") as store:
        repo = make_config_repo(tmp_path / "repo", base_url=model.base_url)
        events, refs = store.knowledge_events(), git(repo, "for-each-ref")
        patch = tmp_path / "out.patch"
        report = learn(store, repo, proposals=[rule(ISO_RULE)], dry_run=True, patch=patch)
        assert report.as_dict()["accepted"] == 1 and report.dry_run
        assert store.knowledge_events() == events and git(repo, "for-each-ref") == refs
        assert "Held-out objective 0 -> 1" in (tmp_path / "out.patch.summary.md").read_text()
        git(repo, "am", "-q", str(patch))
        assert (repo / "LESSONS.md").read_text() == f"- {ISO_RULE}\n"


def test_the_cli_gates_a_file_of_proposals(tmp_path: Path) -> None:
    runner = CliRunner()
    with rule_model() as model:
        goldens_store(tmp_path / "store").close()
        repo = make_config_repo(tmp_path / "repo", base_url=model.base_url)
        given = tmp_path / "proposals.jsonl"
        given.write_text(json.dumps(rule(ISO_RULE).as_dict()) + "\n")
        args = ["learn", "--config", str(repo), "--store", str(tmp_path / "store"),
                "--proposals", str(given)]
        out = runner.invoke(app, [*args, "--json"])
        assert out.exit_code == 0, out.output
        data = json.loads(out.stdout)
        assert (data["accepted"], data["branch"]) == (1, data["branch"])
        assert data["branch"].startswith("dreamrsi/learn-")
        text = runner.invoke(app, args)
        assert text.exit_code == 0 and "rejected duplicate" in text.stdout
        assert "held-out pass rate 0% -> 0%" in text.stdout  # night 1: the rule is not in HEAD
        (repo / "dreamrsi.toml").write_text('[agent]\ncommand = "x"\ncolour = 1\n')
        git(repo, "commit", "-qam", "a bad config")
        bad = runner.invoke(app, args)
        assert bad.exit_code == 1 and "dreamrsi.toml" in bad.output and "agent" in bad.output
