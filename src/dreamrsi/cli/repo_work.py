"""The Dream Run's commands that decide and finish: ``next`` (where the next unit of compute
goes, and why), ``work`` (the unattended controller), ``merge``, ``submit`` (the survival
gate) and ``export`` (into the user's repository, never merged). Each calls one function of
:mod:`dreamrsi.repo_runs` (docs/repo-runs.md); :data:`COMMANDS` holds them for ``cli/main.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from dreamrsi.cli._repo import AtOpt, DreamArg, node_line, open_session, say, show
from dreamrsi.cli._shared import err_console, guard, print_json, reader
from dreamrsi.cli.options import (
    DEFAULT_STORE,
    AcceptUnisolatedOpt,
    IsolationOpt,
    JsonOpt,
    RepeatsOpt,
    ReportOutOpt,
    RunArg,
    StoreOpt,
    path_value,
)

EXIT_CODES = {"survived": 0, "failed": 3, "could_not_run": 4}
"""``submit``'s exit status by verdict, as ``survive``'s."""


def next_command(
    run_id: RunArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000,
                                       help="How many ranked actions to print.")] = 10,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Rank where the next unit of compute goes: each action's (ΔÔ + λÎ)/ĉ · ρ, its terms,
    why, and the admissible rows it rests on (successive halving while evidence is thin;
    stagnation's interventions when a path stalls)."""

    def body() -> None:
        from dreamrsi.repo_runs.allocate import next_actions
        from dreamrsi.repo_runs.journal import load_state

        with reader(store) as handle:
            run = handle.get_run(run_id).run_id
            actions = [a.as_dict() for a in next_actions(handle, load_state(handle, run))]
        shown = actions[:limit]
        show({"run": run, "actions": shown}, as_json, lambda: _actions_text(shown))

    guard(body)


def _actions_text(actions: list[dict[str, Any]]) -> str:
    lines = []
    for rank, a in enumerate(actions, 1):
        where = f" {a['dream']}" if a.get("dream") else ""
        lines.append(f"{rank}. {a['kind']}{where}: score {a['score']:.4g}; {a['reason']}")
        if a.get("cites"):
            lines.append(f"   rests on {', '.join(a['cites'][:6])}")
    return "\n".join(lines) or "nothing to do"


def work(
    run_id: RunArg,
    agent: Annotated[str | None, typer.Option(
        help="The agent's command (default: the run's --agent).")] = None,
    steps: Annotated[int | None, typer.Option(
        min=1, max=1_000_000, help="Most decisions to carry out now (default: until the "
        "budget or success ends the work).")] = None,
    isolation: IsolationOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Work on a Dream Run unattended: decide, carry out (an agent step in a dream, a test, a
    revert, a shadow...), checkpoint, and again, until the budget, --steps or success ends
    it. Killed anywhere, it resumes where it was."""

    def body() -> int:
        from dreamrsi.cli._shared import sigterm_as_interrupt
        from dreamrsi.repo_runs.controller import work as work_verb

        with open_session(store, run_id, "work") as session:
            sigterm_as_interrupt()

            def seen(entry: dict[str, Any]) -> None:
                if not as_json:
                    where = f" {entry['dream']}" if entry.get("dream") else ""
                    status = entry.get("outcome", {}).get("status", "")
                    err_console().print(f"[dim]{entry['kind']}{where}: {status}[/dim]",
                                        markup=True, highlight=False)

            try:
                summary = work_verb(session.store, session.run_id, agent=agent, steps=steps,
                                    isolation=isolation, observer=seen)
            except KeyboardInterrupt:
                err_console().print("[yellow]interrupted[/]: `dreamrsi work` again goes on "
                                    "where it stopped")
                return 130
        data = summary.as_dict()
        if as_json:
            print_json(data)
        else:
            best = data["best"]
            say(f"{len(data['actions'])} action(s); stopped: {data['stopped']}"
                + (f"\nbest: {best['node']} score {best['score']}" if best else ""))
        return 0

    code = guard(body)
    if code:
        raise typer.Exit(code)


def merge(
    run_id: RunArg,
    dream: DreamArg,
    into: Annotated[str, typer.Option("--into", help="The dream that takes the work.")],
    message: Annotated[str, typer.Option("--message", "-m", help="What the merge is.")] = "",
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Merge DREAM's head into another dream (a three-way merge in the store's repository):
    a checkpoint of --into; DREAM ends merged. Conflicts are refused, naming the paths."""

    def body() -> None:
        from dreamrsi.repo_runs.finishing import merge as merge_verb
        from dreamrsi.views import checkpoint_dict

        with open_session(store, run_id, "merge") as session:
            data = {"dream": into, "merged": dream,
                    **checkpoint_dict(merge_verb(session, dream, into, message))}
        show(data, as_json, lambda: f"merged {dream} into {into}: checkpoint "
                                    f"{node_line(data)}")

    guard(body)


def submit(
    run_id: RunArg,
    dream: DreamArg,
    repeats: RepeatsOpt = None,
    out: ReportOutOpt = None,
    isolation: IsolationOpt = None,
    accept_unisolated: AcceptUnisolatedOpt = False,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """The survival gate on the dream's head checkpoint against the repository's HEAD, then
    its report (exit 0 survived, 3 failed, 4 could not run)."""

    def body() -> int:
        from dreamrsi.repo_runs.finishing import submit as submit_verb

        with open_session(store, run_id, "submit") as session:
            data = submit_verb(session, dream, repeats=repeats, isolation=isolation,
                               accept_unisolated_model_code=accept_unisolated, out=out)
        show(data, as_json, lambda: _submitted_text(data))
        return EXIT_CODES.get(str(data["verdict"]), 4)

    code = guard(body)
    if code:
        raise typer.Exit(code)


def _submitted_text(data: dict[str, Any]) -> str:
    lines = [f"{str(data['verdict']).replace('_', ' ')}: dream {data['dream']} checkpoint "
             f"{data['node']} (pass {data['pass_id']}); dream now {data['status']}"]
    delta = data.get("delta")
    if delta and delta.get("mean") is not None:
        lines.append(f"delta {delta['mean']:.6g}, 95 % interval [{delta['low']:.6g}, "
                     f"{delta['high']:.6g}]")
    lines += [f"  {reason}" for reason in data.get("reasons", [])]
    lines += [f"report: {path}" for path in data.get("report_files", [])]
    return "\n".join(lines)


def export(
    run_id: RunArg,
    dream: DreamArg,
    branch: Annotated[str | None, typer.Option(
        help="A new branch of your repository holding the checkpoint's changes on your HEAD "
        "(never merged, your checkout untouched).")] = None,
    patch: Annotated[Path | None, typer.Option(
        parser=path_value, help="A file for the binary git diff of HEAD against the "
        "checkpoint.")] = None,
    at: AtOpt = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Export a checkpoint that did not survive (recorded as forced), or "
        "replace an existing patch file.")] = False,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Export a surviving checkpoint of DREAM into your repository as a branch, or as a
    patch file; nothing is ever merged."""

    def body() -> None:
        from dreamrsi.repo_runs.finishing import export as export_verb

        with open_session(store, run_id, "export") as session:
            data = export_verb(session, dream, branch=branch, patch=patch, force=force, at=at)
        show(data, as_json, lambda: "\n".join(f"{k}: {v}" for k, v in data.items()))

    guard(body)


COMMANDS: dict[str, Callable[..., None]] = {
    "next": next_command, "work": work, "merge": merge, "submit": submit, "export": export,
}
"""The Dream Run's commands that decide and finish, in the order ``--help`` lists them."""
