"""The config repository: the git repository a user owns that holds their agent's config.

At its root, ``objective.toml`` (the weights and the floor, :mod:`~dreamrsi.knowledge.check`)
and ``dreamrsi.toml``, which says how to run the agent and what learning may change::

    [agent]
    command = "python3 agent.py"   # run over goldens: $DREAM_GOLDENS in, $DREAM_OUTPUTS out
    timeout_s = 600
    model = "gpt-4o-mini"          # the agent's model: a change re-validates the pool
    base_url = ""                  # given to the agent as $DREAM_MODEL_BASE_URL
    pass_env = ["OPENAI_API_KEY"]  # variables the agent receives by name
    network = true                 # the agent must reach its model
    [learn]
    lessons = "LESSONS.md"         # the memory file: one lesson a line, "- rule text"
    editable = ["prompts/", "skills/"]
    heldout_rotation = 3           # the held-out goldens' parts, one a night
    min_gain = 0.0                 # a proposal must raise the held-out objective by more

Learning never works in the user's checkout: :func:`scratch_clone` clones its HEAD, and
:func:`apply_proposal` changes a copy only, through :func:`~dreamrsi.knowledge.proposal.
check_edit` and with no symbolic link on the way.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.goldens import Golden
from dreamrsi.knowledge.proposal import MAX_RULE_CHARS, ConfigEdit, Proposal, check_edit

__all__ = ["CONFIG_FILE", "PROTECTED", "AgentConfig", "LearnConfig", "RepoConfig",
           "apply_proposal", "copy_tree", "editable_files", "git", "heldout_part", "lesson_row",
           "load_config", "scratch_clone"]

CONFIG_FILE = "dreamrsi.toml"
PROTECTED = (CONFIG_FILE, "objective.toml")
"""Files no proposal may edit, whatever ``editable`` says: the gate's own judges."""
MAX_FILE_BYTES = 1 << 20
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_GIT_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
             "-c", "commit.gpgsign=false", "-c", "user.name=dreamrsi",
             "-c", "user.email=dreamrsi@localhost")


class AgentConfig(NamedTuple):
    """``[agent]``: how the user's agent runs over goldens."""

    command: str
    timeout_s: float = 600.0
    model: str = ""
    base_url: str = ""
    pass_env: tuple[str, ...] = ()
    network: bool = True


class LearnConfig(NamedTuple):
    """``[learn]``: what learning may change and how it gates."""

    lessons: str = "LESSONS.md"
    editable: tuple[str, ...] = ("prompts/", "skills/")
    heldout_rotation: int = 1
    min_gain: float = 0.0


class RepoConfig(NamedTuple):
    """A config repository's ``dreamrsi.toml``."""

    root: Path
    agent: AgentConfig
    learn: LearnConfig

    @property
    def allowed(self) -> tuple[str, ...]:
        """The paths an edit may change: ``editable`` and the lessons file."""
        return (*self.learn.editable, self.learn.lessons)


def _table(data: dict[str, Any], name: str, fields: dict[str, type | tuple[type, ...]],
           where: str) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"[{name}] is not a table", file=where, key=name)
    unknown = set(table) - set(fields)
    if unknown:
        raise ConfigError("unknown key", file=where, key=f"{name}.{sorted(unknown)[0]}",
                          expected="one of " + ", ".join(fields))
    for key, kind in fields.items():
        if key in table and (isinstance(table[key], bool) and kind is not bool
                             or not isinstance(table[key], kind)):
            raise ConfigError("wrong type", file=where, key=f"{name}.{key}",
                              expected=getattr(kind, "__name__", "a number"))
    return table


def _names(value: list[Any], where: str, key: str, pattern: str, what: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) and re.fullmatch(pattern, v) for v in value):
        raise ConfigError("not a list of " + what, file=where, key=key)
    return tuple(value)


