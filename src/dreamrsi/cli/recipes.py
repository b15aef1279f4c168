"""The ``recipes list|show`` commands: the best solutions of each task, offered as warm starts
(``dreamrsi run TASK --from-recipe ID``) and in proposers' contexts (docs/knowledge.md).

Each imports its services inside its body: ``--help`` and the reading commands load nothing
heavy (``tests/cli/test_startup.py``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from dreamrsi.cli._shared import guard, print_json, reader, visible
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt

recipes_app = typer.Typer(help="Read the recipes: each task's survived (or best verified) "
                          "solutions.", no_args_is_help=True, rich_markup_mode=None)


def _score(value: object) -> str:
    return "-" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)


@recipes_app.command("list")
def list_recipes(task: Annotated[str | None, typer.Option(
                     "--task", help="Only the recipes of the task of this name.")] = None,
                 store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List the recipes, ACTIVE first, then by task and score."""

    def body() -> None:
        from dreamrsi.cli._table import Column, TextTable
        from dreamrsi.knowledge.reading import recipes_list

        with reader(store) as handle:
            shown = recipes_list(handle, task)
        if as_json:
            print_json(shown)
            return
        table = TextTable(f"{len(shown)} recipes", [Column(h) for h in (
            "id", "state", "task", "score", "verdict", "files", "plan")])
        for r in shown:
            table.add_row(*(visible(c) for c in (
                r["id"], r["state"], r["task"]["name"], _score(r["raw_score"]),
                r["verdict"] or r["basis"], "unreadable" if r["error"] else str(len(r["files"])),
                r["plan"][:80])))
        table.print()

    guard(body)


@recipes_app.command("show")
def show_recipe(recipe: Annotated[str, typer.Argument(help="Recipe id (or a unique prefix).")],
                store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Show a recipe: its task, node, score, verdict, plan, feedback, lifecycle and its diff
    against its run's root."""

    def body() -> None:
        from dreamrsi.knowledge.reading import recipe_show

        with reader(store) as handle:
            r = recipe_show(handle, recipe)
        if as_json:
            print_json(r)
            return
        lines = [f"recipe {r['id']} ({r['state']}: {r['reason']})",
                 f"  task {r['task']['name']} ({r['task']['digest'][:12]}), run {r['run']}, "
                 f"node {r['node']}, commit {r['commit']}",
                 f"  score {_score(r['raw_score'])}, verdict {r['verdict'] or '-'} "
                 f"({r['basis']})", f"  plan: {r['plan'] or '-'}",
                 f"  feedback: {r['feedback'] or '-'}",
                 "  files: " + (", ".join(f"{f['path']} ({f['change']})" for f in r["files"])
                                or "none")]
        if r["error"]:
            lines.append(f"  error: {r['error']}")
        lines += [f"  #{s['seq']} {s['from'] or '-'} -> {s['to']}: {s['reason']}"
                  for s in r["lifecycle"]]
        typer.echo(visible("\n".join(lines)))
        typer.echo(visible(r["diff"]) + ("\n[diff cut]" if r["diff_cut"] else ""))

    guard(body)
