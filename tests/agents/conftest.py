"""A small task for the ``llm`` proposer, and a loopback model server that improves it."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agents.fake_openai import FakeOpenAI, Reply, Seen

KEY = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
"""The API key the tests put in the environment, and then look for everywhere."""

PROGRAM = '''\
"""A number to make large."""

# EVOLVE-BLOCK-START
def value():
    return 1.0
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    print(value())
'''

EVALUATE = '''\
import json, subprocess, sys
out = subprocess.run([sys.executable, "initial_program.py"], capture_output=True, text=True,
                     timeout=20)
try:
    v = float(out.stdout.strip().splitlines()[-1])
    print(json.dumps({"score": v, "valid": True, "feedback": f"value() returned {v}"}))
except (ValueError, IndexError):
    print(json.dumps({"score": None, "valid": False,
                      "feedback": "no number: " + out.stderr[-300:]}))
'''

_DEFAULTS = ('models = ["fake-small"]', "timeout_s = 20", "call_timeout_s = 2",
             "max_retries = 2")
_RETURN = re.compile(r"^    return (\S+)$", re.MULTILINE)


def write_llm_task(root: Path, base_url: str, *, proposer: str = "", name: str = "llm-toy",
                   constraints: str = "", files: dict[str, str] | None = None) -> Path:
    """A task whose seed holds ``initial_program.py`` (one EVOLVE block) and ``evaluate.py``."""
    seed = root / "seed"
    seed.mkdir(parents=True)
    (seed / "initial_program.py").write_text(PROGRAM)
    (seed / "evaluate.py").write_text(EVALUATE)
    for rel, text in (files or {}).items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_text(text)
    (root / "task.toml").write_text(textwrap.dedent(f"""\
        name = "{name}"
        objective = "Make value() return a large number."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = "python3 evaluate.py"
        timeout_s = 30
        [constraints]
        protected_paths = ["evaluate.py"]
        {constraints}
        [proposer]
        kind = "llm"
        base_url = "{base_url}"
        """) + "".join(f"{line}\n" for line in _DEFAULTS if line.split(" =")[0] + " ="
                       not in proposer) + textwrap.dedent(proposer) + textwrap.dedent("""
        [proposer.prices]
        "fake-small" = { input = 1.0, output = 2.0 }
        """))
    return root


def improve(seen: Seen) -> Reply:
    """A good answer: add one to the number ``value()`` returns in the prompt's program (the
    one under "The program now", not an earlier run's shown as background)."""
    text = seen.user_text()
    found = _RETURN.search(text.split("# The program now", 1)[-1])
    if found is None:
        return Reply.text("PLAN: nothing to improve")
    old = found.group(1)
    new = repr(float(old) + 1.0)
    return Reply.text(f"PLAN: return {new} instead of {old}\n\ninitial_program.py\n"
                      f"<<<<<<< SEARCH\n    return {old}\n=======\n    return {new}\n"
                      ">>>>>>> REPLACE\n", tokens_in=120, tokens_out=30)


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """Put the test key in ``$OPENAI_API_KEY``."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A loopback server whose answers improve the program."""
    with FakeOpenAI(responder=improve) as fake:
        yield fake


LlmTaskFactory = Callable[..., Path]


@pytest.fixture
def llm_task(tmp_path: Path) -> LlmTaskFactory:
    """Factory: ``llm_task(base_url, proposer=..., ...)`` returns a new task directory."""
    counter = iter(range(1_000_000))

    def factory(base_url: str, **kwargs: object) -> Path:
        return write_llm_task(tmp_path / f"llm{next(counter)}", base_url,
                              **kwargs)  # type: ignore[arg-type]

    return factory
