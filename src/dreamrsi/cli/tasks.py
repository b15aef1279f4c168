"""Commands for task definitions: ``tasks`` and ``task check``."""

from __future__ import annotations

from typing import Annotated

import typer

from dreamrsi.cli._shared import console, guard, print_json
from dreamrsi.cli.options import AcceptUnisolatedOpt, IsolationOpt, JsonOpt


def tasks(as_json: JsonOpt = False) -> None:
    """List the built-in tasks."""

    def body() -> None:
        from dreamrsi.tasks import describe_builtin_tasks

        rows = describe_builtin_tasks()
        if as_json:
            print_json(rows)
        else:
            from dreamrsi.cli import _render

            _render.tasks_table(rows)

    guard(body)


def check(
    directory: Annotated[str, typer.Argument(help="Task directory (or built-in task name).")],
    isolation: IsolationOpt = None,
    accept_unisolated: AcceptUnisolatedOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Load a task and evaluate its seed workspace once; print the result or the problem."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.engine import check_task
        from dreamrsi.tasks import resolve_task

        report = check_task(resolve_task(directory), isolation,
                            accept_unisolated_model_code=accept_unisolated)
        if as_json:
            print_json(_render.check_dict(report))
        else:
            _render.check_panel(console(), report)
        if not report.ok:
            raise typer.Exit(1)

    guard(body)
