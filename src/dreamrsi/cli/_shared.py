"""What every command module shares: the consoles, the error boundary, JSON output, readers.

Errors are translated here, once: a :class:`DreamError` becomes one message and exit 1
(``--debug`` re-raises it for the traceback), an interrupt becomes exit 130.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from dreamrsi.cli._render import visible
from dreamrsi.errors import DreamError
from dreamrsi.store import RunStore, open_store

console = Console()
err_console = Console(stderr=True)
state = {"debug": False}
"""Global options of the invocation (set by the app's callback)."""

T = TypeVar("T")


def guard(fn: Callable[[], T]) -> T:
    """Run a command body; turn a DreamError into a message and exit 1."""
    try:
        return fn()
    except DreamError as exc:
        if state["debug"]:
            raise
        fail(str(exc))
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]; `dreamrsi resume RUN` continues the run")
        raise typer.Exit(130) from None


def fail(message: str) -> NoReturn:
    """Print ``message`` as an error and exit 1."""
    err_console.print(f"[bold red]error:[/] {escape(visible(message))}", highlight=False,
                      soft_wrap=True)
    raise typer.Exit(1)


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (anything not JSON as its ``str``)."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def reader(store: Path) -> RunStore:
    """The store at ``store``, opened for reading."""
    return open_store(store, writer=False)


def sigterm_as_interrupt() -> None:
    """Make SIGTERM stop a writing command as Ctrl-C does (so the run can be resumed)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
