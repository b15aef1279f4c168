"""The ``goldens`` commands: ``add``, ``list`` and ``check`` (the reward that speaks).

``goldens check`` exits 3 when the CI floor fails (1 and 2 stay a user error and a usage
error), so a CI job can gate on it; a rubric golden the judge could not judge is unscored, and
fails the floor only through a floored metric that no golden then scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dreamrsi.cli._shared import fail, guard, print_json, reader, visible
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt, path_value

goldens_app = typer.Typer(help="Golden cases, and checking an agent's outputs against them.",
                          no_args_is_help=True, rich_markup_mode=None)

FLOOR_FAILED = 3
SplitOpt = Annotated[str | None, typer.Option("--split", help="train or heldout.")]


@goldens_app.command("add")
def add(
    file: Annotated[Path | None, typer.Argument(
        parser=path_value, show_default=False,
        help="JSON lines of goldens (fields as `goldens list --json` prints them).")] = None,
    given: Annotated[str | None, typer.Option("--input", help="The case's input.")] = None,
    expected: Annotated[str | None, typer.Option(help="The expected answer (or regex).")] = None,
    match: Annotated[str | None, typer.Option(
        help="exact, contains, regex, command or rubric.")] = None,
    rubric: Annotated[str, typer.Option(help="Judge criteria, as text.")] = "",
    command: Annotated[str, typer.Option(help="A command that scores the output.")] = "",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    split: Annotated[str, typer.Option(help="train or heldout.")] = "train",
    canary: Annotated[bool, typer.Option("--canary", help="A locked answer.")] = False,
    metric: Annotated[str, typer.Option(help="The metric it scores.")] = "correctness",
    golden_id: Annotated[str, typer.Option("--id", help="Its id (default: a digest).")] = "",
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Add golden cases (from a file, or one from the options); all or none."""

    def body() -> None:
        from dreamrsi.knowledge.formats._records import load_records
        from dreamrsi.knowledge.goldens import add_goldens, golden_from
        from dreamrsi.knowledge.traces import Limits
        from dreamrsi.store import open_store

        if (file is None) == (given is None):
            fail("give a file of goldens or --input (one of them)")
        if file is not None:
            limits = Limits()
            goldens = [golden_from(obj, f"{file}:{n}") for n, obj in load_records(
                file, max_file_bytes=limits.max_file_bytes,
                max_line_bytes=limits.max_line_bytes)]
        else:
            obj: dict[str, Any] = {"input": given, "expected": expected, "rubric": rubric,
                                   "command": command, "tags": tag or [], "split": split,
                                   "canary": canary, "metric": metric, "id": golden_id}
            if match is not None:
                obj["match"] = match
            goldens = [golden_from(obj, "the options")]
        with open_store(store, writer=True, holder="goldens add") as handle:
            add_goldens(handle, goldens)
        for g in goldens:
            typer.echo(visible(f"added golden {g.golden_id} ({g.match}, {g.split}"
                               f"{', canary' if g.canary else ''})"))

    guard(body)


@goldens_app.command("list")
def list_goldens(split: SplitOpt = None,
                 tag: Annotated[str | None, typer.Option(help="Only this tag.")] = None,
                 store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List the golden cases."""

    def body() -> None:
        from dreamrsi.cli._table import Column, TextTable
        from dreamrsi.knowledge import goldens

        with reader(store) as handle:
            found = goldens.list_goldens(handle, split=split, tag=tag)
        if as_json:
            print_json([g.as_dict() for g in found])
            return
        table = TextTable(f"{len(found)} goldens", [Column(h) for h in (
            "id", "split", "match", "canary", "metric", "tags", "input")])
        for g in found:
            table.add_row(*(visible(c) for c in (g.golden_id, g.split, g.match,
                                                 "yes" if g.canary else "", g.metric,
                                                 ",".join(g.tags), g.input)))
        table.print()

    guard(body)


@goldens_app.command("check")
def check(
    outputs: Annotated[Path, typer.Option(
        parser=path_value, help="The agent's outputs: JSON lines {id, output} or a JSON "
        "object of id to output.")],
    config: Annotated[Path | None, typer.Option(
        parser=path_value, help="The config repository (its objective.toml: weights and "
        "floor).")] = None,
    split: SplitOpt = None,
    judge_model: Annotated[str | None, typer.Option(
        help="The model that judges rubric goldens (its key from $OPENAI_API_KEY); without "
        "one they are unscored.")] = None,
    base_url: Annotated[str | None, typer.Option(
        help="The judge's OpenAI-compatible endpoint (default $OPENAI_BASE_URL).")] = None,
    store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False,
) -> None:
    """Score the goldens against an agent's outputs: each golden's score and why, the
    metrics, the objective and the floor (exit 3 when it fails)."""

    def body() -> None:
        from dreamrsi.knowledge.check import check_goldens, load_objective, load_outputs
        from dreamrsi.knowledge.goldens import list_goldens as goldens_in

        objective = load_objective(config)
        given = load_outputs(outputs)
        with reader(store) as handle:
            found = goldens_in(handle, split=split)
        judge = None
        if judge_model is not None:
            from dreamrsi.knowledge.judge import judge_client

            judge = judge_client(judge_model, base_url)
        elif base_url is not None:
            fail("--base-url is the judge's endpoint: give --judge-model with it")
        try:
            report = check_goldens(found, given, objective=objective, config_repo=config,
                                   judge=judge)
        finally:
            if judge is not None:
                judge.close()
        if as_json:
            print_json(report.as_dict())
        else:
            for r in report.results:
                score = "-" if r.score is None else f"{r.score:.3g}"
                mark = {True: "pass", False: "FAIL", None: "unscored"}[r.passed]
                typer.echo(visible(f"{mark:8} {r.golden_id} ({r.split}"
                                   f"{', canary' if r.canary else ''}) {r.metric}={score}: "
                                   f"{r.feedback}"))
            metrics = ", ".join(f"{m}={v:.3g}" for m, v in report.metrics.items())
            typer.echo(f"metrics: {metrics or '-'}; objective {report.objective:.4g}")
            if report.unscored:
                why = ("the judge could not judge them" if report.judged else
                       "rubric goldens need --judge-model")
                typer.echo(f"unscored: {len(report.unscored)} goldens, left out of the "
                           f"metrics ({why})")
            if report.judged:
                typer.echo(f"judge tokens: {report.judge_tokens[0]} in, "
                           f"{report.judge_tokens[1]} out")
            typer.echo("floor: " + ("passed" if report.floor_passed else
                                    "FAILED (" + "; ".join(report.floor_failures) + ")"))
        if not report.floor_passed:
            raise typer.Exit(FLOOR_FAILED)

    guard(body)
