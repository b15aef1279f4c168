"""Commands for task definitions: ``tasks`` and ``task check``."""

from __future__ import annotations

from typing import Annotated

import typer

from dreamrsi.cli._shared import console, err_console, guard, print_json, visible
from dreamrsi.cli.options import (
    AcceptUnisolatedOpt,
    BaseUrlOpt,
    IsolationOpt,
    JsonOpt,
    ModelOpt,
)


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
    offline: Annotated[bool, typer.Option(
        "--offline", help="Do not contact the model endpoint of a task whose proposer is a "
        "model, nor run that proposer (no tokens are spent).")] = False,
    propose: Annotated[bool, typer.Option(
        help="Run the proposer once on the seed, in the sandbox, and evaluate its child, as "
        "a run's first attempt (nothing is recorded).")] = True,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Load a task, evaluate its seed workspace once, ask its model endpoint whether it serves
    the task, and run its proposer once; print what works and what does not (exit 1 when the
    seed scores invalid or anything fails)."""

    def body() -> None:
        from rich.markup import escape

        from dreamrsi.cli import _render
        from dreamrsi.engine import check_task
        from dreamrsi.tasks import resolve_task

        report = check_task(resolve_task(directory), isolation,
                            accept_unisolated_model_code=accept_unisolated,
                            endpoint=not offline, propose=propose, base_url=base_url,
                            model=model)
        if as_json:
            print_json(_render.check_dict(report))
        else:
            _render.check_panel(console(), report)
            for problem in report.problems:
                err_console().print(f"[bold red]error:[/] {escape(visible(problem))}",
                                    highlight=False, soft_wrap=True)
        if not report.ok:
            raise typer.Exit(1)

    guard(body)
