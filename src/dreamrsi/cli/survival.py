"""The ``survive`` command: an independent survival pass of a run's node against a base.

Exit codes a script can act on: 0 survived, 3 failed, 4 could not run (1 and 2 stay a user
error and a usage error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from dreamrsi.cli._shared import console, err_console, guard, print_json, sigterm_as_interrupt
from dreamrsi.cli.options import (
    DEFAULT_STORE,
    AcceptUnisolatedOpt,
    IsolationOpt,
    JsonOpt,
    RepeatsOpt,
    ReportOutOpt,
    RunArg,
    StoreOpt,
)
from dreamrsi.views import outcome_dict

if TYPE_CHECKING:
    from dreamrsi.survival.service import PassOutcome

EXIT_CODES = {"survived": 0, "failed": 3, "could_not_run": 4}
"""The exit status of ``survive`` (and of ``run``/``loop --survive``) for each verdict."""


def survive(
    run_id: RunArg,
    node: Annotated[str | None, typer.Argument(
        help="Node id (default: the run's best node).")] = None,
    repeats: RepeatsOpt = None,
    base: Annotated[str | None, typer.Option(
        help="ROOT (the run's root, the default), a node id, or a commit of the store.")] = None,
    out: ReportOutOpt = None,
    isolation: IsolationOpt = None,
    accept_unisolated: AcceptUnisolatedOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Check a result independently: re-run the evaluator on clean checkouts of NODE and its
    base, check the hard constraints and fresh instances, and report a verdict (exit 0
    survived, 3 failed, 4 could not run)."""

    def body() -> int:
        from rich.markup import escape

        from dreamrsi.knowledge.starts import record_recipes
        from dreamrsi.store import open_store
        from dreamrsi.survival.service import survive as run_pass

        with open_store(store, writer=True, holder=f"survive {run_id}") as handle:
            sigterm_as_interrupt()
            say = None if as_json else (lambda text: err_console().print(f"[dim]{text}[/dim]"))
            try:
                outcome = run_pass(handle, handle.get_run(run_id).run_id, node, base=base,
                                   repeats=repeats, isolation=isolation,
                                   accept_unisolated_model_code=accept_unisolated, out=out,
                                   progress=say)
            except KeyboardInterrupt:
                err_console().print("[yellow]interrupted[/]; the pass has no verdict: run "
                                    "`dreamrsi survive` again for a new one")
                raise typer.Exit(130) from None
            _, problem = record_recipes(handle)
        if problem:
            err_console().print(f"[yellow]note:[/] {escape(problem)}", highlight=False)
        show_outcome(outcome, as_json)
        return EXIT_CODES[outcome.verdict.value]

    code = guard(body)
    if code:
        raise typer.Exit(code)


def show_outcome(outcome: PassOutcome, as_json: bool) -> None:
    """Print a pass's verdict, every failing reason (or why it could not run), and where its
    report is."""
    if as_json:
        print_json(outcome_dict(outcome))
        return
    from rich.markup import escape

    out = console()
    report = outcome.report
    verdict = outcome.verdict.value
    colour = {"survived": "green", "failed": "red"}.get(verdict, "yellow")
    out.print(f"[{colour}]{verdict.replace('_', ' ')}[/{colour}]: node {report['node_id']} "
              f"against {report['base']} (pass {outcome.record.pass_id})")
    delta = report["claims"]["delta"]
    if delta is not None:
        out.print(f"delta {delta['mean']:.6g}, 95 % interval [{delta['low']:.6g}, "
                  f"{delta['high']:.6g}] over {report['repeats']} repeat(s)")
    for f in report["findings"]:
        if f["fails"] or f["reason"] in ("could_not_run", "untested"):
            out.print(f"  {f['reason']}: {escape(f['message'])}")
    for path in outcome.files:
        out.print(f"report: {escape(str(path))}")


def gate_run(handle: Any, run_id: str, isolation: str | None, accept: bool,
             summary: dict[str, Any], as_json: bool) -> int:
    """``run --survive``: a pass on the run's best node against its root; the run's result
    becomes its best surviving node (none: said so). Returns the pass's exit status."""
    from dreamrsi.survival.queries import best_surviving
    from dreamrsi.survival.service import survive as run_pass

    say = None if as_json else (lambda text: err_console().print(f"[dim]{text}[/dim]"))
    outcome = run_pass(handle, run_id, isolation=isolation,
                       accept_unisolated_model_code=accept, progress=say)
    best = best_surviving(handle, run_id)
    summary["best_node"] = best.node_id if best is not None else None
    summary["best_score"] = best.raw_score if best is not None else None
    summary["survival"] = outcome_dict(outcome)
    if not as_json:
        show_outcome(outcome, False)
        if best is None:
            console().print("no node of the run survived: the run has no result")
        else:
            console().print(f"result: node {best.node_id}, score {best.raw_score} (survived)")
    return EXIT_CODES[outcome.verdict.value]
