"""The ``dreamrsi`` command line, assembled from one module per command group.

Each command calls one service function and renders it (:mod:`~dreamrsi.cli.runs`,
:mod:`~dreamrsi.cli.dreaming`, :mod:`~dreamrsi.cli.tasks`, :mod:`~dreamrsi.cli.ledger`,
:mod:`~dreamrsi.cli.store`, the Dream Run's :mod:`~dreamrsi.cli.repo` and
:mod:`~dreamrsi.cli.beliefs`, the knowledge layer's :mod:`~dreamrsi.cli.knowledge`,
:mod:`~dreamrsi.cli.goldens`, :mod:`~dreamrsi.cli.learn`, :mod:`~dreamrsi.cli.recipes` and
:mod:`~dreamrsi.cli.lifecycle`); the options they share are in
:mod:`~dreamrsi.cli.options`.
Commands are registered here, in the order ``--help`` lists them.

Exit codes: 0 success, 1 a user error (printed as one message; ``--debug`` shows the
traceback), 2 a usage error, 130 interrupted; ``survive`` adds 3 (failed) and 4 (could not
run).

Start-up is kept small: the command modules import their services inside each command, help
and usage errors are Click's plain text (``rich_markup_mode=None``: Typer's Rich help would load
Rich's Markdown, tables and tracebacks), Rich's log handler is made on the first log record,
and :func:`main` builds only the command it runs (:func:`app_for`); ``tests/cli/test_startup.py``
checks what ``--help`` and the reading commands import.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from dreamrsi.cli import (
    _coerce,
    beliefs,
    dreaming,
    learn,
    ledger,
    mcp,
    repo,
    repo_work,
    report,
    runs,
    serve,
    survival,
    tasks,
)
from dreamrsi.cli import store as store_cmds
from dreamrsi.cli._shared import err_console, state
from dreamrsi.cli.goldens import goldens_app
from dreamrsi.cli.knowledge import lessons_app, traces_app
from dreamrsi.cli.lifecycle import lifecycle_app
from dreamrsi.cli.priors import priors_app
from dreamrsi.cli.recipes import recipes_app

_coerce.install()
_SETTINGS: dict[str, Any] = dict(
    name="dreamrsi",
    help="Durable discovery runs around a frozen model or program, improved by dreaming.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app = typer.Typer(**_SETTINGS)
task_app = typer.Typer(help="Work with task definitions.", no_args_is_help=True,
                       rich_markup_mode=None)
ledger_app = typer.Typer(help="Inspect and verify the evidence ledger.", no_args_is_help=True,
                         rich_markup_mode=None)
store_app = typer.Typer(help="Maintain a store.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(task_app, name="task")
app.add_typer(ledger_app, name="ledger")
app.add_typer(store_app, name="store")
for _group, _typer in beliefs.GROUPS.items():
    app.add_typer(_typer, name=_group)
app.add_typer(traces_app, name="traces")
app.add_typer(goldens_app, name="goldens")
app.add_typer(lessons_app, name="lessons")
app.add_typer(recipes_app, name="recipes")
app.add_typer(lifecycle_app, name="lifecycle")
app.add_typer(priors_app, name="priors")


def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True,
                                         help="More log output (-vv for debug).")] = 0,
) -> None:
    state["debug"] = debug
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, handlers=[_LazyRichHandler()], format="%(message)s")


class _LazyRichHandler(logging.Handler):
    """Rich's log handler (on stderr), made when the first record arrives: most commands log
    nothing, and ``rich.logging`` loads Rich's traceback renderer."""

    def __init__(self) -> None:
        super().__init__()
        self._handler: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self._handler is None:
            from rich.logging import RichHandler

            self._handler = RichHandler(console=err_console())
            self._handler.setFormatter(self.formatter)
        self._handler.handle(record)


_COMMANDS: dict[str, Callable[..., None]] = {
    "run": runs.run, "resume": runs.resume, "dream": dreaming.dream, "loop": dreaming.loop,
    "policies": dreaming.policies, "replay": dreaming.replay, "report": report.report,
    "status": runs.status,
    "show": runs.show, "best": runs.best, "survive": survival.survive, "tasks": tasks.tasks,
    "mcp": mcp.mcp, "serve": serve.serve, **repo.COMMANDS, **repo_work.COMMANDS,
    "learn": learn.learn,
}
"""The top-level commands, in the order ``--help`` lists them."""

app.callback()(_main)
for _name, _command in _COMMANDS.items():
    app.command(_name)(_command)
task_app.command("check")(tasks.check)
ledger_app.command("verify")(ledger.verify)
ledger_app.command("head")(ledger.head)
ledger_app.command("show")(ledger.show)
store_app.command("upgrade")(store_cmds.upgrade)


def app_for(args: Sequence[str]) -> typer.Typer:
    """:data:`app`, or, when ``args`` start with a top-level command's name, an app holding
    that command alone (with the same global options): Typer reads the signature of every
    command an app holds before it runs one. ``tests/cli/test_startup.py`` checks that both
    answer alike."""
    if not args or args[0] not in _COMMANDS:
        return app
    single = typer.Typer(**_SETTINGS)
    single.callback()(_main)
    single.command(args[0])(_COMMANDS[args[0]])
    return single


def main() -> None:
    """Console-script entry point."""
    try:
        app_for(sys.argv[1:])()
    except BrokenPipeError:  # e.g. `dreamrsi show RUN | head`
        sys.stderr.close()
        sys.exit(0)
