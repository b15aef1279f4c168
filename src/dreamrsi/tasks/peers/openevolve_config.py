"""OpenEvolve's ``config.yaml``, read for what dreamrsi can honour.

Honoured: ``llm`` (``models`` with weights, ``primary_model``/``secondary_model`` and their
weights, ``api_base``, ``api_key`` given as ``${VAR}``, ``temperature``, ``max_tokens``,
``timeout``, ``retries``) and ``diff_based_evolution`` become the settings of
``[proposer] kind = "llm"``; ``prompt.system_message`` (else ``llm.system_message``) becomes
the objective; ``evaluator.timeout``, ``cascade_evaluation``, ``cascade_thresholds`` and
``evaluator_args`` drive the adapter. Every other key is listed in :attr:`ignored`
(docs/tasks.md says why each is). A literal API key is never read into dreamrsi: keys come only
from the environment.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from dreamrsi.errors import ConfigError
from dreamrsi.tasks._inside import check_inside
from dreamrsi.tasks.bounds import MAX_TIMEOUT_S
from dreamrsi.tasks.proposers import LlmProposer

__all__ = ["CONFIG_FILE", "OpenEvolveConfig", "read_openevolve_config"]

CONFIG_FILE = "config.yaml"
_MAX_BYTES = 1 << 20
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_TEMPLATE_NAME = re.compile(r"^\w+$")
_LLM_USED = {"models", "primary_model", "primary_model_weight", "secondary_model",
             "secondary_model_weight", "api_base", "api_key", "temperature", "max_tokens",
             "timeout", "retries", "system_message"}
_EVALUATOR_USED = {"timeout", "cascade_evaluation", "cascade_thresholds", "evaluator_args"}
_THEIR_KEY = {"models": "llm.models", "base_url": "llm.api_base", "api_key_env": "llm.api_key",
              "temperature": "llm.temperature", "max_tokens": "llm.max_tokens",
              "call_timeout_s": "llm.timeout", "max_retries": "llm.retries",
              "timeout_s": "llm.timeout", "edit_format": "diff_based_evolution"}


@dataclass(frozen=True, slots=True)
class OpenEvolveConfig:
    """What dreamrsi takes from an OpenEvolve ``config.yaml``.

    Attributes:
        timeout_s: ``evaluator.timeout``: the limit of one evaluation stage.
        cascade: ``evaluator.cascade_thresholds`` when ``cascade_evaluation`` is on, else None.
        evaluator_args: ``evaluator.evaluator_args``: keyword arguments of ``evaluate()``.
        proposer: The keys of ``[proposer] kind = "llm"`` the ``llm`` section maps to.
        objective: ``prompt.system_message`` (or ``llm.system_message``), unless it names a
            template.
        ignored: The keys of the file dreamrsi does not use.
    """

    timeout_s: float = 300.0
    cascade: tuple[float, ...] | None = (0.5, 0.75, 0.9)
    evaluator_args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    proposer: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    objective: str | None = None
    ignored: tuple[str, ...] = ()


def read_openevolve_config(path: Path) -> OpenEvolveConfig:
    """Read ``path`` (an OpenEvolve ``config.yaml``); defaults when it does not exist.

    Raises:
        ConfigError: Not YAML, too big, or a key dreamrsi uses holds the wrong kind of value
            (the error names the file and the key).
    """
    check_inside(path.parent, path, file=path)
    if not path.is_file():
        return OpenEvolveConfig()
    data = _load(path)
    ignored = _ignored(data)
    llm = _section(path, data, "llm")
    proposer, notes = _proposer(path, llm, data.get("diff_based_evolution", True))
    evaluator = _section(path, data, "evaluator")
    cascade_on = _typed(path, "evaluator.cascade_evaluation",
                        evaluator.get("cascade_evaluation", True), bool, "true or false")
    thresholds = evaluator.get("cascade_thresholds", [0.5, 0.75, 0.9])
    if not isinstance(thresholds, list) or not all(_is_number(t) for t in thresholds):
        raise ConfigError(f"invalid value {thresholds!r}", file=str(path),
                          key="evaluator.cascade_thresholds", expected="a list of numbers")
    return OpenEvolveConfig(
        timeout_s=_positive(path, "evaluator.timeout", evaluator.get("timeout", 300)),
        cascade=tuple(float(t) for t in thresholds) if cascade_on else None,
        evaluator_args=MappingProxyType(_evaluator_args(path, evaluator)),
        proposer=MappingProxyType(proposer),
        objective=_objective(_section(path, data, "prompt"), llm),
        ignored=tuple(sorted({*ignored, *notes})),
    )


def _load(path: Path) -> dict[str, Any]:
    import yaml  # type: ignore[import-untyped]  # loaded only for a peer's config file

    raw = path.read_bytes()
    if len(raw) > _MAX_BYTES:
        raise ConfigError(f"the file holds {len(raw)} bytes, more than {_MAX_BYTES} accepted",
                          file=str(path))
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"not valid YAML: {exc}", file=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"holds {type(data).__name__}, not a mapping", file=str(path))
    return data


def _section(path: Path, data: Mapping[str, Any], name: str) -> dict[str, Any]:
    section = data.get(name) or {}
    if not isinstance(section, dict):
        raise ConfigError(f"invalid value {section!r}", file=str(path), key=name,
                          expected="a mapping")
    return section


def _ignored(data: Mapping[str, Any]) -> list[str]:
    """The keys of the file no dreamrsi setting takes (sections by their keys)."""
    used = {"llm": _LLM_USED, "evaluator": _EVALUATOR_USED, "prompt": {"system_message"}}
    out = []
    for key, value in data.items():
        if key in used and isinstance(value, dict):
            out += [f"{key}.{k}" for k in value if k not in used[key]]
        elif key != "diff_based_evolution" and key not in used:
            out.append(str(key))
    return out


def _proposer(path: Path, llm: Mapping[str, Any],
              diff: Any) -> tuple[dict[str, Any], list[str]]:
    """The ``[proposer]`` keys of the ``llm`` section, and the keys it could not map."""
    table: dict[str, Any] = {}
    notes: list[str] = []
    models = _models(path, llm, notes)
    if models:
        table["models"] = models
    if llm.get("api_base") is not None:
        table["base_url"] = llm["api_base"]
    key = llm.get("api_key")
    if key is not None:
        match = _ENV_REF.match(key) if isinstance(key, str) else None
        if match:
            table["api_key_env"] = match.group(1)
        else:  # a literal key: never read into dreamrsi (it would reach the task's digest)
            notes.append("llm.api_key (a literal key: dreamrsi takes keys only from the "
                         "environment, $OPENAI_API_KEY unless api_key is ${VAR})")
    for theirs, ours in (("temperature", "temperature"), ("max_tokens", "max_tokens"),
                         ("timeout", "call_timeout_s"), ("retries", "max_retries")):
        if llm.get(theirs) is not None:
            table[ours] = llm[theirs]
    if "call_timeout_s" in table and _is_number(table["call_timeout_s"]):
        retries = table.get("max_retries", 4)
        attempts = retries + 1 if _is_number(retries) else 5
        table["timeout_s"] = max(300.0, float(table["call_timeout_s"]) * attempts + 30.0)
    table["edit_format"] = "full" if diff is False else "diff"
    _check_proposer(path, table)
    return table, notes


def _models(path: Path, llm: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """``llm.models`` plus ``primary_model`` and ``secondary_model``, as OpenEvolve reads them."""
    raw = llm.get("models") or []
    if not isinstance(raw, list):
        raise ConfigError(f"invalid value {raw!r}", file=str(path), key="llm.models",
                          expected="a list of {name, weight}")
    models = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"invalid value {entry!r}", file=str(path),
                              key=f"llm.models[{i}]", expected="a mapping with a name")
        models.append({"name": entry["name"], "weight": entry.get("weight", 1.0)})
        notes += [f"llm.models[{i}].{k}" for k in entry if k not in ("name", "weight")]
    for which, default in (("primary", 1.0), ("secondary", 0.2)):
        name, weight = llm.get(f"{which}_model"), llm.get(f"{which}_model_weight")
        weight = default if weight is None else weight
        if name and not (which == "secondary" and _is_number(weight) and weight <= 0):
            models.append({"name": name, "weight": weight})
    return models


def _check_proposer(path: Path, table: Mapping[str, Any]) -> None:
    """Validate the mapped keys as task.toml's would be; name config.yaml's key on error."""
    try:
        LlmProposer.model_validate({"kind": "llm", **table})
    except ValidationError as exc:
        err = exc.errors()[0]
        ours = str(err["loc"][0]) if err["loc"] else ""
        raise ConfigError(f"invalid value {err.get('input')!r}", file=str(path),
                          key=_THEIR_KEY.get(ours, f"llm.{ours}"),
                          expected=err["msg"].lower()) from None


def _objective(prompt: Mapping[str, Any], llm: Mapping[str, Any]) -> str | None:
    """The system message, unless it is the name of one of OpenEvolve's templates."""
    for message in (prompt.get("system_message"), llm.get("system_message")):
        if isinstance(message, str) and message.strip() \
                and not _TEMPLATE_NAME.match(message.strip()):
            return message.strip()
    return None


def _evaluator_args(path: Path, evaluator: Mapping[str, Any]) -> dict[str, Any]:
    args = evaluator.get("evaluator_args") or {}
    if not isinstance(args, dict):
        raise ConfigError(f"invalid value {args!r}", file=str(path),
                          key="evaluator.evaluator_args", expected="a mapping")
    try:
        json.dumps(args, allow_nan=False)
    except (TypeError, ValueError):
        raise ConfigError("the arguments are not plain data", file=str(path),
                          key="evaluator.evaluator_args",
                          expected="strings, numbers, booleans, lists and mappings") from None
    return dict(args)


def _positive(path: Path, key: str, value: Any) -> float:
    if not _is_number(value) or not 0 < value <= MAX_TIMEOUT_S / 3:  # up to 3 stages
        raise ConfigError(f"invalid value {value!r}", file=str(path), key=key,
                          expected=f"a number of seconds > 0 and <= {MAX_TIMEOUT_S / 3:g}")
    return float(value)


def _typed(path: Path, key: str, value: Any, kind: type, expected: str) -> Any:
    if not isinstance(value, kind):
        raise ConfigError(f"invalid value {value!r}", file=str(path), key=key,
                          expected=expected)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)
