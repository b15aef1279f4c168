"""The ``priors fit|show`` commands: a task family's L2 prior and L3 value model
(docs/learning.md).

Each imports its services inside its body: ``--help`` loads nothing heavy.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dreamrsi.cli._shared import guard, print_json, reader, visible
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt, TaskArg

priors_app = typer.Typer(help="Fit and read a task family's learned priors and value model.",
                         no_args_is_help=True, rich_markup_mode=None)

KindOpt = Annotated[str | None, typer.Option(
    "--kind", help="prior (L2) or value (L3); default: both.")]


def _family(task: str) -> str:
    from dreamrsi.learning.family import family_of
    from dreamrsi.tasks import resolve_task

    return family_of(resolve_task(task).name)


@priors_app.command("fit")
def fit(task: TaskArg, kind: KindOpt = None,
        horizon: Annotated[int, typer.Option(
            min=1, max=100, help="A value model's horizon: attempts an extension has to pay "
                                 "within.")] = 3,
        seed: Annotated[int, typer.Option(help="Seed of the value model's fit.")] = 0,
        store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Fit TASK's family's prior and value model on its finished runs: a new version when new
    runs exist since the latest."""

    def body() -> None:
        from rich.markup import escape

        from dreamrsi.cli._shared import err_console
        from dreamrsi.learning.versions import fit_kind, model_view
        from dreamrsi.store import open_store
        from dreamrsi.store.learned import MODEL_KINDS

        family = _family(task)
        kinds = MODEL_KINDS if kind is None else (kind,)
        shown = []
        with open_store(store, writer=True, holder=f"priors fit {family}") as handle:
            for k in kinds:
                fitted, skipped = fit_kind(handle, k, family, horizon=horizon, seed=seed)
                shown.append({**model_view(fitted.model), "new": fitted.new,
                              "skipped": skipped})
                for run_id, why in skipped.items():
                    err_console().print(
                        f"[yellow]warning:[/] {escape(visible(f'run {run_id} left out: {why}'))}",
                        highlight=False, soft_wrap=True)
        if as_json:
            print_json(shown)
            return
        for m in shown:
            state = "stored" if m["new"] else "unchanged (no new run)"
            typer.echo(visible(f"{m['kind']} {m['family']} version {m['version']} "
                               f"({len(m['runs'])} runs): {state}; run it as {m['spec']}"))

    guard(body)


@priors_app.command("show")
def show(task: TaskArg, kind: KindOpt = None,
         version: Annotated[int | None, typer.Option(
             min=1, help="This version (default: the latest).")] = None,
         store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Show TASK's family's latest prior and value model (or one version), and list every
    version of each: its id, its runs, how many were new, when it was stored."""

    def body() -> None:
        from dreamrsi.learning.versions import show_models

        with reader(store) as handle:
            shown = show_models(handle, _family(task), kind, version)
        if as_json:
            print_json(shown)
            return
        typer.echo(visible("\n\n".join(_text(m) + _versions(m) for m in shown)))

    guard(body)


def _chance(row: dict[str, Any]) -> str:
    return (f"{row['mean']:.3f} [{row['low']:.3f}, {row['high']:.3f}] "
            f"({row['k']}/{row['n']})")


def _text(m: dict[str, Any]) -> str:
    b = m["body"]
    lines = [f"{m['kind']} {m['family']} version {m['version']} ({m['model_id']}, "
             f"{len(m['runs'])} runs): {m['spec']}"]
    if m["kind"] == "prior":
        for name, c in b["cost"].items():
            lines.append(f"  cost {name}: mean {c['mean']:.4g}, sd {c['sd']:.4g} "
                         f"(n {c['n']}, recorded {c['recorded']})")
        lines.append(f"  P(first attempt beats the root): {_chance(b['open'])}")
        lines += [f"  P(improve | depth {r['depth']}): {_chance(r)}" for r in b["by_depth"]]
        lines += [f"  P(improve | {r['operator']}): {_chance(r)}" for r in b["by_operator"]]
    else:
        lines.append(f"  horizon {b['horizon']}, {b['extensions']} extensions, "
                     f"{b['paid_share']:.3f} paid")
        lines += [f"  {f}: {w:+.4f}" for f, w in zip(b["features"], b["coef"], strict=True)]
        lines.append(f"  intercept: {b['intercept']:+.4f}")
    return "\n".join(lines)


def _versions(m: dict[str, Any]) -> str:
    from datetime import UTC, datetime

    lines = [f"  versions of the {m['kind']}:"]
    for v in m["versions"]:
        when = datetime.fromtimestamp(v["created_at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"    {v['version']:>4}  {v['model_id']}  {when}  {v['runs']} runs "
                     f"({v['new_runs']:+d}), {v['nodes']} nodes")
    return "\n" + "\n".join(lines)
