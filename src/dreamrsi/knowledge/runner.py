"""Running the user's agent over goldens, in the sandbox, on a copy of one config.

The agent's command runs with a fresh copy of the config (no ``.git``) as its working
directory, under bubblewrap (required unless asked otherwise), with the network (it must reach
its model: SECURITY.md), an allow-listed environment (``PATH``, ``HOME`` in its own folder,
``$DREAM_GOLDENS``, ``$DREAM_OUTPUTS``, ``$DREAM_MODEL``, ``$DREAM_MODEL_BASE_URL`` and the
``pass_env`` names), and only its copy and its io folder writable. ``$DREAM_GOLDENS`` names a
JSON-lines file of ``{"id", "input"}``; the agent writes ``{"id", "output"}`` lines to
``$DREAM_OUTPUTS``, which is read as anything a sandbox wrote: no link, no FIFO, bounded.
A line may also carry ``messages``, a list: the agent's own steps for that golden (in the
generic trace shape), kept as :attr:`AgentRun.transcripts` and judged by nothing here.
A command that fails, times out or leaves unreadable outputs is an :class:`AgentRun` with an
``error``, never an exception.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.check import MAX_OUTPUTS_BYTES, parse_outputs
from dreamrsi.knowledge.config_repo import RepoConfig, copy_tree
from dreamrsi.knowledge.goldens import Golden

__all__ = ["AgentRun", "run_agent"]


class AgentRun(NamedTuple):
    """What one run of the agent gave: outputs by golden id, or why it failed."""

    outputs: dict[str, str]
    error: str = ""
    duration_ms: int = 0
    transcripts: Mapping[str, list[Any]] = {}


def _transcripts(text: str, wanted: set[str]) -> dict[str, list[Any]]:
    """The ``messages`` lists of the outputs' lines, by golden id (none from the one-object
    shape, whose lines are not each an object)."""
    found: dict[str, list[Any]] = {}
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(obj, dict) and obj.get("id") in wanted and isinstance(
                obj.get("messages"), list):
            found[obj["id"]] = obj["messages"]
    return found


def _tail(text: str, n: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def run_agent(cfg: RepoConfig, tree: Path, goldens: Sequence[Golden], *,
              isolation: str = "required") -> AgentRun:
    """Run the agent of ``cfg`` on the config copy ``tree`` over ``goldens``.

    Raises:
        SandboxError: The sandbox cannot start (bubblewrap required and unusable).
    """
    from dreamrsi.sandbox import (
        Isolation,
        IsolationMode,
        LeftFileError,
        Limits,
        read_left_file,
        run_command,
    )

    with tempfile.TemporaryDirectory(prefix="dreamrsi-agent-") as folder:
        io = Path(folder) / "io"
        io.mkdir()
        work = copy_tree(tree, Path(folder) / "config")
        (io / "goldens.jsonl").write_text("".join(
            json.dumps({"id": g.golden_id, "input": g.input}) + "\n" for g in goldens))
        path = os.pathsep.join((os.path.dirname(sys.executable), "/usr/local/bin:/usr/bin:/bin"))
        env = {"PATH": path, "HOME": str(io), "LANG": "C.UTF-8",
               "DREAM_GOLDENS": str(io / "goldens.jsonl"),
               "DREAM_OUTPUTS": str(io / "outputs.jsonl"),
               "DREAM_MODEL": cfg.agent.model, "DREAM_MODEL_BASE_URL": cfg.agent.base_url}
        env.update({k: os.environ[k] for k in cfg.agent.pass_env if k in os.environ})
        result = run_command(
            cfg.agent.command, work, env=env, limits=Limits(timeout_s=cfg.agent.timeout_s),
            isolation=Isolation(mode=IsolationMode(isolation), writable=(io, work),
                                network=cfg.agent.network, pass_env=cfg.agent.pass_env))
        if result.timed_out:
            return AgentRun({}, f"the agent timed out after {cfg.agent.timeout_s:g} s",
                            result.duration_ms)
        if result.exit_code != 0:
            return AgentRun({}, f"the agent failed (exit {result.exit_code}): "
                            f"{_tail(result.stderr)}", result.duration_ms)
        try:
            data = read_left_file(io / "outputs.jsonl", MAX_OUTPUTS_BYTES)
            if data is None:
                return AgentRun({}, "the agent wrote no $DREAM_OUTPUTS file",
                                result.duration_ms)
            text = data.decode()
            outputs = parse_outputs(text, "$DREAM_OUTPUTS")
        except (LeftFileError, UnicodeDecodeError, ConfigError) as exc:
            return AgentRun({}, f"the agent's outputs cannot be read: {exc}", result.duration_ms)
    wanted = {g.golden_id for g in goldens}
    return AgentRun({k: v for k, v in outputs.items() if k in wanted}, "", result.duration_ms,
                    _transcripts(text, wanted))
