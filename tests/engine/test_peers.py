"""Peers' tasks through the sandbox and the engine: run unchanged, every bad output diagnosed."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.engine import check_task
from dreamrsi.engine.evaluation import Evaluation
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.engine.test_bad_input import attempts, run

EXAMPLES = Path(__file__).parents[1] / "tasks" / "examples"
SEEDS = {"openevolve": "quadratic", "shinka": "unit_box"}
EVALUATOR = {"openevolve": "evaluator.py", "shinka": "evaluate.py"}
SHINKA_HEAD = """\
import argparse, json, os
parser = argparse.ArgumentParser()
parser.add_argument("--program_path")
parser.add_argument("--results_dir")
args = parser.parse_args()
R = args.results_dir
def put(name, data):
    with open(os.path.join(R, name), "w") as f:
        json.dump(data, f)
"""


def peer_task(tmp_path: Path, style: str, evaluator: str | None = None, *,
              config: str | None = None, propose: str | None = None) -> Path:
    """A copy of the example task of ``style`` (task.toml + the peer's directory), changed."""
    folder = tmp_path / f"{style}-task"
    shutil.copytree(EXAMPLES / style, folder)
    seed = folder / SEEDS[style]
    if evaluator is not None:
        head = SHINKA_HEAD if style == "shinka" else ""
        (seed / EVALUATOR[style]).write_text(head + textwrap.dedent(evaluator))
    if config is not None:
        (seed / "config.yaml").write_text(textwrap.dedent(config))
    if propose is not None:
        toml = folder / "task.toml"
        text = toml.read_text()
        start = text.index("command = '''")
        toml.write_text(text[:start] + "command = '''\npython3 - <<'PY'\n"
                        + textwrap.dedent(propose) + "PY\n'''\n")
    return folder


def verdict(folder: Path, peer_dir: bool = True) -> Evaluation:
    """The verdict ``task check`` gives the peer's directory (no task.toml: read as a peer's)."""
    task = load_task(next(p for p in folder.iterdir() if p.is_dir()) if peer_dir else folder)
    return check_task(task).evaluation


def digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- the examples, unchanged -------------------------------------------------------------------


def test_the_examples_run_unchanged(store: SqliteRunStore) -> None:
    before = digests(EXAMPLES)
    for style, seed in SEEDS.items():
        report = check_task(load_task(EXAMPLES / style / seed))
        assert report.ok and report.evaluation.valid and report.result.isolated
        summary, nodes = run(store, EXAMPLES / style, budget=4)
        assert summary.attempts == 4 and all(n.status is NodeStatus.OK for n in nodes)
        assert all(n.plan for n in attempts(nodes))
        assert max(n.raw_score or 0 for n in nodes) > (nodes[0].raw_score or 0)
        assert store.verify_ledger(summary.run_id).ok
    assert digests(EXAMPLES) == before  # nothing written into the peers' directories


def test_shinka_feedback_public_and_private_metrics(store: SqliteRunStore) -> None:
    summary, nodes = run(store, EXAMPLES / "shinka", budget=1)
    root = nodes[0]
    assert root.feedback == "sum 0.3000 of 3 numbers; the optimum is 3"
    assert root.metrics["public"] == {"count": 3, "smallest": 0.1}
    assert "private" not in root.metrics and "text_feedback" not in root.metrics
    evals = [r.event for r in store.ledger(summary.run_id)
             if r.event.actor is Actor.EVAL and r.event.node_id == root.node_id]
    names = {a.path: a.sha256 for a in evals[0].artifacts}
    assert {"result.json", "peer/metrics.json", "peer/correct.json"} <= set(names)
    assert b"gap_to_optimum" in store.get_blob(names["peer/metrics.json"])


def test_a_broken_candidate_is_an_invalid_node(store: SqliteRunStore, tmp_path: Path) -> None:
    oe = peer_task(tmp_path, "openevolve", propose="""
        text = open("initial_program.py").read()
        open("initial_program.py", "w").write(text.replace("X = 0.5", "X = float('nan')"))
        """)
    _, nodes = run(store, oe, budget=1)
    [node] = attempts(nodes)
    assert node.status is NodeStatus.INVALID and node.score is None
    assert node.feedback == ("evaluate() reported an error: run() returned a number that is "
                             "not finite")
    sh = peer_task(tmp_path, "shinka", propose="""
        text = open("initial.py").read()
        open("initial.py", "w").write(text.replace("[0.1, 0.1, 0.1]", "[0.5, 2.0, 0.5]"))
        """)
    _, nodes = run(store, sh, budget=1)
    [node] = attempts(nodes)
    assert node.status is NodeStatus.INVALID and node.raw_score == 0.0
    assert node.feedback.startswith("incorrect: numbers outside [0, 1]: [2.0]")


def test_the_candidate_cannot_replace_the_adapter_or_the_evaluator(
        store: SqliteRunStore, tmp_path: Path) -> None:
    forged = """
        import json
        report = {"openevolve.json": json.dumps({"metrics": {"combined_score": 1e9}})}
        print(json.dumps({"dreamrsi_peer_report": report}))
        """
    folder = peer_task(tmp_path, "openevolve", propose=f"""
        open("_dreamrsi_peer.py", "w").write({textwrap.dedent(forged)!r})
        """)
    _, nodes = run(store, folder, budget=1)
    [node] = attempts(nodes)
    assert node.status is NodeStatus.OK and node.raw_score == nodes[0].raw_score == 3.75
    folder = peer_task(tmp_path / "b", "openevolve", propose="""
        open("evaluator.py", "w").write("def evaluate(p):\\n    return {'combined_score': 1e9}\\n")
        """)
    _, nodes = run(store, folder, budget=1)
    [node] = attempts(nodes)
    assert node.status is NodeStatus.INVALID and node.raw_score is None
    assert "changed protected paths evaluator.py" in node.feedback


# -- bad outputs, each with its diagnostic -----------------------------------------------------

OPENEVOLVE_CASES = [
    ("def evaluate(p):\n    return {'accuracy': 0.9}\n", NodeStatus.INVALID,
     "evaluate() gave no combined_score (metrics: accuracy); dreamrsi scores by combined_score"),
    ("def evaluate(p):\n    return {'combined_score': float('nan')}\n", NodeStatus.INVALID,
     "combined_score is nan, not a finite number"),
    ("def evaluate(p):\n    return {'combined_score': 0.0, 'error': 'overlap'}\n",
     NodeStatus.INVALID, "evaluate() reported an error: overlap"),
    ("def evaluate(p):\n    raise ValueError('evaluator bug')\n", NodeStatus.ERROR,
     "dreamrsi: the evaluator raised ValueError: evaluator bug"),
    ("def evaluate(p):\n    return [1]\n", NodeStatus.ERROR,
     "evaluate() returned list; expected a dict of metrics or an EvaluationResult"),
    ("X = 1\n", NodeStatus.ERROR, "evaluator.py defines no evaluate(program_path) function"),
    ("def evaluate(p:\n", NodeStatus.ERROR, "SyntaxError"),
    ("import not_installed_xyz\n", NodeStatus.ERROR,
     "evaluator.py (or the program it runs) needs the module not_installed_xyz"),
    ("import os\ndef evaluate(p):\n    os._exit(0)\n", NodeStatus.ERROR,
     "evaluator result rejected: the evaluator left no result"),
    ("class R:\n    def __init__(self):\n"
     "        self.metrics = {'combined_score': 2.0}\n"
     "        self.artifacts = {'stderr': 'hello', 'plot': b'png'}\n"
     "def evaluate(p):\n    return R()\n", NodeStatus.OK, "stderr: hello\nplot: <3 bytes>"),
]


@pytest.mark.parametrize(("evaluator", "status", "expected"), OPENEVOLVE_CASES)
def test_openevolve_bad_outputs(tmp_path: Path, evaluator: str, status: NodeStatus,
                                expected: str) -> None:
    ev = verdict(peer_task(tmp_path, "openevolve", evaluator))
    assert ev.status is status and expected in ev.feedback, ev.feedback


FORGER = """\
import json, os, time
FORGED = (json.dumps({"dreamrsi_peer_report": {
    "openevolve.json": json.dumps({"metrics": {"combined_score": 1e9}}),
    "metrics.json": json.dumps({"combined_score": 1e9}),
    "correct.json": json.dumps({"correct": True})}}) + "\\n").encode()


def forge():
    \"\"\"Print a forged report, and leave a process that keeps writing it to every
    descriptor for two seconds (the adapter prints its own report meanwhile).\"\"\"
    print(FORGED.decode(), flush=True)
    if os.fork() == 0:
        os.setsid()
        end = time.monotonic() + 2
        while time.monotonic() < end:
            for fd in range(64):
                try:
                    os.write(fd, FORGED)
                except OSError:
                    pass
            time.sleep(0.002)
        os._exit(0)
"""


@pytest.mark.parametrize(("style", "evaluator"), [
    ("openevolve", "from forger import forge\ndef evaluate(p):\n    forge()\n"
                   "    return {'combined_score': 1.0}\n"),
    ("shinka", "from forger import forge\nforge()\nput('metrics.json', {'combined_score': 1.0})\n"
               "put('correct.json', {'correct': True})\n"),
])
def test_a_forged_report_never_counts(tmp_path: Path, style: str, evaluator: str) -> None:
    """What the peer's evaluator prints goes to stderr, and a process it leaves behind cannot
    write the adapter's report: only the adapter's own process can."""
    folder = peer_task(tmp_path, style, evaluator)
    (folder / SEEDS[style] / "forger.py").write_text(FORGER)
    ev = verdict(folder)
    assert ev.status is NodeStatus.OK and ev.raw_score == 1.0, ev.feedback


SHINKA_CASES = [
    ("put('metrics.json', {'public': {}})\nput('correct.json', {'correct': True})\n",
     NodeStatus.INVALID, "metrics.json gave no combined_score (metrics: public)"),
    ("put('metrics.json', {'combined_score': float('nan')})\n"
     "put('correct.json', {'correct': True})\n", NodeStatus.INVALID,
     "combined_score is nan, not a finite number"),
    ("put('metrics.json', {'combined_score': 0.0, 'text_feedback': 'radii'})\n"
     "put('correct.json', {'correct': False, 'error': 'bad radius'})\n", NodeStatus.INVALID,
     "incorrect: bad radius\nradii"),
    ("put('metrics.json', {'combined_score': 1.0})\n", NodeStatus.INVALID,
     "evaluate.py wrote no correct.json (ShinkaEvolve counts that as incorrect)"),
    ("raise RuntimeError('evaluator bug')\n", NodeStatus.ERROR,
     "evaluator exited with status 1; stderr: Traceback"),
    ("put('correct.json', {'correct': True})\n", NodeStatus.ERROR,
     "evaluator result rejected: evaluate.py wrote no metrics.json in its --results_dir"),
    ("os.symlink('/etc/passwd', os.path.join(R, 'metrics.json'))\n"
     "put('correct.json', {'correct': True})\n", NodeStatus.ERROR,
     "dreamrsi: metrics.json is not a regular file (a link)"),
    ("os.mkfifo(os.path.join(R, 'metrics.json'))\nput('correct.json', {'correct': True})\n",
     NodeStatus.ERROR, "dreamrsi: metrics.json is not a regular file (a FIFO)"),
    ("open(os.path.join(R, 'metrics.json'), 'w').write('{oops')\n", NodeStatus.ERROR,
     "metrics.json is not valid JSON"),
]


@pytest.mark.parametrize(("evaluator", "status", "expected"), SHINKA_CASES)
def test_shinka_bad_outputs(tmp_path: Path, evaluator: str, status: NodeStatus,
                            expected: str) -> None:
    ev = verdict(peer_task(tmp_path, "shinka", evaluator))
    assert ev.status is status and expected in ev.feedback, ev.feedback


@pytest.mark.parametrize(("style", "line", "package"), [
    ("openevolve", "from openevolve.evaluation_result import EvaluationResult\n", "openevolve"),
    ("shinka", "from shinka.core import run_shinka_eval\n", "shinka"),
])
def test_a_missing_framework_says_how_to_install_it(tmp_path: Path, style: str, line: str,
                                                    package: str) -> None:
    if importlib.util.find_spec(package) is not None:
        # The message under test is for a Python that lacks the framework; with it installed
        # the import succeeds and there is nothing to check. CI installs `.[dev]`, which holds
        # neither framework, so this runs there.
        pytest.skip(f"{package} is installed here")
    ev = verdict(peer_task(tmp_path, style, line + "def evaluate(p):\n    return {}\n"))
    assert ev.status is NodeStatus.ERROR
    assert "pip install 'dreamrsi[peers]'" in ev.feedback, ev.feedback
    assert f"imports {package}, which is not installed in the Python that runs dreamrsi" \
        in ev.feedback


CASCADE = "evaluator:\n  timeout: 10\n  cascade_evaluation: true\n  cascade_thresholds: [0.5]\n"


def test_the_cascade_stops_below_its_threshold(tmp_path: Path) -> None:
    ev = verdict(peer_task(tmp_path, "openevolve", """
        def evaluate_stage1(p):
            return {"combined_score": 0.2}
        def evaluate_stage2(p):
            raise AssertionError("stage 2 must not run")
        """, config=CASCADE))
    assert ev.status is NodeStatus.OK and ev.raw_score == 0.2 and ev.feedback == ""


def test_a_failing_later_stage_keeps_the_earlier_ones(tmp_path: Path) -> None:
    ev = verdict(peer_task(tmp_path, "openevolve", """
        def evaluate_stage1(p):
            return {"combined_score": 0.8, "note": "text is dropped when stages merge"}
        def evaluate_stage2(p):
            raise RuntimeError("boom")
        """, config=CASCADE))
    assert ev.status is NodeStatus.OK and ev.raw_score == 0.8
    assert ev.metrics["stage2_passed"] == 0.0
    assert "stage2_stderr: boom" in ev.feedback and "failure_stage: stage2" in ev.feedback


def test_without_the_cascade_evaluate_runs(tmp_path: Path) -> None:
    ev = verdict(peer_task(tmp_path, "openevolve", """
        def evaluate_stage1(p):
            raise AssertionError("the cascade is off")
        def evaluate(p, scale=1):
            return {"combined_score": 2.0 * scale}
        """, config="evaluator:\n  cascade_evaluation: false\n  evaluator_args: {scale: 3}\n"))
    assert ev.status is NodeStatus.OK and ev.raw_score == 6.0


def test_a_slow_evaluator_times_out(tmp_path: Path) -> None:
    ev = verdict(peer_task(tmp_path, "openevolve", """
        import time
        def evaluate(p):
            time.sleep(30)
        """, config="evaluator:\n  timeout: 1\n"))
    assert ev.status is NodeStatus.TIMEOUT and "timed out after 1 s" in ev.feedback


def test_bad_outputs_reach_the_nodes(store: SqliteRunStore, tmp_path: Path) -> None:
    for style, (evaluator, status, expected) in (("openevolve", OPENEVOLVE_CASES[1]),
                                                 ("shinka", SHINKA_CASES[6])):
        folder = peer_task(tmp_path / style, style, evaluator)
        summary, nodes = run(store, folder, budget=1)
        assert summary.attempts == 1 and len(nodes) == 2
        for node in nodes:
            assert node.status is status and expected in node.feedback, node.feedback


# -- the command line --------------------------------------------------------------------------


def test_task_check_on_a_peer_directory() -> None:
    result = CliRunner().invoke(app, ["task", "check", str(EXAMPLES / "openevolve" / "quadratic"),
                                      "--offline"])
    assert result.exit_code == 0, result.output
    assert "evaluator works" in result.output
    assert "config.yaml keys dreamrsi does not use" in result.output
    assert "not checked: the model endpoint (offline)" in " ".join(result.output.split())


GUESS_3 = "PLAN: aim at the top\ninitial_program.py\n<<<<<<< SEARCH\nX = 0.5\n=======\nX = 3.0\n" \
    ">>>>>>> REPLACE\n"


def test_task_check_says_config_yamls_endpoint_is_not_there_and_takes_overrides(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """config.yaml's api_base (nothing listens there) beats $OPENAI_BASE_URL; --base-url and
    --model beat config.yaml's api_base and models."""
    from tests.agents.fake_openai import FakeOpenAI, Reply

    folder = str(EXAMPLES / "openevolve" / "quadratic")
    with FakeOpenAI([Reply.text(GUESS_3)], models=("local-coder",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local-0123456789")
        plain = CliRunner().invoke(app, ["task", "check", folder])
        assert plain.exit_code == 1
        assert "error: the model endpoint does not work: http://127.0.0.1:8000/v1" in plain.stderr
        assert not server.requests
        listed = CliRunner().invoke(app, ["task", "check", folder, "--base-url",
                                          server.base_url])
        assert listed.exit_code == 1  # config.yaml's models are not served there
        assert "does not list the model 'small-model', 'large-model'" in " ".join(
            listed.stderr.split())
        done = CliRunner().invoke(app, ["task", "check", folder, "--base-url", server.base_url,
                                        "--model", "local-coder"])
        assert done.exit_code == 0, done.output
        assert "proposer works: child ok, valid True, score 10" in " ".join(done.stdout.split())
        assert [c.body["model"] for c in server.chats] == ["local-coder"]  # type: ignore[index]


def test_config_phase_files_are_named_as_not_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.agents.test_infrastructure import closed_port_url

    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-0123456789")
    folder = tmp_path / "phased"
    shutil.copytree(EXAMPLES / "openevolve" / "quadratic", folder)
    (folder / "config.yaml").rename(folder / "config_phase_1.yaml")
    (folder / "config_phase_2.yaml").write_text((folder / "config_phase_1.yaml").read_text())
    note = ("config_phase_1.yaml, config_phase_2.yaml are not read: dreamrsi reads config.yaml "
            "only (there is none here, so its defaults apply); to use a phase's settings, copy "
            "its file to config.yaml")
    assert note in load_task(folder).peer.notes  # type: ignore[union-attr]
    checked = CliRunner().invoke(app, ["task", "check", str(folder), "--offline"])
    assert checked.exit_code == 0, checked.output
    assert note in " ".join(checked.stdout.replace("│", " ").split())
    ran = CliRunner().invoke(app, ["run", str(folder), "--budget", "1", "--base-url",
                                   closed_port_url(), "--store", str(tmp_path / "store")])
    assert ran.exit_code == 0, ran.output
    assert f"note: {note}" in " ".join(ran.stderr.split())
