"""Peers' task directories: recognise one, and build its evaluator (the adapter) and table.

An OpenEvolve-style directory holds ``initial_program.<ext>`` (the candidate, with
``EVOLVE-BLOCK-START/END`` regions), ``evaluator.py`` (``evaluate(program_path)``) and
optionally ``config.yaml``; a ShinkaEvolve-style one holds ``initial.<ext>`` and
``evaluate.py`` (``--program_path P --results_dir R``). Either runs unchanged: without a
``task.toml`` dreamrsi reads the directory as the table :func:`peer_task_table` returns, and a
``task.toml`` may name the style itself (``[evaluator] kind = "openevolve"``). The evaluator
is dreamrsi's adapter (``_adapter.py``), written into the trusted copy beside the peer's files.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dreamrsi.errors import ConfigError
from dreamrsi.tasks._inside import check_inside
from dreamrsi.tasks.peers.openevolve_config import CONFIG_FILE, read_openevolve_config
from dreamrsi.tasks.peers.verdicts import RESULT_FILES

__all__ = ["ADAPTER_FILE", "PEER_STYLES", "PeerEvaluator", "PeerSpec", "adapter_source",
           "detect_style", "peer_evaluator", "peer_task_table"]

ADAPTER_MODULE = "_dreamrsi_peer"
ADAPTER_FILE = f"{ADAPTER_MODULE}.py"
"""The adapter's name in the trusted copy (found through ``PYTHONPATH``, never the checkout)."""
PEER_STYLES = ("openevolve", "shinka")
_EVALUATOR = {"openevolve": "evaluator.py", "shinka": "evaluate.py"}
_PROGRAM_STEM = {"openevolve": "initial_program", "shinka": "initial"}
_LABEL = {"openevolve": "OpenEvolve", "shinka": "ShinkaEvolve"}
_DEFAULT_TIMEOUT_S = 300.0
_NEVER_PROTECTED = {".git", "__pycache__"}
PHASE_FILES = "config_phase_*.yaml"
"""OpenEvolve's multi-phase configurations: named in the task's notes, never read."""


@dataclass(frozen=True, slots=True)
class PeerSpec:
    """What makes a task a peer's.

    Attributes:
        style: ``"openevolve"`` or ``"shinka"``.
        program: The candidate file, relative to the workspace.
        evaluator_file: The peer's evaluator (``evaluator.py`` or ``evaluate.py``).
        adapter_digest: sha256 of the adapter dreamrsi runs it through.
        notes: What dreamrsi does not take from the peer's configuration.
    """

    style: str
    program: str
    evaluator_file: str
    adapter_digest: str
    notes: tuple[str, ...] = ()

    @property
    def result_files(self) -> tuple[str, ...]:
        """The files of the peer's result, which the adapter's report holds by name."""
        return RESULT_FILES[self.style]

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {"style": self.style, "program": self.program,
                "evaluator_file": self.evaluator_file, "notes": list(self.notes)}


@dataclass(frozen=True, slots=True)
class PeerEvaluator:
    """The evaluator of a peer task: the adapter's command, its limit, the protected paths."""

    spec: PeerSpec
    command: str
    timeout_s: float
    protected_paths: tuple[str, ...]


@cache
def adapter_source() -> bytes:
    """The adapter script's bytes, as written into the trusted copy."""
    return Path(__file__).with_name("_adapter.py").read_bytes()


def detect_style(folder: Path) -> tuple[str, str] | None:
    """The style and candidate program of a peer's directory, or None when it is not one.

    Raises:
        ConfigError: It holds both peers' evaluators, or an evaluator with no candidate
            program or several.
    """
    found = [style for style in PEER_STYLES if (folder / _EVALUATOR[style]).is_file()]
    if not found:
        return None
    if len(found) > 1:
        raise ConfigError("the directory holds both evaluator.py (OpenEvolve) and evaluate.py "
                          "(ShinkaEvolve)", file=str(folder),
                          expected="a task.toml naming one: [evaluator] kind = \"openevolve\"")
    style = found[0]
    programs = _programs(folder, style)
    if len(programs) != 1:
        stem, what = _PROGRAM_STEM[style], ", ".join(programs) or "none"
        raise ConfigError(f"{_EVALUATOR[style]} is there but the {_LABEL[style]} candidate "
                          f"{stem}.* is not, or not once (found: {what})", file=str(folder),
                          expected=f"one {stem}.<ext>, or a task.toml whose [evaluator] "
                          "program names the candidate")
    return style, programs[0]


