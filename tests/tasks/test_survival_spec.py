"""The ``[survival]`` section of a task file: defaults, settings and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.tasks.spec import CommandSpec, ReviewSpec, load_task


def _task(tmp_path: Path, survival: str) -> Path:
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "evaluate.py").write_text("print('{\"score\": 1}')\n")
    (tmp_path / "task.toml").write_text(
        'name = "t"\nobjective = "o"\ndirection = "maximize"\n'
        '[workspace]\nseed = "seed"\n'
        '[evaluator]\ncommand = "python3 evaluate.py"\ntimeout_s = 7\n'
        '[proposer]\nkind = "command"\ncommand = "true"\n'
        '[constraints]\nprotected_paths = ["evaluate.py"]\n' + survival)
    return tmp_path


def test_defaults(tmp_path: Path) -> None:
    s = load_task(_task(tmp_path, "")).survival
    assert (s.repeats, s.commands, s.tolerance, s.fresh, s.allow_changes, s.review) == \
        (3, (), 0.0, None, (), None)
    assert s.timeout_s == 7 and s.relative_tolerance == 0.0
    assert s.allowed_error(5.0) == 0.0


def test_settings(tmp_path: Path) -> None:
    s = load_task(_task(tmp_path, (
        '[survival]\nrepeats = 5\ncommands = ["make test"]\ntolerance = 0.01\n'
        'relative_tolerance = 0.25\n'
        'fresh = "python3 evaluate.py"\ntimeout_s = 30\nallow_changes = ["poetry.lock"]\n'
        '[survival.review]\nmodel = "m"\n'))).survival
    assert s.repeats == 5 and s.commands == ("make test",) and s.tolerance == 0.01
    assert s.fresh == CommandSpec("python3 evaluate.py", 30)
    assert s.allow_changes == ("poetry.lock",) and s.review == ReviewSpec(None, "m")
    assert s.allowed_error(0.02) == 0.01 and s.allowed_error(-4.0) == 1.0


@pytest.mark.parametrize(("text", "key"), [
    ("repeats = 0", "survival.repeats"),
    ("tolerance = -1", "survival.tolerance"),
    ("tolerance = nan", "survival.tolerance"),
    ("relative_tolerance = 1.5", "survival.relative_tolerance"),
    ("fresh = ''", "survival.fresh"),
    ("surprise = 1", "survival.surprise"),
    ("[survival.review]\ncommand = 'a'\nmodel = 'b'", "survival.review"),
    ("[survival.review]", "survival.review"),
])
def test_refusals_name_the_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_task(_task(tmp_path, "[survival]\n" + text + "\n"))
    assert key in str(e.value)
