"""What the Dream Run commands share (:mod:`~dreamrsi.cli.repo`,
:mod:`~dreamrsi.cli.beliefs`): their arguments, the run opened for writing, the text lines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dreamrsi.cli._shared import print_json, reader, visible

if TYPE_CHECKING:
    from dreamrsi.repo_runs.session import Session

DreamArg = Annotated[str, typer.Argument(help="A dream of the run (d1, d2, ...).")]
CiteOpt = Annotated[list[str] | None, typer.Option(
    "--cite", help="An admissible ledger row (an id, or a unique prefix) the claim rests on: "
    "a command's row from `exec`, an evaluation's; repeat for more.")]
AtOpt = Annotated[str | None, typer.Option(
    "--at", help="A checkpoint (node id or unique prefix) of the dream to start from "
    "(default: the dream's head).")]
TimeoutOpt = Annotated[float, typer.Option(
    "--timeout", help="The command's time limit, seconds (above 0, at most 86400).")]
BriefChars = Annotated[int, typer.Option(
    "--max-chars", min=1000, max=10_000_000,
    help="The brief's size limit, characters of its JSON (what must never be dropped is "
    "kept whatever the limit).")]


@contextmanager
def open_session(store: Path, run_id: str, holder: str) -> Iterator[Session]:
    """The Dream Run ``run_id`` of ``store`` (which must exist), opened for writing."""
    from dreamrsi.repo_runs.journal import load_state
    from dreamrsi.repo_runs.session import Session
    from dreamrsi.store import open_store

    reader(store).close()  # a missing store is an error here, never created
    with open_store(store, writer=True, holder=f"{holder} {run_id}") as handle:
        full = handle.get_run(run_id).run_id
        load_state(handle, full)  # "not a Dream Run" before anything else
        yield Session(handle, full)


def say(text: str) -> None:
    """Print ``text`` with its control characters shown (it holds what users and commands
    wrote)."""
    typer.echo(visible(text))


def _score(score: float | None) -> str:
    return "none" if score is None else f"{score:.6g}"


def node_line(node: dict[str, Any]) -> str:
    """A checkpoint in one line: node, status, score, the first line of its feedback."""
    feedback = node["feedback"].strip().splitlines()
    why = f": {feedback[0][:200]}" if feedback else ""
    return f"{node['node']}: {node['status']}, score {_score(node['score'])}{why}"


def dream_line(d: dict[str, Any]) -> str:
    """A dream in a few lines: kind, status, head, a shadow's question or answer, its
    working copy."""
    parent = f" from {d['parent']}" if d["parent"] else ""
    text = (f"{d['dream']} {d['kind']} {d['status']}{parent}: head {d['head']} "
            f"(score {_score(d['score'])}), {len(d['checkpoints'])} checkpoint(s)")
    if d.get("question"):
        text += f"\n    question: {d['question']}"
        text += f"\n    answer: {d['answer']}" if d.get("answer") else \
            f"\n    returns {d['returns']} within {d['budget']} step(s)"
    return text + f"\n    working copy: {d['working_copy']}"


def show(data: Any, as_json: bool, text: Callable[[], str]) -> None:
    """Print ``data`` as JSON, or the text ``text`` makes of it."""
    if as_json:
        print_json(data)
    else:
        say(text())


def dream_of(session: Session, dream_id: str) -> dict[str, Any]:
    """A dream of the session's run as ``dreams --json`` shows it."""
    from dreamrsi.views import dream_dict

    return dream_dict(session.store, session.state(), dream_id)
