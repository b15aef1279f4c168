"""What a task's proposer is: a command, or a language model behind an OpenAI-compatible API.

``[proposer] kind = "command"`` runs a shell command in the workspace (the default).
``kind = "llm"`` asks a model for edits to the workspace's files; its keys, all optional::

    [proposer]
    kind = "llm"
    timeout_s = 300                 # the whole attempt: every call and retry
    models = ["gpt-4o-mini"]        # or [{name = "a", weight = 3}, {name = "b", weight = 1}];
                                    # none: the first model GET /v1/models lists
    base_url = "http://127.0.0.1:8000/v1"  # default: $OPENAI_BASE_URL, else the SDK's
    api_key_env = "OPENAI_API_KEY"  # the variable holding the key (never the key itself)
    temperature = 0.7
    max_tokens = 4096               # of each answer
    call_timeout_s = 60             # hard deadline of one call
    max_retries = 4                 # on 429, 5xx, resets and time-outs, with backoff and jitter
    edit_format = "diff"            # "diff": SEARCH/REPLACE blocks inside EVOLVE-BLOCK regions;
                                    # "full": the whole file, rewritten
    files = ["initial_program.py"]  # what the model sees and edits (default: the workspace's
                                    # files holding EVOLVE-BLOCK-START, else its text files)
    prompt_dir = "prompts"          # templates overriding the built-in ones (system.md, user.md)
    [proposer.prices]               # USD per million tokens, by model
    "gpt-4o-mini" = { input = 0.15, output = 0.60 }

Everything here is validated configuration; nothing calls a model. When the task loads,
:func:`check_llm` also checks the keys against the task's folders: ``files`` must be regular
files of the seed outside the protected paths, ``prompt_dir`` a folder of the task directory,
and ``[constraints] pass_env`` must not hand the key's variable to the sandbox.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from dreamrsi.errors import ConfigError
from dreamrsi.tasks._inside import check_inside
from dreamrsi.tasks.bounds import MAX_TIMEOUT_S

__all__ = ["EditFormat", "LlmSettings", "ModelChoice", "Price", "ProposerSpec", "check_llm"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EditFormat(StrEnum):
    """How a model writes its edits: SEARCH/REPLACE blocks inside EVOLVE-BLOCK regions, or
    each file whole."""

    DIFF = "diff"
    FULL = "full"


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model to ask, and how often relative to the others."""

    name: str
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Price:
    """What a model's tokens cost, in USD per million."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """The money ``tokens_in`` prompt and ``tokens_out`` answer tokens cost."""
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1e6


@dataclass(frozen=True, slots=True)
class LlmSettings:
    """How the ``llm`` proposer calls its model (see the module docstring for each key)."""

    models: tuple[ModelChoice, ...] = ()
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.7
    max_tokens: int = 4096
    call_timeout_s: float = 60.0
    max_retries: int = 4
    edit_format: EditFormat = EditFormat.DIFF
    files: tuple[str, ...] = ()
    prompt_dir: str | None = None
    prices: Mapping[str, Price] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class ProposerSpec:
    """A task's proposer.

    Attributes:
        kind: ``"command"`` or ``"llm"``.
        command: The shell command (``kind = "command"``; empty for ``llm``).
        timeout_s: Time limit of one attempt's proposal.
        llm: The model settings (``kind = "llm"``; None for ``command``).
        lessons: Whether its context carries the task's ACTIVE lessons and recipes
            (``lessons = false`` turns them off).
    """

    kind: Literal["command", "llm"]
    command: str
    timeout_s: float
    llm: LlmSettings | None = None
    lessons: bool = True


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Model(_Strict):
    name: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)


class _Price(_Strict):
    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)


class CommandProposer(_Strict):
    """``[proposer]`` of a command proposer, as written in task.toml."""

    kind: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout_s: float = Field(default=300.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    lessons: bool = True


class LlmProposer(_Strict):
    """``[proposer]`` of an llm proposer, as written in task.toml."""

    kind: Literal["llm"]
    timeout_s: float = Field(default=300.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    models: list[str | _Model] = Field(default_factory=list)
    base_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    api_key_env: str = Field(default="OPENAI_API_KEY", pattern=_ENV_NAME.pattern)
    temperature: float = Field(default=0.7, ge=0, le=2, allow_inf_nan=False)
    max_tokens: int = Field(default=4096, gt=0, le=1_000_000)
    call_timeout_s: float = Field(default=60.0, gt=0, le=3600, allow_inf_nan=False)
    max_retries: int = Field(default=4, ge=0, le=20)
    edit_format: Literal["diff", "full"] = "diff"
    files: list[str] = Field(default_factory=list)
    prompt_dir: str | None = Field(default=None, min_length=1)
    prices: dict[str, _Price] = Field(default_factory=dict)
    lessons: bool = True


def proposer_spec(raw: CommandProposer | LlmProposer) -> ProposerSpec:
    """The validated ``[proposer]`` table as a :class:`ProposerSpec`."""
    if isinstance(raw, CommandProposer):
        return ProposerSpec("command", raw.command, raw.timeout_s, lessons=raw.lessons)
    models = tuple(ModelChoice(m) if isinstance(m, str) else ModelChoice(m.name, m.weight)
                   for m in raw.models)
    prices = MappingProxyType({name: Price(p.input, p.output) for name, p in raw.prices.items()})
    llm = LlmSettings(models, raw.base_url, raw.api_key_env, raw.temperature, raw.max_tokens,
                      raw.call_timeout_s, raw.max_retries, EditFormat(raw.edit_format),
                      tuple(raw.files), raw.prompt_dir, prices)
    return ProposerSpec("llm", "", raw.timeout_s, llm, lessons=raw.lessons)


def check_llm(file: Path, llm: LlmSettings, seed_dir: Path, protected: tuple[str, ...],
              pass_env: tuple[str, ...]) -> dict[str, str]:
    """Check an ``llm`` proposer's paths against the task; return its prompts' digests.

    Args:
        file: The task file (for messages).
        llm: The validated settings.
        seed_dir: The seed folder (``files`` are relative to it).
        protected: The task's protected paths.
        pass_env: The variables the task hands to its commands.

    Returns:
        ``prompts/<name>`` -> SHA-256 of each template in ``prompt_dir``, for the task's
        digest (a run's prompts are part of what it ran).

    Raises:
        ConfigError: A key names something it may not.
    """
    if llm.api_key_env in pass_env:
        raise ConfigError(f"passes ${llm.api_key_env}, the model's key, to the sandbox",
                          file=str(file), key="constraints.pass_env",
                          expected="no variable holding the key: the proposer reads it "
                          "outside the sandbox")
    for rel in llm.files:
        _check_file(file, seed_dir, rel, protected)
    if llm.prompt_dir is None:
        return {}
    folder = (file.parent / llm.prompt_dir).resolve()
    if Path(llm.prompt_dir).is_absolute() or not folder.is_relative_to(file.parent.resolve()) \
            or not folder.is_dir():
        raise ConfigError(f"prompt folder '{llm.prompt_dir}' is not a folder of the task "
                          "directory", file=str(file), key="proposer.prompt_dir",
                          expected="a folder inside the task directory, given relative to it")
    for name in ("system.md", "user.md"):
        check_inside(file.parent, folder / name, file=file, key="proposer.prompt_dir",
                     what=f"prompt template {llm.prompt_dir}/{name}")
    return {f"prompts/{name}": hashlib.sha256((folder / name).read_bytes()).hexdigest()
            for name in ("system.md", "user.md") if (folder / name).is_file()}


def _check_file(file: Path, seed_dir: Path, rel: str, protected: tuple[str, ...]) -> None:
    where = {"file": str(file), "key": "proposer.files"}
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not rel.strip():
        raise ConfigError(f"'{rel}' must be relative to the workspace", **where,
                          expected="a relative path without '..'")
    if any(pure == PurePosixPath(p) or PurePosixPath(p) in pure.parents for p in protected):
        raise ConfigError(f"'{rel}' is a protected path; the model may not edit it", **where)
    path = seed_dir
    for part in pure.parts:
        path = path / part
        if path.is_symlink():
            raise ConfigError(f"'{rel}' goes through the symbolic link "
                              f"'{path.relative_to(seed_dir).as_posix()}'", **where,
                              expected="a regular file of the seed, reached through folders")
    if not path.is_file():
        raise ConfigError(f"'{rel}' is not a file of the seed folder", **where)
