"""The prompt of the ``llm`` proposer: two templates, filled from the attempt's context.

The built-in templates are ``templates/system.md`` and ``templates/user.md`` beside this
module. A task overrides either one with a file of the same name in its ``prompt_dir``.
Placeholders are written ``{{name}}``; an unknown name is an error when the run starts. Values
are inserted once, so text in them that looks like a placeholder stays as it is.

- ``{{objective}}``, ``{{task_name}}``, ``{{direction}}``: the task's (``maximize`` or
  ``minimize``);
- ``{{better}}``: ``higher`` when the task maximises, ``lower`` when it minimises;
- ``{{score}}``, ``{{status}}``, ``{{plan}}``: the parent's raw score (``none`` without
  one), status and plan;
- ``{{metrics}}``: the parent's metrics, ``name = value`` (at most 20, ``none`` without any);
- ``{{feedback}}``: the parent's feedback (its evaluator's, or why the attempt that made it
  failed), in a fenced block; for an attempt that failed outside the candidate (the model
  endpoint, the proposer's command), a note saying that it produced no program, never the
  error itself;
- ``{{history}}``: one entry per ancestor, root first: depth, score, status, plan, metrics,
  feedback (likewise);
- ``{{elites}}``: the best program of each earlier run of the task that the run's context
  names (``dreamrsi run --history N``, ``loop --history N``), best first: its run, node,
  score, plan, feedback and the text of the files the model may edit here;
- ``{{files}}``: each file the model may edit: its path, then its text in a fenced block;
- ``{{edit_format}}``: how to write edits (SEARCH/REPLACE blocks, or whole files);
- ``{{lessons}}``: the task's ACTIVE lessons from the context, most important first, one
  ``- `` line each (``none`` without any);
- ``{{recipes}}``: the task's recipes from the context (its best survived or verified
  solutions): id, state, score, plan and the files each changed (``none`` without any);
- ``{{budget}}``: attempts, tokens and money left in the run;
- ``{{attempt_id}}``, ``{{round}}``: the attempt's id and round.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from dreamrsi.errors import ConfigError
from dreamrsi.tasks.proposers import EditFormat

__all__ = ["PLACEHOLDERS", "Prompts", "load_prompts"]

PLACEHOLDERS = ("objective", "task_name", "direction", "better", "score", "status", "plan",
                "metrics", "feedback", "history", "elites", "files", "edit_format", "lessons",
                "recipes", "budget", "attempt_id", "round")
_SLOT = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAMES = ("system.md", "user.md")
_MAX_TEMPLATE_BYTES = 64 * 1024

_DIFF = """\
Write each change as a SEARCH/REPLACE block, with the file's path on the line before it:

path/to/file.py
<<<<<<< SEARCH
lines copied exactly from the file
=======
the lines to put in their place
>>>>>>> REPLACE

SEARCH must match whole lines of the file exactly (spaces included) and only once. Where a
file has EVOLVE-BLOCK-START and EVOLVE-BLOCK-END lines, only the lines between them may
change; the marker lines and everything outside them must stay as they are. Use several
blocks for several changes."""

_FULL = """\
Write the whole new file in one fenced code block, with the file's path on the line before
the block. Where a file has EVOLVE-BLOCK-START and EVOLVE-BLOCK-END lines, only the lines
between them may differ from the current file; the marker lines and everything outside them
must stay exactly as they are."""


@dataclass(frozen=True, slots=True)
class Prompts:
    """The two templates of a task (``system`` and ``user``)."""

    system: str
    user: str

    def messages(self, values: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages with every placeholder filled from ``values``."""
        return [{"role": "system", "content": _fill(self.system, values)},
                {"role": "user", "content": _fill(self.user, values)}]


def load_prompts(task_dir: Path, prompt_dir: str | None) -> Prompts:
    """The built-in templates, overridden by ``system.md`` / ``user.md`` in ``prompt_dir``.

    Raises:
        ConfigError: A template is not UTF-8, too big, or uses an unknown placeholder.
    """
    texts = {name: resources.files("dreamrsi.agents").joinpath("templates", name)
             .read_text("utf-8") for name in _NAMES}
    if prompt_dir is not None:
        for name in _NAMES:
            path = task_dir / prompt_dir / name
            if path.is_file():
                texts[name] = _read_template(path)
    return Prompts(texts["system.md"], texts["user.md"])


def _read_template(path: Path) -> str:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", file=str(path)) from None
    if len(data) > _MAX_TEMPLATE_BYTES:
        raise ConfigError(f"the template holds {len(data)} bytes, more than "
                          f"{_MAX_TEMPLATE_BYTES}", file=str(path))
    unknown = sorted({m.group(1) for m in _SLOT.finditer(text)} - set(PLACEHOLDERS))
    if unknown:
        raise ConfigError(f"unknown placeholder {{{{{unknown[0]}}}}}", file=str(path),
                          expected="one of " + ", ".join(PLACEHOLDERS))
    return text


