"""``dreamrsi open``: a Dream Run over a user's git repository.

Opening reads the repository (a bare copy of it and the files of its ``HEAD``), writes the run's
task folder (``task.toml`` and the seed) inside the store, records the run with its root (the
repository's ``HEAD``, evaluated), the run's objective, criteria, constraints and budget as its
first event, and the primary dream ``d1`` with its working copy. A Dream Run is a run like any
other: ``status``, ``show``, ``best``, ``ledger`` and ``survive`` read it.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dreamrsi.core.policy import PolicySpec
from dreamrsi.engine.config import RunConfig
from dreamrsi.engine.run import new_run_id
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.budget import parse_budget
from dreamrsi.repo_runs.copies import RunFolders, clone_origin, git_plain
from dreamrsi.store.base import RecordStore, StoreHandle
from dreamrsi.store.values import RunRecord, RunStatus, TaskRecord
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import load_task

__all__ = ["OpenRequest", "check_repo", "check_request", "store_root", "task_toml", "write_task"]

MAX_TEXT = 4000
LLM_AGENT = "llm"
"""The ``--agent`` that names dreamrsi's own model client rather than a command."""
MAX_SECONDS = 86400
_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """What ``dreamrsi open`` was asked.

    Attributes:
        repo: The user's git repository (its ``HEAD`` is the root).
        objective: What the run is for, in words.
        eval_cmd: The command that judges a checkpoint, run in a fresh checkout of it.
        verdict: How its outcome becomes a score: ``json`` (it prints dreamrsi's verdict) or
            ``exit`` (its exit status and test counts).
        success: Success criteria, in words.
        constraints: Constraints, in words (shown in every brief).
        protect: Paths (relative to the repository) no checkpoint may change.
        budget: Budget words (``6h``, ``$20``, ``40``).
        agent: The agent command of unattended work (``dreamrsi work``), if any.
        eval_timeout_s: The evaluator's time limit.
        agent_timeout_s: One agent step's time limit.
        network: Whether commands may reach the network.
        read_paths: Host folders commands may read.
        seed: The run's seed.
        target: The score that meets the success criteria (unattended work stops there and
            offers the dream for ``submit``); ``None``: 1.0, a full pass.
        model: With ``agent = "llm"`` (dreamrsi's own model client as the agent): the model;
            ``base_url`` its OpenAI-compatible endpoint (default ``$OPENAI_BASE_URL``);
            ``files`` the files it is shown and may edit (default: every text file).
    """

    repo: Path
    objective: str
    eval_cmd: str
    verdict: str = "exit"
    success: Sequence[str] = ()
    constraints: Sequence[str] = ()
    protect: Sequence[str] = ()
    budget: Sequence[str] = ()
    agent: str | None = None
    eval_timeout_s: float = 600.0
    agent_timeout_s: float = 1800.0
    network: bool = False
    read_paths: Sequence[str] = ()
    seed: int = 0
    target: float | None = None
    model: str | None = None
    base_url: str | None = None
    files: Sequence[str] = ()

    def checked(self) -> OpenRequest:
        """Itself, once every field is sound (``ConfigError`` naming the first that is not)."""
        if not self.objective.strip():
            raise ConfigError("the objective is empty", key="--objective")
        if not self.eval_cmd.strip():
            raise ConfigError("the evaluation command is empty", key="--eval")
        for name in ("objective", "eval_cmd"):
            if len(getattr(self, name)) > MAX_TEXT:
                raise ConfigError(f"{name} is longer than {MAX_TEXT} characters")
        for key, command in (("--eval", self.eval_cmd), ("--agent", self.agent or "")):
            if "\0" in command:
                raise ConfigError("a command cannot hold a NUL byte", key=key)
        for key, seconds in (("--eval-timeout", self.eval_timeout_s),
                             ("--agent-timeout", self.agent_timeout_s)):
            if not 0 < seconds <= MAX_SECONDS:  # NaN too
                raise ConfigError(f"{seconds} is not a time limit above 0 and at most "
                                  f"{MAX_SECONDS} seconds", key=key)
        if self.agent == LLM_AGENT and not (self.model or "").strip():
            raise ConfigError("--agent llm needs the model to ask (--model NAME)",
                              key="--model")
        if self.agent != LLM_AGENT and (self.model or self.base_url or self.files):
            raise ConfigError("--model, --base-url and --files are for --agent llm",
                              key="--model")
        if self.target is not None and not math.isfinite(self.target):
            raise ConfigError(f"target {self.target} is not a finite number", key="--target")
        if self.verdict not in ("json", "exit"):
            raise ConfigError(f"verdict {self.verdict!r} is not json or exit", key="--verdict")
        for text in (*self.success, *self.constraints):
            if not text.strip() or len(text) > MAX_TEXT:
                raise ConfigError("a success criterion or constraint is empty or longer than "
                                  f"{MAX_TEXT} characters")
        return self


def store_root(store: StoreHandle) -> Path:
    """The folder of a store kept on disk (a Dream Run's folders live in it)."""
    root = getattr(store, "root", None)
    if root is None:
        raise ConfigError("a Dream Run needs a store on disk (--store PATH)")
    return Path(root)


def check_repo(repo: Path) -> Path:
    """The repository's top folder, if it is a git repository with a commit at ``HEAD``."""
    if not repo.is_dir():
        raise ConfigError(f"{repo} is not a folder", key="--repo")
    try:
        top = git_plain(["-C", str(repo), "rev-parse", "--show-toplevel"]).strip()
        git_plain(["-C", str(repo), "rev-parse", "--verify", "HEAD^{commit}"])
    except ConfigError as exc:
        raise ConfigError(f"{repo} is not a git repository with a commit at HEAD "
                          f"({exc.reason})", key="--repo") from None
    return Path(top)


