"""The ``lifecycle list|show`` commands: every artifact's recorded lifecycle (lessons,
recipes, policies, configs; docs/knowledge.md).

Each imports its services inside its body: ``--help`` and the reading commands load nothing
heavy (``tests/cli/test_startup.py``).
"""

from __future__ import annotations

import datetime
from typing import Annotated

import typer

from dreamrsi.cli._shared import guard, print_json, reader, visible
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt

lifecycle_app = typer.Typer(help="Read the lifecycles of lessons, recipes, policies and "
                            "configs.", no_args_is_help=True, rich_markup_mode=None)


def _when(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


@lifecycle_app.command("list")
def list_lifecycles(
        kind: Annotated[str | None, typer.Option(
            "--kind", help="Only artifacts of this kind: lesson, recipe, policy or config.")
        ] = None,
        in_state: Annotated[str | None, typer.Option(
            "--state", help="Only artifacts in this state (ACTIVE, STALE, ...).")] = None,
        store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List every artifact's recorded lifecycle state, by kind and id."""

    def body() -> None:
        from dreamrsi.cli._table import Column, TextTable
        from dreamrsi.knowledge.reading import lifecycle_list

        with reader(store) as handle:
            shown = lifecycle_list(handle, kind, in_state)
        if as_json:
            print_json(shown)
            return
        table = TextTable(f"{len(shown)} artifacts", [Column(h) for h in (
            "kind", "id", "state", "since", "reason")])
        for a in shown:
            table.add_row(*(visible(c) for c in (
                a["kind"], a["id"], a["state"], _when(a["since"]), a["reason"][:100])))
        table.print()

    guard(body)


@lifecycle_app.command("show")
def show_lifecycle(
        subject: Annotated[str, typer.Argument(
            help="The artifact, KIND:ID (lesson:ID, recipe:ID, policy:ID, config:ID).")],
        store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Show one artifact's lifecycle: every transition, its reason and detail."""

    def body() -> None:
        import json

        from dreamrsi.knowledge.reading import lifecycle_show

        with reader(store) as handle:
            a = lifecycle_show(handle, subject)
        if as_json:
            print_json(a)
            return
        lines = [f"{a['kind']} {a['id']}: {a['state']} since {_when(a['since'])}"]
        for e in a["history"]:
            lines.append(f"  #{e['seq']} {_when(e['t'])} {e['from'] or '-'} -> {e['to']}: "
                         f"{e['reason']}")
        if a["detail"]:
            lines.append("  detail: " + json.dumps(a["detail"], sort_keys=True))
        typer.echo(visible("\n".join(lines)))

    guard(body)
