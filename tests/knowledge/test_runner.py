"""The agent runs in the sandbox on a copy of the config: what it writes stays there, and
outputs left as a link, a FIFO or not JSON, a crash or a time-out are a failed run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.knowledge.config_repo import load_config
from dreamrsi.knowledge.goldens import Golden
from dreamrsi.knowledge.runner import run_agent

GOLDENS = [Golden("a", "one?", "1"), Golden("b", "two?", "2")]


def _config(root: Path, command: str, timeout_s: float = 20) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "system.md").write_text("kept\n")
    (root / "dreamrsi.toml").write_text(
        f"[agent]\ncommand = '''{command}'''\ntimeout_s = {timeout_s}\nnetwork = false\n")
    return root


def test_the_agent_writes_only_its_copy(tmp_path: Path) -> None:
    root = _config(tmp_path / "config", 'echo changed > prompts/system.md; printf '
                   '\'{"id": "a", "output": "1"}\\n{"id": "z", "output": "9"}\\n\' '
                   '> "$DREAM_OUTPUTS"')
    run = run_agent(load_config(root), root, GOLDENS)
    assert run.error == "" and run.outputs == {"a": "1"}
    assert (root / "prompts" / "system.md").read_text() == "kept\n"


@pytest.mark.parametrize(("command", "words"), [
    ('ln -s /etc/passwd "$DREAM_OUTPUTS"', "not a regular file"),
    ('mkfifo "$DREAM_OUTPUTS"', "a FIFO"),
    ('echo "not json" > "$DREAM_OUTPUTS"', "not JSON"),
    ("true", "wrote no $DREAM_OUTPUTS"),
    ("echo boom >&2; exit 3", "failed (exit 3): boom"),
    ("sleep 30", "timed out after 1 s"),
])
def test_a_bad_run_is_a_failure_with_its_reason(tmp_path: Path, command: str,
                                                words: str) -> None:
    root = _config(tmp_path / "config", command, timeout_s=1)
    run = run_agent(load_config(root), root, GOLDENS)
    assert words in run.error and run.outputs == {}


def test_an_output_line_s_messages_are_kept_as_its_transcript(tmp_path: Path) -> None:
    lines = ['{"id": "a", "output": "1", "messages": [{"role": "assistant", "content": "1"}]}',
             '{"id": "b", "output": "2", "messages": "not a list"}',
             '{"id": "z", "output": "9", "messages": []}']
    root = _config(tmp_path / "config", "printf '%s\\n' " + " ".join(
        f"'{line}'" for line in lines) + ' > "$DREAM_OUTPUTS"')
    run = run_agent(load_config(root), root, GOLDENS)
    assert run.error == "" and run.outputs == {"a": "1", "b": "2"}
    assert run.transcripts == {"a": [{"role": "assistant", "content": "1"}]}
    whole = _config(tmp_path / "whole", """printf '{"a": "1",\\n "b": "2"}' > "$DREAM_OUTPUTS\"""")
    run = run_agent(load_config(whole), whole, GOLDENS)
    assert run.outputs == {"a": "1", "b": "2"} and run.transcripts == {}
