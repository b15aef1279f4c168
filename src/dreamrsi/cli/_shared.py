"""What every command module shares: the consoles, the error boundary, JSON output, readers.

Errors are translated here, once: a :class:`DreamError` becomes one message and exit 1
(``--debug`` re-raises it for the traceback), an interrupt becomes exit 130.
"""

from __future__ import annotations

import functools
import json
import re
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

from dreamrsi.errors import DreamError

if TYPE_CHECKING:
    from rich.console import Console

    from dreamrsi.store.base import RunStore

state = {"debug": False}
"""Global options of the invocation (set by the app's callback)."""

T = TypeVar("T")


@functools.cache
def console() -> Console:
    """The console of the command's output (Rich is loaded when first asked for)."""
    from rich.console import Console

    return Console()


@functools.cache
def err_console() -> Console:
    """The console of messages and errors, on stderr."""
    from rich.console import Console

    return Console(stderr=True)


def guard(fn: Callable[[], T]) -> T:
    """Run a command body; turn a DreamError into a message and exit 1."""
    try:
        return fn()
    except DreamError as exc:
        if state["debug"]:
            raise
        fail(str(exc))
    except KeyboardInterrupt:
        err_console().print("[yellow]interrupted[/]; `dreamrsi resume RUN` continues the run")
        raise typer.Exit(130) from None


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab written as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def fail(message: str) -> NoReturn:
    """Print ``message`` as an error and exit 1."""
    from rich.markup import escape

    err_console().print(f"[bold red]error:[/] {escape(visible(message))}", highlight=False,
                        soft_wrap=True)
    raise typer.Exit(1)


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (anything not JSON as its ``str``)."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def stream_json(head: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """Print ``head`` with ``key`` added last, holding ``items``, as :func:`print_json` would,
    except that each item takes one line; the items are written as they come (a list of
    100,000 is never built, and each is encoded by the C encoder: indenting would not be)."""
    out = sys.stdout
    text = json.dumps(head, indent=2, default=str)
    key_text = f"{json.dumps(key)}: ["
    out.write(f"{text[:-2]},\n  {key_text}" if head else f"{{\n  {key_text}")
    out.write("\n  ]\n}\n" if _write_items(out, items, "    ") else "]\n}\n")


def stream_list(items: Iterable[Any]) -> None:
    """Print ``items`` as a JSON list, one item a line, written as they come (what
    :func:`stream_json` does for a list inside an object)."""
    out = sys.stdout
    out.write("[")
    out.write("\n]\n" if _write_items(out, items, "  ") else "]\n")


def _write_items(out: IO[str], items: Iterable[Any], indent: str) -> bool:
    """Write the items of a JSON list after its ``[``, each on a line of its own indented by
    ``indent``, a thousand lines a write; say whether there was any."""
    encode = json.JSONEncoder(default=str).encode
    sep, chunk = "\n" + indent, []
    for item in items:
        chunk.append(sep + encode(item))
        sep = ",\n" + indent
        if len(chunk) >= 1000:
            out.write("".join(chunk))
            chunk.clear()
    out.write("".join(chunk))
    return sep != "\n" + indent


def reader(store: Path) -> RunStore:
    """The store at ``store``, opened for reading."""
    from dreamrsi.store.factory import open_store

    return open_store(store, writer=False)


def sigterm_as_interrupt() -> None:
    """Make SIGTERM stop a writing command as Ctrl-C does (so the run can be resumed)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def refit_priors(handle: RunStore, task_name: str, run_id: str, refit: bool | None) -> None:
    """Refit the family's prior after run ``run_id`` landed (``refit``: the
    ``--refit-priors`` option) and say what happened on stderr; never fails the command."""
    from rich.markup import escape

    from dreamrsi.learning.refit import refit_landed

    said = refit_landed(handle, task_name, run_id, refit=refit)
    if said.message:
        mark = "[yellow]warning:[/]" if said.warning else "[dim]note:[/]"
        err_console().print(f"{mark} {escape(visible(said.message))}", highlight=False,
                            soft_wrap=True)
