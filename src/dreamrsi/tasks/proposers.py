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

Everything here is validated configuration; nothing calls a model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LlmSettings", "ModelChoice", "Price", "ProposerSpec"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    edit_format: Literal["diff", "full"] = "diff"
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
    """

    kind: Literal["command", "llm"]
    command: str
    timeout_s: float
    llm: LlmSettings | None = None


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
    timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)


class LlmProposer(_Strict):
    """``[proposer]`` of an llm proposer, as written in task.toml."""

    kind: Literal["llm"]
    timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    models: list[str | _Model] = Field(default_factory=list)
    base_url: str | None = Field(default=None, min_length=1)
    api_key_env: str = Field(default="OPENAI_API_KEY", pattern=_ENV_NAME.pattern)
    temperature: float = Field(default=0.7, ge=0, le=2, allow_inf_nan=False)
    max_tokens: int = Field(default=4096, gt=0, le=1_000_000)
    call_timeout_s: float = Field(default=60.0, gt=0, le=3600, allow_inf_nan=False)
    max_retries: int = Field(default=4, ge=0, le=20)
    edit_format: Literal["diff", "full"] = "diff"
    files: list[str] = Field(default_factory=list)
    prompt_dir: str | None = Field(default=None, min_length=1)
    prices: dict[str, _Price] = Field(default_factory=dict)


def proposer_spec(raw: CommandProposer | LlmProposer) -> ProposerSpec:
    """The validated ``[proposer]`` table as a :class:`ProposerSpec`."""
    if isinstance(raw, CommandProposer):
        return ProposerSpec("command", raw.command, raw.timeout_s)
    models = tuple(ModelChoice(m) if isinstance(m, str) else ModelChoice(m.name, m.weight)
                   for m in raw.models)
    prices = MappingProxyType({name: Price(p.input, p.output) for name, p in raw.prices.items()})
    llm = LlmSettings(models, raw.base_url, raw.api_key_env, raw.temperature, raw.max_tokens,
                      raw.call_timeout_s, raw.max_retries, raw.edit_format, tuple(raw.files),
                      raw.prompt_dir, prices)
    return ProposerSpec("llm", "", raw.timeout_s, llm)
