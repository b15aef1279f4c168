"""The ``dreamrsi`` command line, assembled from one module per command group.

Each command calls one service function and renders it (:mod:`~dreamrsi.cli.runs`,
:mod:`~dreamrsi.cli.dreaming`, :mod:`~dreamrsi.cli.tasks`, :mod:`~dreamrsi.cli.ledger`,
:mod:`~dreamrsi.cli.store`); the options they share are in :mod:`~dreamrsi.cli.options`.
Commands are registered here, in the order ``--help`` lists them.

Exit codes: 0 success, 1 a user error (printed as one message; ``--debug`` shows the
traceback), 2 a usage error, 130 interrupted.

Start-up is kept small: the command modules import their services inside each command, help
and usage errors are Click's plain text (``rich_markup_mode=None``: Typer's Rich help would load
Rich's Markdown, tables and tracebacks), and Rich's log handler is made on the first log record
(``tests/cli/test_startup.py`` checks what ``--help`` imports).
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from dreamrsi.cli import _coerce, dreaming, ledger, runs, tasks
from dreamrsi.cli import store as store_cmds
from dreamrsi.cli._shared import err_console, state

_coerce.install()
app = typer.Typer(
    name="dreamrsi",
    help="Durable discovery runs around a frozen model or program, improved by dreaming.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
task_app = typer.Typer(help="Work with task definitions.", no_args_is_help=True,
                       rich_markup_mode=None)
ledger_app = typer.Typer(help="Inspect and verify the evidence ledger.", no_args_is_help=True,
                         rich_markup_mode=None)
store_app = typer.Typer(help="Maintain a store.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(task_app, name="task")
app.add_typer(ledger_app, name="ledger")
app.add_typer(store_app, name="store")


@app.callback()
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


app.command("run")(runs.run)
app.command("resume")(runs.resume)
app.command("dream")(dreaming.dream)
app.command("loop")(dreaming.loop)
app.command("policies")(dreaming.policies)
app.command("replay")(dreaming.replay)
app.command("status")(runs.status)
app.command("show")(runs.show)
app.command("best")(runs.best)
app.command("tasks")(tasks.tasks)
task_app.command("check")(tasks.check)
ledger_app.command("verify")(ledger.verify)
ledger_app.command("head")(ledger.head)
ledger_app.command("show")(ledger.show)
store_app.command("upgrade")(store_cmds.upgrade)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:  # e.g. `dreamrsi show RUN | head`
        sys.stderr.close()
        sys.exit(0)
