"""Peers' task directories as tasks: detection, config.yaml, task.toml keys, verdicts, adapter."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.tasks import load_task, resolve_task
from dreamrsi.tasks.peers import PeerResultError, translate
from dreamrsi.tasks.peers import _adapter as adapter

EXAMPLES = Path(__file__).parent / "examples"
OPENEVOLVE = EXAMPLES / "openevolve" / "quadratic"
SHINKA = EXAMPLES / "shinka" / "unit_box"


def copy_of(source: Path, tmp_path: Path, name: str | None = None) -> Path:
    """A copy of an example directory, to change."""
    dest = tmp_path / (name or source.name)
    shutil.copytree(source, dest)
    return dest


# -- reading a peer's directory without task.toml ---------------------------------------------


def test_an_openevolve_directory_is_read_with_its_config() -> None:
    task = load_task(OPENEVOLVE)
    assert task.name == "quadratic" and task.direction.value == "maximize"
    assert task.objective.startswith("You improve a tiny optimiser")
    assert task.seed_dir == OPENEVOLVE.resolve()
    assert task.peer is not None and task.peer.style == "openevolve"
    assert task.peer.program == "initial_program.py"
    assert task.constraints.protected_paths == ("config.yaml", "evaluator.py")
    assert task.evaluator.command == ("python3 -m _dreamrsi_peer openevolve initial_program.py "
                                      "--cascade 0.5")
    assert task.evaluator.timeout_s == 40.0  # evaluator.timeout 20 s, two cascade stages
    assert task.constraints.isolation is None  # a user's task: required by the engine
    p = task.proposer
    assert p.kind == "llm" and p.llm is not None and p.timeout_s == 300.0
    assert [(m.name, m.weight) for m in p.llm.models] == [("small-model", 0.8),
                                                          ("large-model", 0.2)]
    assert p.llm.base_url == "http://127.0.0.1:8000/v1"
    assert p.llm.api_key_env == "OPENAI_API_KEY"
    assert (p.llm.temperature, p.llm.max_tokens) == (0.6, 2048)
    assert (p.llm.call_timeout_s, p.llm.max_retries) == (45.0, 2)
    assert p.llm.edit_format == "diff" and p.llm.files == ("initial_program.py",)
    [note] = task.peer.notes
    for ignored in ("llm.top_p", "prompt.num_top_programs", "database", "max_iterations",
                    "evaluator.parallel_evaluations", "random_seed"):
        assert ignored in note


def test_a_shinka_directory_is_read_with_defaults() -> None:
    task = load_task(SHINKA)
    assert task.name == "unit_box" and task.direction.value == "maximize"
    assert "initial.py" in task.objective and "combined_score" in task.objective
    assert task.peer is not None and task.peer.style == "shinka"
    assert task.constraints.protected_paths == ("evaluate.py",)
    assert task.evaluator.command == "python3 -m _dreamrsi_peer shinka initial.py"
    assert task.evaluator.timeout_s == 300.0
    assert task.proposer.kind == "llm" and task.proposer.llm is not None
    assert task.proposer.llm.files == ("initial.py",) and task.proposer.llm.models == ()
    assert task.summary()["evaluator"]["peer"]["style"] == "shinka"


def test_resolve_task_and_digests_are_stable() -> None:
    first, second = resolve_task(str(OPENEVOLVE)), load_task(OPENEVOLVE)
    assert first.digest == second.digest and first.evaluator_digest == second.evaluator_digest
    assert load_task(SHINKA).digest != first.digest


def test_config_changes_change_the_digests(tmp_path: Path) -> None:
    folder = copy_of(OPENEVOLVE, tmp_path)
    before = load_task(folder)
    config = folder / "config.yaml"
    config.write_text(config.read_text().replace("timeout: 20", "timeout: 25"))
    after = load_task(folder)
    assert after.digest != before.digest and after.evaluator_digest != before.evaluator_digest
    assert after.evaluator.timeout_s == 50.0


def test_a_folder_that_is_no_task_says_what_was_looked_for(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError, match="no task.toml in the task directory, and it is not an "
                       r"OpenEvolve-style directory \(initial_program.\* and evaluator.py\)"):
        load_task(tmp_path)


def test_ambiguous_or_incomplete_directories_are_refused(tmp_path: Path) -> None:
    both = copy_of(OPENEVOLVE, tmp_path, "both")
    (both / "evaluate.py").write_text("")
    with pytest.raises(ConfigError, match="both evaluator.py .* and evaluate.py"):
        load_task(both)
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "evaluate.py").write_text("")
    with pytest.raises(ConfigError, match=r"candidate initial.\* is not, or not once"):
        load_task(lonely)
    two = copy_of(SHINKA, tmp_path, "two")
    (two / "initial.rs").write_text("")
    with pytest.raises(ConfigError, match=r"found: initial.py, initial.rs"):
        load_task(two)


def test_only_entries_in_the_workspace_are_protected(tmp_path: Path) -> None:
    folder = copy_of(SHINKA, tmp_path)
    (folder / ".gitignore").write_text("results/\n*.log\n")
    (folder / "results").mkdir()
    (folder / "results" / "old.json").write_text("{}")
    (folder / "run.log").write_text("")
    (folder / "empty").mkdir()
    (folder / "__pycache__").mkdir()
    (folder / "helpers").mkdir()
    (folder / "helpers" / "util.py").write_text("X = 1\n")
    task = load_task(folder)
    assert task.constraints.protected_paths == (".gitignore", "evaluate.py", "helpers")


@pytest.mark.parametrize(
    ("config", "key", "expected"),
    [
        ("llm:\n  temperature: hot\n", "llm.temperature", "valid number"),
        ("llm:\n  timeout: 0\n", "llm.timeout", "greater than 0"),
        ("llm:\n  models: [{weight: 1}]\n", "llm.models[0]", "a mapping with a name"),
        ("llm: 3\n", "llm", "a mapping"),
        ("evaluator:\n  timeout: -1\n", "evaluator.timeout", "seconds > 0"),
        ("evaluator:\n  timeout: .nan\n", "evaluator.timeout", "seconds > 0"),
        ("evaluator:\n  cascade_thresholds: high\n", "evaluator.cascade_thresholds", "numbers"),
        ("evaluator:\n  cascade_evaluation: 1\n", "evaluator.cascade_evaluation", "true or"),
    ],
)
def test_config_errors_name_the_file_and_key(tmp_path: Path, config: str, key: str,
                                             expected: str) -> None:
    folder = copy_of(OPENEVOLVE, tmp_path)
    (folder / "config.yaml").write_text(config)
    with pytest.raises(ConfigError) as err:
        load_task(folder)
    assert err.value.file is not None and err.value.file.endswith("config.yaml")
    assert err.value.key == key and expected in str(err.value)


@pytest.mark.parametrize("name", ["config.yaml", "evaluator.py", "initial_program.py"])
def test_a_peer_file_linked_outside_the_directory_is_refused(tmp_path: Path, name: str) -> None:
    folder = copy_of(OPENEVOLVE, tmp_path)
    elsewhere = tmp_path / f"elsewhere-{name}"
    (folder / name).rename(elsewhere)
    (folder / name).symlink_to(elsewhere)
    with pytest.raises(ConfigError, match=f"{name} is a symbolic link to .*elsewhere-{name}, "
                       "outside the task directory"):
        load_task(folder)


def test_config_that_is_not_yaml_is_refused(tmp_path: Path) -> None:
    folder = copy_of(OPENEVOLVE, tmp_path)
    (folder / "config.yaml").write_text("llm: [unclosed\n")
    with pytest.raises(ConfigError, match="config.yaml: not valid YAML"):
        load_task(folder)


def test_older_model_keys_and_a_literal_key(tmp_path: Path) -> None:
    folder = copy_of(OPENEVOLVE, tmp_path)
    (folder / "config.yaml").write_text(textwrap.dedent("""\
        llm:
          primary_model: big
          primary_model_weight: 3
          secondary_model: small
          api_key: sk-literal-secret-123
          timeout: 120
          retries: 3
        prompt:
          system_message: system_message
        evaluator:
          cascade_evaluation: false
          evaluator_args: {n: 26}
        diff_based_evolution: false
        """))
    task = load_task(folder)
    llm = task.proposer.llm
    assert llm is not None
    assert [(m.name, m.weight) for m in llm.models] == [("big", 3.0), ("small", 0.2)]
    assert llm.api_key_env == "OPENAI_API_KEY" and llm.edit_format == "full"
    assert task.proposer.timeout_s == 120 * 4 + 30
    assert task.objective.startswith("Improve initial_program.py")  # a template name
    assert task.evaluator.command.endswith("""--kwargs '{"n": 26}'""")
    assert "--cascade" not in task.evaluator.command and task.evaluator.timeout_s == 300.0
    assert task.peer is not None and "llm.api_key (a literal key" in task.peer.notes[0]
    assert "sk-literal-secret-123" not in json.dumps(task.summary())


# -- task.toml naming a peer's style -----------------------------------------------------------


def test_a_task_file_beside_the_directory_supplies_the_proposer() -> None:
    task = load_task(EXAMPLES / "openevolve")
    assert task.name == "openevolve-quadratic" and task.proposer.kind == "command"
    assert task.peer is not None and task.peer.style == "openevolve"
    assert task.seed_dir == OPENEVOLVE.resolve()
    assert task.constraints.protected_paths == ("config.yaml", "evaluator.py")
    assert task.peer.notes[0].startswith("config.yaml's llm and prompt sections are not used")
    assert task.evaluator_digest == load_task(OPENEVOLVE).evaluator_digest
    assert load_task(EXAMPLES / "shinka").peer is not None


def _edit_task(tmp_path: Path, example: str, old: str, new: str) -> Path:
    folder = copy_of(EXAMPLES / example, tmp_path)
    toml = folder / "task.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    ("old", "new", "key", "message"),
    [
        ('kind = "openevolve"', 'kind = "openevolve"\ncommand = "python3 evaluator.py"',
         "evaluator.command", "runs dreamrsi's adapter, not a command"),
        ('kind = "openevolve"', 'command = "python3 e.py"\nprogram = "initial_program.py"',
         "evaluator.program", "'program' is a key of the peers' evaluators"),
        ('kind = "openevolve"', 'kind = "command"', "evaluator.command",
         "required key is missing"),
        ('direction = "maximize"', 'direction = "minimize"', "direction",
         "openevolve evaluators maximise combined_score"),
        ('kind = "openevolve"', 'kind = "shinka"', "evaluator.kind", "no evaluate.py"),
        ('kind = "openevolve"', 'kind = "openevolve"\nprogram = "../initial_program.py"',
         "evaluator.program", "not a file at the top of the seed folder"),
        ('kind = "openevolve"', 'kind = "alphaevolve"', "evaluator.kind", "invalid value"),
    ],
)
def test_task_file_errors(tmp_path: Path, old: str, new: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_task(_edit_task(tmp_path, "openevolve", old, new))
    assert err.value.key == key and message in str(err.value)


def test_explicit_program_timeout_and_protected_paths(tmp_path: Path) -> None:
    folder = _edit_task(tmp_path, "shinka", 'kind = "shinka"',
                        'kind = "shinka"\nprogram = "initial.py"\ntimeout_s = 7\n'
                        '[constraints]\nprotected_paths = ["evaluate.py"]')
    task = load_task(folder)
    assert task.evaluator.timeout_s == 7.0
    assert task.constraints.protected_paths == ("evaluate.py",)


def test_the_adapter_name_is_reserved(tmp_path: Path) -> None:
    folder = copy_of(SHINKA, tmp_path)
    (folder / "_dreamrsi_peer.py").write_text("")
    with pytest.raises(ConfigError, match="the name of dreamrsi's adapter"):
        load_task(folder)


# -- verdicts ---------------------------------------------------------------------------------


def oe(metrics: Any, artifacts: Any = None) -> dict[str, Any]:
    data = {"metrics": metrics, "artifacts": artifacts or {}}
    return translate("openevolve", {"openevolve.json": json.dumps(data).encode()})


def shinka(metrics: Any, correct: Any = None) -> dict[str, Any]:
    files = {"metrics.json": None if metrics is None else json.dumps(metrics).encode(),
             "correct.json": None if correct is None else json.dumps(correct).encode()}
    return translate("shinka", files)


def test_openevolve_verdicts() -> None:
    good = oe({"combined_score": 2, "x": 1.5}, {"stderr": "warning", "blob": "<3 bytes>"})
    assert good == {"valid": True, "score": 2.0, "feedback": "stderr: warning\nblob: <3 bytes>",
                    "metrics": {"combined_score": 2, "x": 1.5}}
    missing = oe({"accuracy": 0.9})
    assert not missing["valid"] and missing["score"] is None
    assert "gave no combined_score (metrics: accuracy)" in missing["feedback"]
    nan = oe({"combined_score": math.nan})
    assert not nan["valid"] and "combined_score is nan, not a finite number" in nan["feedback"]
    assert nan["metrics"] == {"combined_score": None}
    error = oe({"combined_score": 0.0, "error": "overlapping circles"})
    assert not error["valid"] and error["score"] == 0.0
    assert error["feedback"] == "evaluate() reported an error: overlapping circles"
    flag = oe({"error": 0.0})  # OpenEvolve's own failure flag
    assert not flag["valid"] and "reported an error: 0.0" in flag["feedback"]
    assert oe({"combined_score": 1, "error": None})["valid"]
    assert "must be a number, got str" in oe({"combined_score": "high"})["feedback"]


def test_shinka_verdicts() -> None:
    good = shinka({"combined_score": 2.5, "public": {"n": 3}, "private": {"hidden": 1},
                   "text_feedback": "nice"}, {"correct": True, "error": None})
    assert good == {"valid": True, "score": 2.5, "feedback": "nice",
                    "metrics": {"combined_score": 2.5, "public": {"n": 3}}}
    wrong = shinka({"combined_score": 0.0, "text_feedback": ["a", "b"]},
                   {"correct": False, "error": "radius < 0"})
    assert not wrong["valid"] and wrong["score"] == 0.0
    assert wrong["feedback"] == "incorrect: radius < 0\na\nb"
    no_correct = shinka({"combined_score": 1.0}, None)
    assert not no_correct["valid"] and "no correct.json" in no_correct["feedback"]
    no_score = shinka({"public": {}}, {"correct": True})
    assert not no_score["valid"] and "metrics.json gave no combined_score" in no_score["feedback"]
    nan = shinka({"combined_score": math.inf}, {"correct": True})
    assert not nan["valid"] and "combined_score is inf" in nan["feedback"]


@pytest.mark.parametrize(
    ("style", "files", "message"),
    [
        ("openevolve", {"openevolve.json": None}, "left no result"),
        ("openevolve", {"openevolve.json": b"[1]"}, "holds list, not a JSON object"),
        ("openevolve", {"openevolve.json": b'{"metrics": 3}'}, "is not {metrics"),
        ("shinka", {"metrics.json": None, "correct.json": b"{}"}, "wrote no metrics.json"),
        ("shinka", {"metrics.json": b"{oops", "correct.json": None},
         "metrics.json is not valid JSON"),
        ("shinka", {"metrics.json": b"{}", "correct.json": b'{"correct": "yes"}'},
         "'correct' must be true or false"),
    ],
)
def test_unreadable_output_raises(style: str, files: dict[str, bytes | None],
                                  message: str) -> None:
    with pytest.raises(PeerResultError, match=message):
        translate(style, files)


# -- the adapter's pieces ---------------------------------------------------------------------


def test_cascade_thresholds_follow_openevolve() -> None:
    assert adapter._passes({"combined_score": 0.5}, 0.5)
    assert not adapter._passes({"combined_score": 0.4, "other": 9.0}, 0.5)
    assert adapter._passes({"a": 0.4, "b": 0.8, "error": -5.0, "flag": True}, 0.6)
    assert not adapter._passes({}, 0.0)


def test_plain_turns_values_into_json_data() -> None:
    class Scalar:
        def item(self) -> float:
            return 2.5

    data = {"n": Scalar(), "raw": b"abc", 3: (1, [2.0]), "obj": object()}
    plain = adapter._plain(data)
    assert plain["n"] == 2.5 and plain["raw"] == "<3 bytes>" and plain["3"] == [1, [2.0]]
    assert plain["obj"].startswith("<object object")
    json.dumps(plain)


def test_missing_framework_messages_say_how_to_install() -> None:
    text = adapter._missing_module("openevolve.evaluation_result", "evaluator.py")
    assert "evaluator.py imports openevolve" in text
    assert "pip install 'dreamrsi[peers]' (or pip install openevolve)" in text
    assert "pip install shinka-evolve" in adapter._missing_module("shinka.core", "evaluate.py")
    assert "needs the module torch" in adapter._missing_module("torch", "evaluator.py")
