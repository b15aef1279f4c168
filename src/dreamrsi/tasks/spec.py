"""Load ``task.toml`` into a validated, frozen :class:`Task`.

The file is checked with pydantic at the edge and converted at once into plain dataclasses.
Unknown keys are errors; every error names the file, the key and what was expected. A
directory without ``task.toml`` that is an OpenEvolve- or ShinkaEvolve-style one is read as
the table :func:`dreamrsi.tasks.peers.peer_task_table` gives (see docs/tasks.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dreamrsi.core.model import Direction
from dreamrsi.errors import ConfigError
from dreamrsi.tasks._inside import check_inside
from dreamrsi.tasks.bounds import (
    MAX_CPU_S,
    MAX_MEMORY_MB,
    MAX_OUTPUT_BYTES,
    MAX_PROCESSES,
    MAX_RESOURCE_UNITS,
    MAX_TIMEOUT_S,
    MAX_WORKSPACE_MB,
    MIN_MEMORY_MB,
    MIN_OUTPUT_BYTES,
    MIN_PROCESSES,
)
from dreamrsi.tasks.digest import TASK_FILE, combine, seed_files
from dreamrsi.tasks.families import composed_seed, shared_folders
from dreamrsi.tasks.peers import PeerSpec, peer_evaluator, peer_task_table
from dreamrsi.tasks.proposers import (
    CommandProposer,
    LlmProposer,
    ProposerSpec,
    check_llm,
    proposer_spec,
)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PROPOSERS: dict[str, type[CommandProposer] | type[LlmProposer]] = {
    "command": CommandProposer, "llm": LlmProposer}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Workspace(_Strict):
    seed: str = Field(min_length=1)


class _Evaluator(_Strict):
    command: str | None = Field(default=None, min_length=1)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    kind: Literal["command", "openevolve", "shinka"] = "command"
    program: str | None = Field(default=None, min_length=1)  # openevolve and shinka only
    verdict: Literal["json", "exit"] | None = None  # command only; None: "json"


class _Constraints(_Strict):
    protected_paths: list[str] = Field(default_factory=list)
    on_protected_change: Literal["invalid", "restore"] = "invalid"
    memory_mb: int = Field(default=4096, ge=MIN_MEMORY_MB, le=MAX_MEMORY_MB)
    cpu_s: int | None = Field(default=None, gt=0, le=MAX_CPU_S)
    max_processes: int = Field(default=256, ge=MIN_PROCESSES, le=MAX_PROCESSES)
    max_output_bytes: int = Field(default=1_000_000, ge=MIN_OUTPUT_BYTES, le=MAX_OUTPUT_BYTES)
    max_workspace_mb: int = Field(default=1024, gt=0, le=MAX_WORKSPACE_MB)
    max_scratch_mb: int = Field(default=256, gt=0, le=65536)
    isolation: Literal["auto", "required", "off"] | None = None
    network: bool = False
    pass_env: list[str] = Field(default_factory=list)
    read_paths: list[str] = Field(default_factory=list)


class _Review(_Strict):
    command: str | None = Field(default=None, min_length=1)
    model: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one(self) -> _Review:
        if (self.command is None) == (self.model is None):
            raise ValueError("name exactly one of 'command' or 'model'")
        return self


class _Survival(_Strict):
    repeats: int = Field(default=3, ge=1, le=100)
    commands: list[str] = Field(default_factory=list)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    tolerance: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    relative_tolerance: float = Field(default=0.0, ge=0, le=1, allow_inf_nan=False)
    fresh: str | None = Field(default=None, min_length=1)
    allow_changes: list[str] = Field(default_factory=list)
    review: _Review | None = None


class _Resources(_Strict):
    cpus: float = Field(default=1.0, gt=0, le=MAX_RESOURCE_UNITS, allow_inf_nan=False)
    gpus: float = Field(default=0.0, ge=0, le=MAX_RESOURCE_UNITS, allow_inf_nan=False)
    memory_mb: int | None = Field(default=None, ge=1, le=MAX_MEMORY_MB)

    @model_validator(mode="after")
    def _whole_above_one(self) -> _Resources:
        for key, value in (("cpus", self.cpus), ("gpus", self.gpus)):
            if value > 1 and not float(value).is_integer():
                raise ValueError(f"{key} = {value}: a share of a unit must be below 1, and "
                                 "more than one unit a whole number (as Ray schedules them)")
        return self


class _TaskFile(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    objective: str = Field(min_length=1)
    direction: Literal["maximize", "minimize"]
    workspace: _Workspace
    evaluator: _Evaluator
    proposer: dict[str, Any]  # checked by the model of its kind (tasks/proposers.py)
    constraints: _Constraints = Field(default_factory=_Constraints)
    survival: _Survival = Field(default_factory=_Survival)
    resources: _Resources = Field(default_factory=_Resources)


class VerdictSource(StrEnum):
    """Where an evaluator's verdict is read (``[evaluator] verdict``): ``json``, the JSON
    object the command prints (dreamrsi's contract); ``exit``, the finished command itself
    (the fraction of tests passed that its pytest summary or JUnit reports count, else its
    exit status; see :mod:`dreamrsi.engine.exit_verdict`)."""

    JSON = "json"
    EXIT = "exit"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A shell command run inside the workspace, with its time limit and, for an evaluator,
    where its verdict is read."""

    command: str
    timeout_s: float
    verdict: VerdictSource = VerdictSource.JSON


class ProtectedChange(StrEnum):
    """What an attempt whose proposer changed a protected path becomes: ``invalid`` (the
    files are restored and it is not evaluated) or ``restore`` (restored, then evaluated)."""

    INVALID = "invalid"
    RESTORE = "restore"


@dataclass(frozen=True, slots=True)
class Constraints:
    """Hard constraints, resource limits and sandbox settings of every command of the task.

    ``isolation`` is None unless the task file names a mode (the engine then chooses:
    ``auto`` for built-in tasks, ``required`` for the rest). ``network``, ``pass_env`` (host
    variables passed on by name) and ``read_paths`` (host paths shown read-only) are what a
    task asks of the sandbox beyond the defaults; ``max_workspace_mb`` caps the files a
    proposer may leave in its workspace, and what each writable folder of a command (the
    workspace, the io folder that is its ``$HOME``) holds while it runs; ``max_scratch_mb``
    is the size of each fresh ``/tmp``, ``/var/tmp`` and ``/dev/shm`` of a command.
    """

    protected_paths: tuple[str, ...] = ()
    on_protected_change: ProtectedChange = ProtectedChange.INVALID
    memory_mb: int = 4096
    cpu_s: int | None = None
    max_processes: int = 256
    max_output_bytes: int = 1_000_000
    max_workspace_mb: int = 1024
    isolation: str | None = None
    network: bool = False
    pass_env: tuple[str, ...] = ()
    read_paths: tuple[str, ...] = ()
    max_scratch_mb: int = 256


@dataclass(frozen=True, slots=True)
class Resources:
    """What one attempt needs of a worker host (``[resources]``): CPUs and GPUs (a share
    below 1, or whole units) and memory in MiB (None: whatever the scheduler gives). The local
    executor runs ``workers`` attempts at once whatever they declare; the Ray executor asks
    the cluster for this much per attempt."""

    cpus: float = 1.0
    gpus: float = 0.0
    memory_mb: int | None = None


@dataclass(frozen=True, slots=True)
class ReviewSpec:
    """A reviewer whose notes annotate a survival report and never gate it: a command (run
    in the sandbox on the candidate) or a model (through the task's model client)."""

    command: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SurvivalSpec:
    """How an independent survival pass re-checks a result (``[survival]``).

    Attributes:
        repeats: How many times the evaluator runs on the candidate and on the base.
        commands: Hard constraints: each must exit 0 on the candidate's checkout.
        timeout_s: Time limit of each of ``commands`` and of ``fresh``.
        tolerance: The task's noise, in raw score units: how far a re-run may be from the
            recorded score, and the repeats from each other, and still reproduce.
        relative_tolerance: The same as a fraction of the score's magnitude, for scores
            whose noise scales with them (timings); the larger of the two applies
            (:meth:`allowed_error`).
        fresh: A command that judges the checkout on instances the search never saw (or
            re-checks its output independently of the evaluator); it prints a verdict as the
            evaluator does and reads ``$DREAM_FRESH_SEED``. Its files must be protected, so
            it runs from the trusted copy. None: the evaluator is the only check.
        allow_changes: Globs of dependency or configuration files the candidate may change.
        review: A reviewer whose notes are attached as non-admissible, or None.
    """

    repeats: int = 3
    commands: tuple[str, ...] = ()
    timeout_s: float = 600.0
    tolerance: float = 0.0
    fresh: CommandSpec | None = None
    allow_changes: tuple[str, ...] = ()
    review: ReviewSpec | None = None
    relative_tolerance: float = 0.0

    def allowed_error(self, reference: float) -> float:
        """How far a measurement near ``reference`` may be off and still agree with it.

        >>> SurvivalSpec(tolerance=0.01, relative_tolerance=0.1).allowed_error(2.0)
        0.2
        """
        return max(self.tolerance, self.relative_tolerance * abs(reference))


@dataclass(frozen=True, slots=True)
class Task:
    """A validated task.

    Attributes:
        name: Short name, used to find the task and in run listings.
        objective: What the search is for, in words (shown to proposers).
        direction: Whether raw scores are maximised or minimised.
        directory: The task directory (holds ``task.toml``).
        seed_dir: The folder the root workspace starts from.
        evaluator: The evaluator command.
        proposer: The proposer: a command, or a model's settings (``kind = "llm"``).
        constraints: Protected paths and resource limits.
        survival: Survival pass settings.
        digest: Digest of ``task.toml`` and every seed file; changes when the task does.
        evaluator_digest: Digest of the evaluator command and the protected files.
        peer: For an OpenEvolve- or ShinkaEvolve-style task, its style and candidate program
            (the evaluator command runs dreamrsi's adapter); None otherwise.
        resources: What one attempt needs of a worker host (``[resources]``).
    """

    name: str
    objective: str
    direction: Direction
    directory: Path
    seed_dir: Path
    evaluator: CommandSpec
    proposer: ProposerSpec
    constraints: Constraints = field(default_factory=Constraints)
    survival: SurvivalSpec = field(default_factory=SurvivalSpec)
    digest: str = ""
    evaluator_digest: str = ""
    peer: PeerSpec | None = None
    resources: Resources = field(default_factory=Resources)

    def _proposer_summary(self) -> dict[str, Any]:
        p = self.proposer
        out: dict[str, Any] = {"kind": p.kind, "command": p.command, "timeout_s": p.timeout_s}
        if p.llm is not None:
            out["models"] = [m.name for m in p.llm.models]
            out["edit_format"] = p.llm.edit_format
        return out

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description (stored with each run)."""
        return {
            "name": self.name,
            "objective": self.objective,
            "direction": self.direction.value,
            "directory": str(self.directory),
            "evaluator": {"command": self.evaluator.command,
                          "timeout_s": self.evaluator.timeout_s,
                          **({"verdict": self.evaluator.verdict.value}
                             if self.evaluator.verdict is not VerdictSource.JSON else {}),
                          **({"peer": self.peer.summary()} if self.peer else {})},
            "proposer": self._proposer_summary(),
            "protected_paths": list(self.constraints.protected_paths),
            "digest": self.digest,
            "evaluator_digest": self.evaluator_digest,
        }


def load_task(directory: str | Path) -> Task:
    """Load and validate ``DIRECTORY/task.toml``.

    Args:
        directory: The task directory (or the path of its ``task.toml``).

    Returns:
        The validated task, with digests computed over its files.

    Raises:
        ConfigError: The file is missing, not TOML, or breaks the schema; or the seed folder
            or a protected path does not exist.
    """
    path = Path(directory)
    if path.name == TASK_FILE and path.is_file():
        path = path.parent
    file = path / TASK_FILE
    if not path.is_dir():
        raise ConfigError("task directory does not exist", file=str(path))
    data, raw_bytes = _read_table(path, file)
    try:
        spec = _TaskFile.model_validate(data)
    except ValidationError as exc:
        raise _config_error(file, exc) from None
    proposer = _proposer(file, spec.proposer)
    return _to_task(path.resolve(), file, spec, proposer, raw_bytes)


def _read_table(path: Path, file: Path) -> tuple[dict[str, Any], bytes]:
    """The task table and the bytes its digest covers: ``task.toml``, or for a peer's
    directory without one, the table dreamrsi reads it as (its canonical JSON)."""
    check_inside(path, file, file=file)
    if not file.is_file():
        table = peer_task_table(path)
        if table is None:
            raise ConfigError(f"no {TASK_FILE} in the task directory, and it is not an "
                              "OpenEvolve-style directory (initial_program.* and evaluator.py) "
                              "or a ShinkaEvolve-style one (initial.* and evaluate.py)",
                              file=str(file))
        return table, json.dumps(table, sort_keys=True).encode()
    raw_bytes = file.read_bytes()
    try:
        return tomllib.loads(raw_bytes.decode("utf-8")), raw_bytes
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(file)) from exc


def _proposer(file: Path, table: dict[str, Any]) -> ProposerSpec:
    """The ``[proposer]`` table, checked by the schema of its ``kind``."""
    kind = table.get("kind", "command")
    model = _PROPOSERS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ConfigError(f"invalid value {kind!r}", file=str(file), key="proposer.kind",
                          expected=" | ".join(_PROPOSERS))
    try:
        return proposer_spec(model.model_validate(table))
    except ValidationError as exc:
        raise _config_error(file, exc, model, ("proposer",)) from None


def _config_error(file: Path, exc: ValidationError, model: type[BaseModel] | None = None,
                  prefix: tuple[str, ...] = ()) -> ConfigError:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in (*prefix, *err["loc"])) or "(top level)"
    kind = err["type"]
    if kind == "missing":
        return ConfigError("required key is missing", file=str(file), key=key)
    if kind == "extra_forbidden":
        return ConfigError("unknown key", file=str(file), key=key,
                           expected=_allowed_keys(err["loc"], model or _TaskFile))
    return ConfigError(f"invalid value {err.get('input')!r}", file=str(file), key=key,
                       expected=err["msg"].lower())


def _allowed_keys(loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    for part in loc[:-1]:
        annotation = model.model_fields[str(part)].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model = annotation
    return "one of " + ", ".join(model.model_fields)


def _to_task(directory: Path, file: Path, spec: _TaskFile, proposer: ProposerSpec,
             raw_bytes: bytes) -> Task:
    shared = shared_folders(directory)
    own_seed = _seed_dir(directory, file, spec.workspace.seed, missing_ok=bool(shared))
    files = seed_files(directory, own_seed)
    seed_dir = composed_seed(shared, own_seed if own_seed.is_dir() else None,
                             combine(files)) if shared else own_seed
    evaluator, peer, derived = _evaluator(file, spec, seed_dir)
    for rel in spec.constraints.protected_paths:
        _check_relative(file, rel)
        _check_no_link_on_the_way(file, seed_dir, rel)
        target = seed_dir / rel
        if not (target.exists() or target.is_symlink()):
            raise ConfigError(f"protected path '{rel}' is not in the seed folder",
                              file=str(file), key="constraints.protected_paths")
        _check_copyable(file, seed_dir, rel)
    c = spec.constraints
    _check_sandbox_asks(file, c)
    protected_paths = tuple(dict.fromkeys([*derived, *c.protected_paths]))
    constraints = Constraints(protected_paths, ProtectedChange(c.on_protected_change), c.memory_mb,
                              c.cpu_s, c.max_processes, c.max_output_bytes, c.max_workspace_mb,
                              c.isolation, c.network, tuple(c.pass_env), tuple(c.read_paths),
                              c.max_scratch_mb)
    protected = {p: d for p, d in files.items() if _under_any(p, constraints.protected_paths)}
    prompts = {} if proposer.llm is None else check_llm(
        file, proposer.llm, seed_dir, constraints.protected_paths, constraints.pass_env)
    adapter = {"/adapter": peer.adapter_digest} if peer else {}  # no seed path starts with /
    # where the verdict is read changes what a score means (json, the default, adds nothing:
    # the digests of tasks recorded before the key existed stay as they were)
    verdict = {} if evaluator.verdict is VerdictSource.JSON else {
        "/verdict": evaluator.verdict.value}
    return Task(
        name=spec.name,
        objective=spec.objective,
        direction=Direction(spec.direction),
        directory=directory,
        seed_dir=seed_dir,
        evaluator=evaluator,
        proposer=proposer,
        constraints=constraints,
        survival=_survival(spec.survival, evaluator),
        digest=combine({"task.toml": hashlib.sha256(raw_bytes).hexdigest(), **files,
                        **{f"\0{k}": v for k, v in prompts.items()}, **adapter}),
        evaluator_digest=combine({"command": evaluator.command, **protected, **adapter,
                                  **verdict}),
        peer=peer,
        resources=Resources(spec.resources.cpus, spec.resources.gpus, spec.resources.memory_mb),
    )


def _survival(spec: _Survival, evaluator: CommandSpec) -> SurvivalSpec:
    """The ``[survival]`` settings; commands inherit the evaluator's time limit."""
    timeout = spec.timeout_s if spec.timeout_s is not None else evaluator.timeout_s
    return SurvivalSpec(
        repeats=spec.repeats, commands=tuple(spec.commands), timeout_s=timeout,
        tolerance=spec.tolerance,
        fresh=None if spec.fresh is None else CommandSpec(spec.fresh, timeout),
        allow_changes=tuple(spec.allow_changes),
        review=None if spec.review is None else ReviewSpec(spec.review.command,
                                                           spec.review.model),
        relative_tolerance=spec.relative_tolerance)


def _evaluator(file: Path, spec: _TaskFile,
               seed_dir: Path) -> tuple[CommandSpec, PeerSpec | None, tuple[str, ...]]:
    """The evaluator command; for a peer's style, the adapter, its spec and the paths it
    protects (every seed entry but the candidate)."""
    ev = spec.evaluator
    if ev.kind == "command":
        if ev.command is None:
            raise ConfigError("required key is missing", file=str(file), key="evaluator.command")
        if ev.program is not None:
            raise ConfigError("'program' is a key of the peers' evaluators", file=str(file),
                              key="evaluator.program", expected="kind openevolve or shinka")
        verdict = VerdictSource(ev.verdict or "json")
        if verdict is VerdictSource.EXIT and spec.direction != "maximize":
            raise ConfigError("an evaluator with verdict 'exit' scores the fraction of tests "
                              "passed (or 1 for exit status 0), which is maximised",
                              file=str(file), key="direction", expected="maximize")
        return CommandSpec(ev.command, ev.timeout_s or 60.0, verdict), None, ()
    if ev.verdict is not None:
        raise ConfigError(f"a {ev.kind} evaluator's verdict is its peer's result",
                          file=str(file), key="evaluator.verdict",
                          expected="no verdict key (it is a key of kind command)")
    if ev.command is not None:
        raise ConfigError(f"a {ev.kind} evaluator runs dreamrsi's adapter, not a command",
                          file=str(file), key="evaluator.command", expected="no command")
    if spec.direction != "maximize":
        raise ConfigError(f"{ev.kind} evaluators maximise combined_score", file=str(file),
                          key="direction", expected="maximize")
    built = peer_evaluator(ev.kind, seed_dir, file, ev.program, ev.timeout_s,
                           own_task_file=file.is_file())
    return CommandSpec(built.command, built.timeout_s), built.spec, built.protected_paths


def _seed_dir(directory: Path, file: Path, seed: str, *, missing_ok: bool = False) -> Path:
    """The seed folder: inside the (resolved) task directory once symbolic links are
    followed, so a task can never make the engine import files from elsewhere (``missing_ok``:
    a built-in task of a family may have no files of its own)."""
    where = "a folder inside the task directory, given relative to it"
    if Path(seed).is_absolute():
        raise ConfigError(f"seed folder '{seed}' is an absolute path", file=str(file),
                          key="workspace.seed", expected=where)
    seed_dir = (directory / seed).resolve()
    if not seed_dir.is_relative_to(directory):
        raise ConfigError(f"seed folder '{seed}' is outside the task directory (it resolves "
                          f"to {seed_dir})", file=str(file), key="workspace.seed",
                          expected=where)
    if not seed_dir.is_dir() and not (missing_ok and not seed_dir.exists()):
        raise ConfigError(f"seed folder '{seed}' does not exist",
                          file=str(file), key="workspace.seed", expected="a folder")
    return seed_dir


def _check_no_link_on_the_way(file: Path, seed_dir: Path, rel: str) -> None:
    """A protected path's folders must be real folders of the seed: a symbolic link on the
    way would make the engine read (and restore) files outside the workspace. The path itself
    may be a link; it is then protected as a link."""
    folder = seed_dir
    for part in Path(rel).parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            raise ConfigError(f"protected path '{rel}' goes through the symbolic link "
                              f"'{folder.relative_to(seed_dir).as_posix()}'", file=str(file),
                              key="constraints.protected_paths",
                              expected="a path whose folders are real folders of the seed")


def _check_copyable(file: Path, seed_dir: Path, rel: str) -> None:
    """A protected path is copied (the trusted copy) as files, folders and links: a FIFO,
    socket or device at it or below it cannot be."""
    top = seed_dir / rel
    found = [top]
    if top.is_dir() and not top.is_symlink():  # links are copied as links: never entered
        found += [Path(folder) / name for folder, dirs, files in os.walk(top)
                  for name in (*dirs, *files)]
    for path in found:
        mode = path.lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            where = path.relative_to(seed_dir).as_posix()
            raise ConfigError(f"protected path '{rel}' holds '{where}', which is not a file, "
                              "folder or link (a FIFO, socket or device cannot be protected)",
                              file=str(file), key="constraints.protected_paths",
                              expected="regular files, folders and links")


def _check_relative(file: Path, rel: str) -> None:
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not rel.strip():
        raise ConfigError(f"protected path '{rel}' must be relative to the workspace",
                          file=str(file), key="constraints.protected_paths",
                          expected="a relative path without '..'")


def _check_sandbox_asks(file: Path, c: _Constraints) -> None:
    """Check what a task asks of the sandbox beyond the defaults: variable names, read paths."""
    for name in c.pass_env:
        if not _ENV_NAME.match(name):
            raise ConfigError(f"'{name}' is not an environment variable name", file=str(file),
                              key="constraints.pass_env", expected="names such as MY_DATA_DIR")
    for path in c.read_paths:
        if not Path(path).is_absolute():
            raise ConfigError(f"read path '{path}' is not absolute", file=str(file),
                              key="constraints.read_paths",
                              expected="absolute paths of host files or folders")
        if not os.path.exists(path):  # the sandbox could not show it: every command would fail
            raise ConfigError(f"read path '{path}' does not exist", file=str(file),
                              key="constraints.read_paths",
                              expected="absolute paths of host files or folders that exist")


def _under_any(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in prefixes)
