"""Every built-in evaluator writes its verdict through one shared file, ``verdict.py``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dreamrsi.tasks import builtin_tasks, load_task
from dreamrsi.tasks.families import COMMON, FAMILIES_DIR

WRITER = FAMILIES_DIR / COMMON / "verdict.py"


@pytest.mark.parametrize("name", sorted(builtin_tasks()))
def test_every_builtin_evaluator_writes_through_the_shared_file(name: str) -> None:
    task = load_task(builtin_tasks()[name])
    assert "verdict.py" in task.constraints.protected_paths
    assert (task.seed_dir / "verdict.py").read_bytes() == WRITER.read_bytes()
    source = (task.seed_dir / "evaluate.py").read_text()
    assert "from verdict import verdict, write" in source
    assert "json.dumps(result" not in source and "def _result" not in source


def _run(folder: Path, body: str) -> dict:
    shutil.copy(WRITER, folder / "verdict.py")
    (folder / "evaluate.py").write_text(body)
    proc = subprocess.run([sys.executable, "evaluate.py"], cwd=folder, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_a_verdict_is_one_json_line_with_every_field(tmp_path: Path) -> None:
    got = _run(tmp_path, "import sys\nfrom verdict import verdict, write\n"
               "print('chatter')\n"
               "sys.exit(write(lambda: verdict(1.5, True, 'fine', {'k': 2}, 'h'), {}, ''))\n")
    assert got == {"score": 1.5, "valid": True, "feedback": "fine", "metrics": {"k": 2},
                   "candidate_hash": "h"}


def test_an_evaluator_that_raises_still_writes_an_invalid_verdict(tmp_path: Path) -> None:
    got = _run(tmp_path, "import sys\nfrom verdict import write\n"
               "def evaluate():\n    raise RuntimeError('broken')\n"
               "sys.exit(write(evaluate, {'n': 26}, 'none'))\n")
    assert got == {"score": None, "valid": False,
                   "feedback": "invalid: evaluator error RuntimeError('broken')",
                   "metrics": {"n": 26}, "candidate_hash": "none"}