def load_config(root: Path) -> RepoConfig:
    """The ``dreamrsi.toml`` of the config repository ``root``.

    Raises:
        ConfigError: No such file, or a key that is unknown, of the wrong type or out of
            range (the message names the file and the key).
    """
    where = str(root / CONFIG_FILE)
    try:
        data = tomllib.loads((root / CONFIG_FILE).read_text())
    except FileNotFoundError:
        raise ConfigError("no such file: the config repository needs one with [agent] "
                          "command", file=where) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read it ({exc})", file=where) from None
    unknown = set(data) - {"agent", "learn"}
    if unknown:
        raise ConfigError(f"unknown tables {', '.join(sorted(unknown))}", file=where,
                          expected="agent, learn")
    a = _table(data, "agent", {"command": str, "timeout_s": (int, float), "model": str,
                               "base_url": str, "pass_env": list, "network": bool}, where)
    if not str(a.get("command", "")).strip():
        raise ConfigError("the agent's command is missing", file=where, key="agent.command")
    timeout = float(a.get("timeout_s", 600.0))
    if not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError("not a positive number", file=where, key="agent.timeout_s")
    agent = AgentConfig(a["command"], timeout, a.get("model", ""), a.get("base_url", ""),
                        _names(a.get("pass_env", []), where, "agent.pass_env",
                               r"[A-Za-z_][A-Za-z0-9_]*", "variable names"),
                        a.get("network", True))
    n = _table(data, "learn", {"lessons": str, "editable": list, "heldout_rotation": int,
                               "min_gain": (int, float)}, where)
    lessons = n.get("lessons", "LESSONS.md")
    editable = _names(n.get("editable", ["prompts/", "skills/"]), where, "learn.editable",
                      r".+", "paths")
    for path in (lessons, *editable):
        try:
            bare = path.rstrip("/")
            check_edit(ConfigEdit(bare, "", ""), (bare,))
        except ConfigError as exc:
            raise ConfigError(exc.reason, file=where, key="learn") from None
        if path.strip("/") in PROTECTED:
            raise ConfigError(f"'{path}' is one of the gate's own files", file=where,
                              key="learn", expected="prompts, skills or memory files")
    rotation = n.get("heldout_rotation", 1)
    if rotation < 1:
        raise ConfigError("not a positive integer", file=where, key="learn.heldout_rotation")
    min_gain = float(n.get("min_gain", 0.0))
    if not math.isfinite(min_gain) or min_gain < 0:
        raise ConfigError("not a number of 0 or more", file=where, key="learn.min_gain")
    return RepoConfig(root, agent, LearnConfig(lessons, editable, rotation, min_gain))


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with no hooks, signing or fsmonitor; its stdout.

    Raises:
        ConfigError: git failed (its message).
    """
    res = subprocess.run(["git", *_GIT_SAFE, "-C", str(repo), *args], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    if res.returncode != 0:
        raise ConfigError(f"git {args[0]} failed in {repo}: {res.stderr.strip()[-500:]}")
    return res.stdout


def scratch_clone(repo: Path, into: Path) -> tuple[Path, str]:
    """A clone of the config repository's HEAD in ``into``/config, and that commit.

    Raises:
        ConfigError: ``repo`` is not a git repository with a commit.
    """
    if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        raise ConfigError(f"{repo} is not a git repository (the config repository is one)")
    head = git(repo, "rev-parse", "--verify", "HEAD^{commit}").strip()
    clone = into / "config"
    git(into, "clone", "-q", "--no-hardlinks", "--no-checkout", str(repo.resolve()),
        str(clone))
    git(clone, "checkout", "-q", "--detach", head)
    return clone, head


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a config tree without its ``.git`` (links copied as links, never followed)."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return dst


def lesson_row(text: str) -> str:
    """The lessons file's row for a rule: ``- text``, on one line.

    Raises:
        ConfigError: The rule is empty or longer than :data:`MAX_RULE_CHARS`.
    """
    one = " ".join(text.split()).removeprefix("- ").strip()
    if not one:
        raise ConfigError("the rule is empty")
    if _CONTROL.search(one):
        raise ConfigError("the rule holds control characters")
    if len(one) > MAX_RULE_CHARS:
        raise ConfigError(f"the rule is longer than {MAX_RULE_CHARS} characters")
    return f"- {one}"


def _target(root: Path, rel: str) -> Path:
    """``root``/``rel``, refused when a part of the way is a link or not a folder."""
    here = root
    parts = Path(rel).parts
    for i, part in enumerate(parts):
        here = here / part
        if here.is_symlink():
            raise ConfigError(f"the edit's path {rel!r} goes through a symbolic link")
        if i < len(parts) - 1 and here.exists() and not here.is_dir():
            raise ConfigError(f"the edit's path {rel!r} goes through a file")
    if here.exists() and not here.is_file():
        raise ConfigError(f"the edit's path {rel!r} is not a regular file")
    return here


def _read(path: Path) -> str:
    if not path.exists():
        return ""
    data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path.name} is over {MAX_FILE_BYTES} bytes")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ConfigError(f"{path.name} is not UTF-8 text") from None


def apply_proposal(tree: Path, proposal: Proposal, cfg: RepoConfig) -> str:
    """Apply a proposal to the config copy ``tree``: its edit, or its rule as a row appended
    to the lessons file; the path it changed.

    Raises:
        ConfigError: The path is not one learning may edit, goes through a link, or the
            edit does not apply (``old`` not found exactly once), or the result is too big.
    """
    edit = proposal.edit or ConfigEdit(cfg.learn.lessons, "", lesson_row(proposal.text) + "\n")
    rel = check_edit(edit, cfg.allowed)
    if rel in PROTECTED:
        raise ConfigError(f"the edit's path {rel!r} is one of the gate's own files")
    path = _target(tree, rel)
    text = before = _read(path)
    if edit.old:
        count = text.count(edit.old)
        if count != 1:
            raise ConfigError(f"the edit's old text occurs {count} times in {rel}, not once")
        text = text.replace(edit.old, edit.new)
    else:
        if not edit.new:
            raise ConfigError("the edit adds nothing")
        text = (text if not text or text.endswith("\n") else text + "\n") + edit.new
    if text == before:
        raise ConfigError(f"the edit changes nothing in {rel}")
    if _CONTROL.search(edit.new.replace("\r", "")):
        raise ConfigError("the edit's new text holds control characters")
    if len(text.encode()) > MAX_FILE_BYTES:
        raise ConfigError(f"the edit makes {rel} larger than {MAX_FILE_BYTES} bytes")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return rel


def heldout_part(goldens: Sequence[Golden], night: int, parts: int) -> list[Golden]:
    """This night's part of the held-out goldens (canaries aside): the goldens sorted by a
    digest of their id, dealt round-robin into ``parts``; night N takes part N mod ``parts``.

    Raises:
        ConfigError: The part holds no golden.
    """
    held = sorted((g for g in goldens if g.split == "heldout" and not g.canary),
                  key=lambda g: hashlib.sha256(g.golden_id.encode()).hexdigest())
    index = night % parts
    part = held[index::parts]
    if not part:
        raise ConfigError(f"night {night}'s held-out part ({index + 1} of {parts}) holds no "
                          "golden: add held-out goldens (`dreamrsi goldens add --split "
                          "heldout`) or lower [learn] heldout_rotation")
    return part


def editable_files(tree: Path, cfg: RepoConfig, *, max_files: int = 50,
                   max_bytes: int = 64 * 1024) -> dict[str, str]:
    """The text of the files an edit may change (the lessons file first), by relative path:
    regular UTF-8 files of at most ``max_bytes``, none through a link, at most ``max_files``."""
    found: list[Path] = []
    for root in (cfg.learn.lessons, *cfg.learn.editable):
        top = tree / root.rstrip("/")
        if any((tree / Path(*Path(root).parts[:i + 1])).is_symlink()
               for i in range(len(Path(root).parts))):
            continue
        if top.is_file():
            found.append(top)
        for folder, dirs, names in os.walk(top):  # links to folders are not walked
            dirs.sort()
            found += [Path(folder) / n for n in sorted(names)]
    out: dict[str, str] = {}
    for path in found:
        rel = path.relative_to(tree).as_posix()
        if len(out) >= max_files or rel in out or path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size <= max_bytes:
            try:
                out[rel] = path.read_text()
            except UnicodeDecodeError:
                continue
    return out
