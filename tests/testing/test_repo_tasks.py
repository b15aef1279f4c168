"""The repository task suite (dreamrsi.testing.repo_tasks): real git repositories, their
evaluators on the broken state and on the truth's fix, bisect, determinism, the scripted agents
and the engine baselines in the real sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.sandbox import Isolation, IsolationMode, Limits, run_command
from dreamrsi.testing import repo_baselines, repo_tasks
from dreamrsi.testing.repo_tasks import RepoTask

BROKEN = {"seeded-regression": 0.0, "dependency-migration": 1 / 6, "flaky-test": 20 / 30}


def verdict(task: RepoTask, checkout: Path) -> dict[str, Any]:
    done = subprocess.run(task.eval_cmd, shell=True, cwd=checkout, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result) == {"score", "valid", "feedback", "metrics"}
    return result


def clone(task: RepoTask, folder: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(task.repo), str(folder)], check=True)
    return folder


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RepoTask]:
    base = tmp_path_factory.mktemp("suite")
    return {name: build(base / name) for name, build in repo_tasks.SUITE.items()}


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tools")
    folder.chmod(0o755)
    return repo_baselines.install_agents(folder / "agents")


def agent_step(tools: Path, agent: str, cwd: Path, context: object, seed: int = 0,
               raw: str | None = None) -> list[tuple[str, str]]:
    """Run one agent step as a controller would; its directives as (kind, text)."""
    path = cwd.parent / f"{cwd.name}-context.json"
    path.write_text(raw if raw is not None else json.dumps(context))
    env = {**os.environ, "DREAM_CONTEXT": str(path), "DREAM_SEED": str(seed)}
    done = subprocess.run([sys.executable, str(tools / agent)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = []
    for line in done.stdout.splitlines():
        kind, _, text = line.partition(":")
        out.append((kind, text.strip()))
    return out


def brief(step: int, hypotheses: list[str], evidence: list[dict[str, Any]],
          kind: str = "primary", question: str = "") -> dict[str, Any]:
    return {"objective": "fix it", "constraints": [], "step": step,
            "hypotheses": [{"id": f"h{i}", "text": t, "status": "open"}
                           for i, t in enumerate(hypotheses)],
            "evidence": evidence, "dream": {"id": "d1", "kind": kind, "question": question},
            "last_eval": {"score": 0.0, "feedback": ""}}


# ------------------------------------------------------------------------------ the repositories

@pytest.mark.parametrize("name", list(repo_tasks.SUITE))
def test_eval_scores_the_broken_state_low_and_the_truths_fix_full(
        suite: dict[str, RepoTask], tmp_path: Path, name: str) -> None:
    task = suite[name]
    broken = verdict(task, task.repo)
    assert broken["valid"] is True
    if name == "performance-target":  # the original code against itself: about 1x
        assert broken["score"] < task.target / 2
    else:
        assert broken["score"] == pytest.approx(BROKEN[name])
    fixed = repo_tasks.copy_files(task, tmp_path / "fixed")
    repo_tasks.apply_fix(task, fixed)
    good = verdict(task, fixed)
    assert good["valid"] is True and good["score"] >= task.target, good
    assert subprocess.run(["git", "status", "--porcelain"], cwd=task.repo, capture_output=True,
                          text=True, check=True).stdout == ""  # the evaluator wrote nothing


def test_protected_paths_exist_and_the_repo_is_one_branch(suite: dict[str, RepoTask]) -> None:
    for task in suite.values():
        assert all((task.repo / p).exists() for p in task.protect), task.name
        assert repo_tasks.git(task.repo, "branch", "--show-current") == "main"


def test_a_wrong_fix_scores_as_wrong(suite: dict[str, RepoTask], tmp_path: Path) -> None:
    task = suite["performance-target"]
    wrong = repo_tasks.copy_files(task, tmp_path / "wrong")
    (wrong / "dedupe.py").write_text("def unique(items):\n    return sorted(set(items))\n")
    result = verdict(task, wrong)
    assert result["valid"] is False and result["score"] == 0.0
    assert "test_keeps_first_seen_order" in result["feedback"]
    migration = suite["dependency-migration"]  # on confparse 1.4 the app passes: v2 is the bar
    done = subprocess.run(["python3", "eval_migration.py", "v1"], cwd=migration.repo,
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1])["score"] == 1.0


@pytest.mark.parametrize(("code", "says"), [
    ("raise ImportError('half-written module')", "ImportError: half-written module"),
    ("import sys\ndef {fn}(*args):\n    sys.exit(0)", "SystemExit"),
    ("import os\nos._exit(0)", "the tests did not run"),
    ("import atexit\natexit.register(print, 'not json')\ndef {fn}(*args):\n    return []",
     "not JSON: not json"),
])
def test_a_hostile_candidate_gets_a_verdict_not_a_crash(
        suite: dict[str, RepoTask], tmp_path: Path, code: str, says: str) -> None:
    for name, module, fn in (("performance-target", "dedupe.py", "unique"),
                             ("flaky-test", "retry.py", "delay")):
        task = suite[name]
        work = repo_tasks.copy_files(task, tmp_path / name)
        (work / module).write_text(code.format(fn=fn) + "\n")
        result = verdict(task, work)
        assert result["score"] == 0.0 and says in result["feedback"], (name, result)


def test_git_bisect_run_with_the_check_finds_the_truths_commit(
        suite: dict[str, RepoTask], tmp_path: Path) -> None:
    task = suite["seeded-regression"]
    assert len(repo_tasks.git(task.repo, "rev-list", "HEAD").split()) == 40
    work = clone(task, tmp_path / "bisect")
    out = subprocess.run(f"git bisect start HEAD {task.truth['first_commit']} && "
                         "git bisect run python3 check.py", shell=True, cwd=work,
                         capture_output=True, text=True, timeout=300).stdout
    assert f"{task.truth['bad_commit']} is the first bad commit" in out
    parent = repo_tasks.git(task.repo, "rev-parse", f"{task.truth['bad_commit']}~1")
    assert subprocess.run(["git", "checkout", "-q", parent], cwd=work).returncode == 0
    assert subprocess.run(["python3", "check.py"], cwd=work).returncode == 0


def test_the_builders_are_deterministic_for_a_seed(tmp_path: Path) -> None:
    def heads(root: Path, seed: int) -> list[str]:
        tasks = [repo_tasks.seeded_regression(root / "r", seed=seed),
                 repo_tasks.performance_target(root / "p"),
                 repo_tasks.dependency_migration(root / "m"), repo_tasks.flaky_test(root / "f")]
        return [repo_tasks.git(t.repo, "rev-parse", "HEAD") for t in tasks]

    assert heads(tmp_path / "a", 3) == heads(tmp_path / "b", 3)
    bad = {repo_tasks.seeded_regression(tmp_path / f"s{seed}", seed=seed).truth["bad_index"]
           for seed in range(6)}
    assert len(bad) > 1 and all(10 <= b <= 30 for b in bad)  # the seed picks it, mid-history


def test_the_users_git_configuration_and_environment_change_no_commit_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = repo_tasks.seeded_regression(tmp_path / "plain", commits=8, bad_at=5)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Someone Else\n\temail = x@y.z\n"
                                     "[init]\n\tdefaultBranch = trunk\n"
                                     "[core]\n\tautocrlf = true\n[commit]\n\tgpgsign = true\n")
    for name, value in (("HOME", str(home)), ("TZ", "Asia/Tokyo"), ("LANG", "de_DE.UTF-8"),
                        ("GIT_AUTHOR_NAME", "Someone Else"), ("GIT_COMMITTER_DATE", "@0 +0000")):
        monkeypatch.setenv(name, value)
    other = repo_tasks.seeded_regression(tmp_path / "other", commits=8, bad_at=5)
    assert other.truth["head"] == plain.truth["head"]
    assert other.truth["bad_commit"] == plain.truth["bad_commit"]


def test_bad_arguments_are_clear_errors_and_touch_nothing(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not empty"):
        repo_tasks.flaky_test(busy)
    assert [p.name for p in busy.iterdir()] == ["mine.txt"]
    with pytest.raises(ValueError, match="not a folder"):
        repo_tasks.performance_target(busy / "mine.txt")
    assert (busy / "mine.txt").read_text() == "keep me"
    with pytest.raises(ValueError, match="bad_at=40"):
        repo_tasks.seeded_regression(tmp_path / "r", bad_at=40)
    with pytest.raises(ValueError, match="bad_at=0"):
        repo_tasks.seeded_regression(tmp_path / "r", bad_at=0)
    with pytest.raises(ValueError, match="at least 4"):
        repo_tasks.seeded_regression(tmp_path / "r", commits=3)
    small = repo_tasks.seeded_regression(tmp_path / "small", commits=60, bad_at=59)
    assert small.truth["bad_commit"] == small.truth["head"]


# ------------------------------------------------------------------------------ scripted agents

def test_regression_agent_states_a_wrong_hypothesis_then_bisects_and_fixes(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path) -> None:
    task = suite["seeded-regression"]
    work = clone(task, tmp_path / "dream")
    first = agent_step(tools, "regression_agent.py", work, brief(0, [], []))
    hypothesis = next(text for kind, text in first if kind == "HYPOTHESIS")
    assert "header" in hypothesis and ("RUN", "python3 check.py") in first
    second = agent_step(tools, "regression_agent.py", work, brief(1, [hypothesis], []))
    run = next(text for kind, text in second if kind == "RUN")
    assert "git bisect run python3 check.py" in run
    output = subprocess.run(run, shell=True, cwd=work, capture_output=True, text=True,
                            timeout=300)
    assert repo_tasks.git(work, "status", "--porcelain") == ""  # the bisect was reset
    row = {"id": "e7", "cmd": run, "exit": output.returncode, "parsed": None,
           "stdout": output.stdout}
    third = agent_step(tools, "regression_agent.py", work, brief(2, [hypothesis], [row]))
    answer = next(text for kind, text in third if kind == "ANSWER")
    assert task.truth["bad_commit"] in answer and ("DONE", "") in third
    assert verdict(task, work)["score"] == 1.0  # the bad hunk reverted on top of HEAD
    assert "SEPARATOR in text" in repo_tasks.git(work, "diff")


def test_a_regression_shadow_bisects_by_itself_and_only_answers(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path) -> None:
    task = suite["seeded-regression"]
    work = clone(task, tmp_path / "shadow")
    ask = brief(0, [], [], kind="shadow", question="which commit broke the quoting?")
    assert any(kind == "RUN" and "git bisect" in text
               for kind, text in agent_step(tools, "regression_agent.py", work, ask))
    ask["evidence"] = [{"id": "e1", "cmd": "git bisect start ...", "exit": 1, "parsed": None}]
    out = agent_step(tools, "regression_agent.py", work, ask)  # the bisect's output was lost
    assert any(kind == "ANSWER" and task.truth["bad_commit"] in text for kind, text in out)
    assert repo_tasks.git(work, "status", "--porcelain") == ""  # a shadow edits nothing


def test_a_shadow_bisects_inside_the_sandbox_as_its_own_user(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path, bwrap: str) -> None:
    """The agent as a controller runs it: bubblewrap required, no network, its working copy
    the only writable folder, the agents and the brief read-only."""
    task = suite["seeded-regression"]
    work = clone(task, tmp_path / "shadow")
    briefs = tmp_path / "briefs"
    briefs.mkdir()
    ask = brief(1, [], [{"id": "e1", "cmd": "git bisect start ...", "exit": 0}],
                kind="shadow", question="which commit broke the quoting?")
    (briefs / "brief.json").write_text(json.dumps(ask))
    for path in (tmp_path, briefs, briefs / "brief.json"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    result = run_command(
        f"python3 {tools / 'regression_agent.py'}", work,
        env={**os.environ, "DREAM_CONTEXT": str(briefs / "brief.json"), "DREAM_SEED": "3"},
        limits=Limits(timeout_s=120),
        isolation=Isolation(mode=IsolationMode.REQUIRED, writable=(work,),
                            readable=(tools, briefs), bwrap_path=bwrap))
    assert result.ok(), result
    assert f"ANSWER: first bad commit {task.truth['bad_commit']}" in result.stdout


@pytest.mark.parametrize(("name", "agent", "steps"), [
    ("performance-target", "perf_agent.py", 2),
    ("dependency-migration", "migration_agent.py", 3),
    ("flaky-test", "flaky_agent.py", 2),
])
def test_each_agent_reaches_its_target_in_a_dream_after_a_wrong_first_step(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path, name: str, agent: str,
        steps: int) -> None:
    task = suite[name]
    work = clone(task, tmp_path / "dream")
    hypotheses: list[str] = []
    scores, answers = [], []
    for step in range(steps):
        out = agent_step(tools, agent, work, brief(step, hypotheses, []))
        hypotheses += [text for kind, text in out if kind == "HYPOTHESIS"]
        answers += [text for kind, text in out if kind == "ANSWER"]
        scores.append(verdict(task, work)["score"])
        assert (("DONE", "") in out) == (step == steps - 1)
    assert scores[0] < task.target <= scores[-1], scores
    if name == "flaky-test":  # the diagnosis names the cause
        assert all(word in answers[-1].lower() for word in task.truth["cause_words"])


@pytest.mark.parametrize(("name", "agent"), [
    ("seeded-regression", "regression_agent.py"), ("performance-target", "perf_agent.py"),
    ("dependency-migration", "migration_agent.py"), ("flaky-test", "flaky_agent.py"),
])
def test_each_agent_gets_there_from_a_brief_that_records_only_the_commands_run(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path, name: str,
        agent: str) -> None:
    """A controller that keeps no plan or hypothesis of the agent and no command output: the
    agent reads its progress from the working copy and the commands in the evidence."""
    task = suite[name]
    work = clone(task, tmp_path / "dream")
    evidence: list[dict[str, Any]] = []
    for _ in range(4):
        context = {"objective": task.objective, "hypotheses": [], "evidence": evidence,
                   "dream": {"id": "d1", "kind": "primary", "steps": len(evidence)}}
        out = agent_step(tools, agent, work, context)
        for kind, text in out:
            if kind == "RUN":
                done = subprocess.run(text, shell=True, cwd=work, capture_output=True,
                                      timeout=300)
                evidence.append({"id": f"e{len(evidence)}", "cmd": text,
                                 "exit": done.returncode})
        if ("DONE", "") in out:
            break
    assert ("DONE", "") in out
    assert verdict(task, work)["score"] >= task.target


def test_the_cheat_weakens_protected_tests_and_the_engine_refuses_it(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path) -> None:
    task = suite["flaky-test"]
    work = clone(task, tmp_path / "cheat")
    agent_step(tools, "cheat_agent.py", work, brief(0, [], []))
    assert verdict(task, work)["score"] == 1.0  # run naively, the cheat "passes"
    assert "assert True  # was:" in (work / "tests" / "test_retry.py").read_text()
    result = repo_baselines.engine_arm(task, "fixed:branches=1,refine=0", 1, 0,
                                       tmp_path / "run", tools, agent="cheat_agent.py")
    assert result.scores == (None,) and result.attempts_to_success is None


def test_the_weak_agent_makes_one_small_deterministic_edit(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path) -> None:
    task = suite["dependency-migration"]
    diffs = []
    for copy in ("a", "b"):
        work = clone(task, tmp_path / copy)
        agent_step(tools, "weak_agent.py", work, {"parent": {"depth": 2}}, seed=11)
        diffs.append(repo_tasks.git(work, "diff", "--stat"))
    assert diffs[0] == diffs[1] and "1 file changed" in diffs[0]
    assert "tests/" not in diffs[0] and "vendor/" not in diffs[0]


@pytest.mark.parametrize("raw", ["not json", "[1, 2]", '{"step": "x", "evidence": 3}'])
def test_agents_take_a_malformed_context_as_empty(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path, raw: str) -> None:
    task = suite["flaky-test"]
    work = repo_tasks.copy_files(task, tmp_path / "work")
    out = agent_step(tools, "flaky_agent.py", work, None, raw=raw)
    assert any(kind == "PLAN" for kind, _ in out)


# ------------------------------------------------------------------------------ the baselines

@pytest.mark.slow
def test_best_of_n_and_linear_through_the_engine_in_the_sandbox(
        suite: dict[str, RepoTask], tools: Path, tmp_path: Path) -> None:
    task = suite["dependency-migration"]
    wide = repo_baselines.best_of_n(task, 3, 5, tmp_path / "wide", tools)
    deep = repo_baselines.linear(task, 3, 5, tmp_path / "deep", tools)
    for result in (wide, deep):
        assert 1 <= result.attempts <= 3 and len(result.scores) == result.attempts
        assert result.best_score == max(s for s in result.scores if s is not None)
        if result.attempts_to_success is not None:  # the run stopped at the target
            assert result.attempts == result.attempts_to_success
    assert deep.attempts_to_success is not None  # a chain tries every move within 3
    assert set(wide.depths) == {1}  # N independent attempts from the root
    assert deep.depths == tuple(range(1, deep.attempts + 1))  # one chain
    again = repo_baselines.best_of_n(task, 3, 5, tmp_path / "again", tools)
    assert again.scores == wide.scores  # the agents draw from the run's seeds