def _fill(template: str, values: Mapping[str, str]) -> str:
    return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def prompt_values(context: Mapping[str, Any], files: Mapping[str, str], notes: Sequence[str],
                  edit_format: EditFormat,
                  elite_files: Sequence[Mapping[str, str]] = ()) -> dict[str, str]:
    """The value of every placeholder for one attempt.

    Args:
        context: The attempt's context (the JSON a command proposer gets).
        files: The files the model may edit, path -> text.
        notes: What was left out of ``files`` and why.
        edit_format: ``"diff"`` or ``"full"``.
        elite_files: For each entry of the context's ``history`` (in order), its text of the
            files in ``files`` that it holds.
    """
    task = context.get("task", {})
    parent = context.get("parent", {})
    direction = str(task.get("direction", "maximize"))
    first = not parent.get("depth")
    return {
        "objective": str(task.get("objective", "")),
        "task_name": str(task.get("name", "")),
        "direction": direction,
        "better": "lower" if direction == "minimize" else "higher",
        "score": _score(parent.get("score")),
        "status": str(parent.get("status", "ok")),
        "plan": str(parent.get("plan") or ("none (the starting program)" if first else "none")),
        "metrics": _metrics(parent.get("metrics")),
        "feedback": fenced(str(parent.get("feedback") or "(none)")),
        "history": _history(context),
        "elites": _elites(context, elite_files),
        "files": _files(files, notes),
        "edit_format": _DIFF if edit_format == EditFormat.DIFF else _FULL,
        "lessons": "\n".join(f"- {lesson}" for lesson in context.get("lessons") or ())
        or "none",
        "recipes": _recipes(context.get("recipes") or ()),
        "budget": _budget(context.get("budget") or {}),
        "attempt_id": str(context.get("attempt_id", "")),
        "round": str(context.get("round", "")),
    }


def _recipes(recipes: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for r in recipes:
        files = ", ".join(str(f) for f in r.get("files") or ()) or "none"
        lines.append(f"- recipe {r.get('id')} ({r.get('state')}, score "
                     f"{_score(r.get('raw_score'))}): {r.get('plan') or 'no plan'}; "
                     f"files changed: {files}")
    return "\n".join(lines) or "none"


def fenced(text: str, info: str = "") -> str:
    """``text`` in a fenced block whose fence is longer than any run of backticks in it."""
    longest = max((len(m.group(0)) for m in re.finditer(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def _score(value: object) -> str:
    return "none" if value is None else f"{value:.10g}" if isinstance(value, float) \
        else str(value)


def _history(context: Mapping[str, Any]) -> str:
    ancestors = list(context.get("ancestors") or ())
    if not ancestors:
        return "None: the program below is where this line of work starts."
    lines = []
    omitted = int(context.get("ancestors_omitted") or 0)
    for n, node in enumerate(ancestors):
        if n == 1 and omitted:
            lines.append(f"({omitted} earlier attempts left out)")
        lines.append(f"## Depth {node.get('depth', n)}: score {_score(node.get('score'))}, "
                     f"status {node.get('status', '?')}\nPlan: {node.get('plan') or 'none'}\n"
                     f"Metrics: {_metrics(node.get('metrics'))}\n"
                     f"Feedback:\n{fenced(str(node.get('feedback') or '(none)'))}")
    return "\n\n".join(lines)


MAX_METRICS = 20
"""At most this many metrics of a node are shown."""
_METRICS_CHARS = 1000


def _metrics(metrics: object) -> str:
    """``name = value; ...`` of at most :data:`MAX_METRICS` metrics, at most 1,000 characters
    (``none`` without any)."""
    if not isinstance(metrics, Mapping) or not metrics:
        return "none"
    parts = [f"{str(name)[:64]} = {_score(value)[:64]}"
             for name, value in list(metrics.items())[:MAX_METRICS]]
    text = "; ".join(parts)
    return text if len(text) <= _METRICS_CHARS else text[:_METRICS_CHARS] + " ..."


def _elites(context: Mapping[str, Any], elite_files: Sequence[Mapping[str, str]]) -> str:
    elites = list(context.get("history") or ())
    if not elites:
        return "None: no earlier run of this task is in this run's context."
    parts = []
    for n, entry in enumerate(elites):
        shown = elite_files[n] if n < len(elite_files) else {}
        text = (f"## Earlier run {entry.get('run_id', '?')}, node {entry.get('node_id', '?')}: "
                f"score {_score(entry.get('score'))}\nPlan: {entry.get('plan') or 'none'}\n"
                f"Feedback:\n{fenced(str(entry.get('feedback') or '(none)'))}")
        for path, body in shown.items():
            text += f"\n\n### {path}\n\n{fenced(body, _language(path))}"
        parts.append(text)
    return "\n\n".join(parts)


def _files(files: Mapping[str, str], notes: Sequence[str]) -> str:
    parts = [f"## {path}\n\n{fenced(text, _language(path))}" for path, text in files.items()]
    parts += [f"({note})" for note in notes]
    return "\n\n".join(parts)


def _language(path: str) -> str:
    suffix = Path(path).suffix.lstrip(".")
    return {"py": "python", "js": "javascript", "ts": "typescript", "rs": "rust",
            "md": "markdown", "sh": "bash"}.get(suffix, suffix)


def _budget(budget: Mapping[str, Any]) -> str:
    def show(value: object, unit: str = "") -> str:
        return "no limit" if value is None else f"{value}{unit}"

    return (f"attempts left: {show(budget.get('attempts_left'))}; tokens left: "
            f"{show(budget.get('tokens_left'))}; money left: "
            f"{show(budget.get('cost_left_usd'), ' USD')}")