def _programs(folder: Path, style: str) -> list[str]:
    stem = _PROGRAM_STEM[style]
    return sorted(p.name for p in folder.glob(f"{stem}.*")
                  if p.is_file() and p.stem == stem and p.suffix not in (".pyc", ".orig"))


def peer_task_table(directory: Path) -> dict[str, Any] | None:
    """The task.toml table dreamrsi reads a peer's directory (without task.toml) as.

    Name: the directory's; direction: maximise (both peers maximise ``combined_score``); seed:
    the directory itself; evaluator: the adapter; proposer: ``kind = "llm"`` on the
    candidate program, with an OpenEvolve ``config.yaml``'s ``llm`` section mapped onto it.

    Returns:
        The table, or None when ``directory`` is not a peer's.

    Raises:
        ConfigError: The directory is a peer's but unusable, or its config.yaml is wrong.
    """
    found = detect_style(directory)
    if found is None:
        return None
    style, program = found
    objective = (f"Improve {program} (the code between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END) "
                 f"so that {_EVALUATOR[style]} gives a higher combined_score.")
    proposer: dict[str, Any] = {"kind": "llm", "files": [program]}
    if style == "openevolve":
        config = read_openevolve_config(directory / CONFIG_FILE)
        proposer.update(config.proposer)
        objective = config.objective or objective
    return {"name": _task_name(directory), "objective": objective, "direction": "maximize",
            "workspace": {"seed": "."}, "evaluator": {"kind": style, "program": program},
            "proposer": proposer}


