"""What distilling proposes and the gate judges: a rule, or a concrete edit of a config file.

A :class:`Proposal` is born from one group of selected traces. Its ``text`` is the rule, said
as an instruction (never a summary); its ``edit``, when given, is the concrete change of one
file of the user's config repository that carries the rule (a prompt delta, a skill's
instruction); without one, the rule becomes a memory row: a line appended to the config's
lessons file. Proposals are untrusted (a model wrote them): :func:`check_edit` is the one place
their paths are judged.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError

__all__ = ["MAX_RULE_CHARS", "ConfigEdit", "Proposal", "Rejection", "check_edit"]

MAX_RULE_CHARS = 2_000


class ConfigEdit(NamedTuple):
    """Replace ``old`` (exact text, occurring once) by ``new`` in the config file ``path``
    (relative, POSIX); ``old`` empty appends ``new`` to the file (created if missing)."""

    path: str
    old: str
    new: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "old": self.old, "new": self.new}


class Proposal(NamedTuple):
    """A rule distilled from a group of traces, with the edit that carries it, if any."""

    text: str
    scope: str
    sources: tuple[str, ...]          # the trace ids it was distilled from
    distiller: str                    # "statistical", or "model:NAME"
    group: str = ""                   # the id of the group it came from
    edit: ConfigEdit | None = None    # None: a memory row in the lessons file

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "scope": self.scope, "sources": list(self.sources),
                "distiller": self.distiller, "group": self.group,
                "edit": self.edit.as_dict() if self.edit else None}


class Rejection(StrEnum):
    """Why the gate discarded a proposal."""

    INVALID = "invalid"              # the edit names a path it may not touch, or does not apply
    AGENT_FAILED = "agent_failed"    # the agent did not run on the edited config
    JUDGE_FAILED = "judge_failed"    # the judge model could not judge a rubric golden
    CANARY = "canary"                # a canary's score moved: the change lies
    FLOOR = "floor"                  # a metric fell below the CI floor
    NO_GAIN = "no_gain"              # the held-out objective did not improve
    DUPLICATE = "duplicate"          # the pool already holds this rule


def check_edit(edit: ConfigEdit, allowed: tuple[str, ...]) -> str:
    """The edit's path, normalised, if it is a file inside one of ``allowed`` (files, or
    folders written with a trailing ``/``, of the config repository); else a
    :class:`ConfigError` saying why."""
    raw = edit.path.replace("\\", "/")
    path = PurePosixPath(raw)
    if raw.endswith("/"):
        raise ConfigError(f"the edit's path {edit.path!r} names a folder, not a file")
    if not raw or path.is_absolute() or ".." in path.parts or raw.startswith("~"):
        raise ConfigError(f"the edit's path {edit.path!r} is not a relative path inside the "
                          "config repository")
    if any(part == ".git" or part.startswith(".git") for part in path.parts):
        raise ConfigError(f"the edit's path {edit.path!r} names git's own files")
    norm = str(path)
    for root in allowed:
        folder = root.endswith("/")  # "prompts/": files inside it; "LESSONS.md": that file
        base = str(PurePosixPath(root.replace("\\", "/")))
        if norm.startswith(base + "/") if folder else norm == base:
            return norm
    raise ConfigError(f"the edit's path {edit.path!r} is outside the files learning may edit "
                      f"({', '.join(allowed) or 'none'})")