def write_task(folders: RunFolders, req: OpenRequest, name: str) -> None:
    """Write the run's task folder: the seed (the files of ``origin.git``'s ``HEAD``) and a
    ``task.toml`` that holds the evaluator, the protected paths and the sandbox's settings."""
    folders.seed.mkdir(parents=True)
    git_plain(["--git-dir", str(folders.origin), "--work-tree", str(folders.seed),
               "read-tree", "--reset", "-u", "HEAD"], cwd=folders.seed)
    (folders.origin / "index").unlink(missing_ok=True)  # read-tree's, of no further use
    (folders.task / "task.toml").write_text(task_toml(req, name), encoding="utf-8")


def task_toml(req: OpenRequest, name: str) -> str:
    """The text of the run's ``task.toml``."""
    lines = [
        f"name = {_toml(name)}",
        f"objective = {_toml(req.objective)}",
        'direction = "maximize"',
        "[workspace]",
        'seed = "seed"',
        "[evaluator]",
        f"command = {_toml(req.eval_cmd)}",
        f"timeout_s = {float(req.eval_timeout_s)!r}",
        *([f'verdict = "{req.verdict}"'] if req.verdict != "json" else []),
        "[proposer]",
        *(_llm_lines(req) if req.agent == LLM_AGENT else
          ['kind = "command"', f"command = {_toml(req.agent or 'true')}"]),
        f"timeout_s = {float(req.agent_timeout_s)!r}",
        "[constraints]",
        f"protected_paths = {json.dumps(list(req.protect))}",
        f"network = {'true' if req.network else 'false'}",
        f"read_paths = {json.dumps([str(Path(p).absolute()) for p in req.read_paths])}",
        "",
    ]
    return "\n".join(lines)


def _llm_lines(req: OpenRequest) -> list[str]:
    """The ``[proposer]`` keys of dreamrsi's own model client as the run's agent."""
    return ['kind = "llm"', f"models = {json.dumps([req.model or ''])}",
            *([f"base_url = {_toml(req.base_url)}"] if req.base_url else []),
            f"files = {json.dumps(list(req.files))}"]


_OPTIONS = {"objective": "--objective", "evaluator.command": "--eval",
            "evaluator.timeout_s": "--eval-timeout", "evaluator.verdict": "--verdict",
            "proposer.command": "--agent", "proposer.timeout_s": "--agent-timeout",
            "proposer.models": "--model", "proposer.base_url": "--base-url",
            "proposer.files": "--files",
            "constraints.protected_paths": "--protect", "constraints.read_paths": "--read-path"}


def check_request(req: OpenRequest) -> Path:
    """The repository's top folder, once the whole request is sound: its fields, the
    repository, the budget, and the task it makes, loaded from a scratch folder, so that what
    the task format refuses (a protected path outside the repository, a read path that does not
    exist) is an error naming the option before anything is written."""
    req = req.checked()
    top = check_repo(req.repo.absolute())
    parse_budget(req.budget)
    with tempfile.TemporaryDirectory(prefix="dreamrsi-open-") as scratch:
        task = Path(scratch) / "task"
        (task / "seed").mkdir(parents=True)
        _protected_stubs(top, task / "seed", (*req.protect, *req.files))
        (task / "task.toml").write_text(task_toml(req, "repo-check"), encoding="utf-8")
        try:
            load_task(task)
        except ConfigError as exc:
            key = _OPTIONS.get(exc.key or "", exc.key)
            raise ConfigError(exc.reason, key=key, expected=exc.expected) from None
    return top


def _protected_stubs(repo: Path, seed: Path, protect: Sequence[str]) -> None:
    """Empty files at the paths of ``HEAD`` under the protected paths (the task's check of its
    protected paths looks for them in the seed); one that climbs out is left to that check."""
    inside = [p for p in protect
              if p and not Path(p).is_absolute() and ".." not in Path(p).parts]
    if not inside:
        return
    listed = git_plain(["--literal-pathspecs", "-C", str(repo), "ls-tree", "-r", "-z",
                        "--name-only", "HEAD", "--", *inside])
    for name in filter(None, listed.split("\0")):
        target = seed / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()


def _toml(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def open_records(store: RecordStore, req: OpenRequest) -> tuple[str, RunFolders, str]:
    """Copy the repository, write the task and record the run (its root not yet); returns the
    run id, its folders and the repository's ``HEAD``."""
    repo = check_request(req)
    req = req.checked()
    budget = parse_budget(req.budget)
    run_id = new_run_id()
    folders = RunFolders(store_root(store), run_id)
    try:
        head = clone_origin(repo, folders.origin)
        name = "repo-" + (_NAME.sub("-", repo.name).strip("-.") or "repository")[:60]
        write_task(folders, req, name)
        task = load_task(folders.task)
    except BaseException:
        discard_folder(folders.root)
        raise
    attempts = budget.get("attempts")
    config = RunConfig(budget=attempts, workers=1, wall_time_s=budget.get("wall_s"),
                       max_cost_usd=budget.get("money_usd"), seed=req.seed,
                       policy=PolicySpec("allocation"))
    now = time.time()
    record = RunRecord(run_id, task.digest, task.name, config.policy,
                       {**config.to_json(), "kind": "repo", "repo": str(repo)}, req.seed,
                       RunStatus.RUNNING, now, heartbeat_at=now, pid=os.getpid())
    with store.atomic():
        store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest, task.summary()))
        store.create_run(record)
    return run_id, folders, head