def _task_name(directory: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", directory.resolve().name).lstrip("-._")
    return name or "peer-task"


def peer_evaluator(style: str, seed_dir: Path, file: Path, program: str | None,
                   timeout_s: float | None, *, own_task_file: bool) -> PeerEvaluator:
    """Build the evaluator of a peer task whose files are in ``seed_dir``.

    Args:
        style: ``"openevolve"`` or ``"shinka"``.
        seed_dir: The peer's directory (the task's seed folder).
        file: The task file, named in errors.
        program: The candidate file (default: the one :func:`detect_style` finds).
        timeout_s: The task file's limit (default: config.yaml's ``evaluator.timeout`` times
            the cascade's stages, or 300 s).
        own_task_file: Whether a task.toml supplies the proposer and objective (then
            config.yaml's ``llm`` and ``prompt`` sections are not used).

    Raises:
        ConfigError: The peer's files are missing or the program is not a file of the seed.
    """
    evaluator = _EVALUATOR[style]
    if not (seed_dir / evaluator).is_file():
        raise ConfigError(f"the seed folder has no {evaluator}", file=str(file),
                          key="evaluator.kind", expected=f"a {_LABEL[style]}-style seed folder")
    if (seed_dir / ADAPTER_FILE).exists():
        raise ConfigError(f"the seed folder holds {ADAPTER_FILE}, the name of dreamrsi's "
                          "adapter", file=str(file), expected="another name for that file")
    check_inside(seed_dir, seed_dir / evaluator, file=file, key="evaluator.kind")
    program = program or _only_program(seed_dir, style, file)
    if "/" in program or program in _NEVER_PROTECTED or not (seed_dir / program).is_file():
        raise ConfigError(f"'{program}' is not a file at the top of the seed folder",
                          file=str(file), key="evaluator.program",
                          expected="the candidate's file name, such as initial_program.py")
    check_inside(seed_dir, seed_dir / program, file=file, key="evaluator.program")
    parts = ["python3", "-m", ADAPTER_MODULE, style, program]
    limit, notes = timeout_s or _DEFAULT_TIMEOUT_S, list[str]()
    if style == "openevolve":
        extra, default_limit, notes = _openevolve_settings(seed_dir, own_task_file)
        parts += extra
        limit = timeout_s or default_limit
    spec = PeerSpec(style, program, evaluator,
                    "sha256:" + hashlib.sha256(adapter_source()).hexdigest(), tuple(notes))
    return PeerEvaluator(spec, shlex.join(parts), limit, _protected(seed_dir, program))


def _openevolve_settings(seed_dir: Path, own_task_file: bool) -> tuple[list[str], float,
                                                                        list[str]]:
    """The adapter's options from config.yaml, the evaluator's limit, and the notes."""
    config = read_openevolve_config(seed_dir / CONFIG_FILE)
    names = _top_level_functions(seed_dir / "evaluator.py")
    args: list[str] = []
    stages = 1
    if config.cascade is not None and "evaluate_stage1" in names:
        args += ["--cascade", ",".join(repr(t) for t in config.cascade)]
        for stage in (2, 3):  # stage N+1 runs only after stage N, behind threshold N
            if len(config.cascade) < stage - 1 or f"evaluate_stage{stage}" not in names:
                break
            stages = stage
    if config.evaluator_args:
        args += ["--kwargs", json.dumps(dict(config.evaluator_args), sort_keys=True)]
    notes = _notes(config.ignored, own_task_file, (seed_dir / CONFIG_FILE).is_file())
    phases = sorted(p.name for p in seed_dir.glob(PHASE_FILES) if p.is_file())
    if phases:
        notes.append(f"{', '.join(phases)} {'is' if len(phases) == 1 else 'are'} not read: "
                     f"dreamrsi reads {CONFIG_FILE} only"
                     + ("" if (seed_dir / CONFIG_FILE).is_file() else
                        " (there is none here, so its defaults apply)")
                     + f"; to use a phase's settings, copy its file to {CONFIG_FILE}")
    return args, config.timeout_s * stages, notes


def _only_program(seed_dir: Path, style: str, file: Path) -> str:
    programs = _programs(seed_dir, style)
    if len(programs) != 1:
        raise ConfigError(f"found {len(programs)} candidate files {_PROGRAM_STEM[style]}.*",
                          file=str(file), key="evaluator.program",
                          expected="the name of the candidate file")
    return programs[0]


def _top_level_functions(path: Path) -> set[str]:
    """Names of the functions a Python file defines at its top (the file is parsed, not run)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def _notes(ignored: tuple[str, ...], own_task_file: bool, has_config: bool) -> list[str]:
    notes = []
    if own_task_file and has_config:
        notes.append("config.yaml's llm and prompt sections are not used: task.toml's "
                     "[proposer] and objective are")
        ignored = tuple(k for k in ignored if not k.startswith(("llm.", "prompt.")))
    if ignored:
        notes.append(f"config.yaml keys dreamrsi does not use: {', '.join(ignored)}")
    return notes


def _protected(seed_dir: Path, program: str) -> tuple[str, ...]:
    """Every top-level entry of the seed but the candidate: the evaluator, its helpers, its
    data and config. Entries the seed's .gitignore leaves out, and empty folders, are not in
    any workspace and so are not protected."""
    ignored = _gitignore_patterns(seed_dir)
    out = []
    for entry in sorted(seed_dir.iterdir(), key=lambda p: p.name):
        name = entry.name
        if name == program or name in _NEVER_PROTECTED or name == ADAPTER_FILE:
            continue
        if any(fnmatch.fnmatch(name, pattern) for pattern in ignored):
            continue
        if entry.is_dir() and not entry.is_symlink() and not _holds_files(entry):
            continue
        out.append(name)
    return tuple(out)


def _gitignore_patterns(seed_dir: Path) -> list[str]:
    """The patterns of the seed's top .gitignore that can match a top-level name."""
    try:
        lines = (seed_dir / ".gitignore").read_text(errors="replace").splitlines()
    except OSError:
        return []
    patterns = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        line = line.removeprefix("**/").strip("/")
        if "/" not in line:
            patterns.append(line)
    return patterns


def _holds_files(folder: Path) -> bool:
    return any(p.is_file() or p.is_symlink() for p in folder.rglob("*")
               if "__pycache__" not in p.parts)
