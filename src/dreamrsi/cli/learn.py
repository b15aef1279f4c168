"""The ``learn`` command: one night of learning over a config repository (distill, gate,
commit what passed as a branch or a patch, report). Exit 0 when the night ran (whatever it
accepted), 1 on a user error (a bad config, no held-out goldens, an agent failing on HEAD)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dreamrsi.cli._shared import guard, print_json, visible
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt, path_value


def _render(data: dict[str, Any], summary: str) -> None:
    b, f = data["baseline"], data["final"]
    rejected = ", ".join(f"{k} {v}" for k, v in sorted(data["rejected"].items())) or "none"
    part, parts = data["heldout_part"]
    lines = [
        f"night {data['night']}{' (dry run: nothing recorded)' if data['dry_run'] else ''}: "
        f"config {data['head'][:12]}, agent model {data['model'] or '(unnamed)'}, held-out "
        f"part {part} of {parts}",
        f"proposals {data['proposals']}, accepted {data['accepted']}, rejected: {rejected}",
        f"held-out pass rate {100 * b['heldout_pass_rate']:.0f}% -> "
        f"{100 * f['heldout_pass_rate']:.0f}% (objective {b['heldout_objective']:.4g} -> "
        f"{f['heldout_objective']:.4g})",
        f"pool {data['pool_size']} active insights; model tokens {data['tokens_in']} in, "
        f"{data['tokens_out']} out",
    ]
    if data["unjudged"]:
        lines.append(f"{data['unjudged']} rubric goldens unscored (no --judge-model): left out "
                     "of the objective and the floor")
    for d in data["decisions"]:
        verdict = "accepted" if d["accepted"] else f"rejected {d['rejection']}"
        lines.append(f"  {verdict}: {d['proposal']['text'][:80]} ({d['why']})")
    for e in data["distill_errors"]:
        lines.append(f"  distill error: {e}")
    lines += [f"  {line}" for line in data["configs"]]
    if data["branch"]:
        lines.append(f"branch {data['branch']} (review it; nothing is merged)")
    elif data["patch"]:
        lines.append(f"patch {data['patch']} (summary beside it)")
    else:
        lines.append("no branch: nothing passed" if not data["dry_run"] else "no branch")
    typer.echo(visible("\n".join(lines)))
    typer.echo(visible("\n" + summary))


def learn(
    config: Annotated[Path, typer.Option(
        parser=path_value, help="The config repository (a git repository with dreamrsi.toml "
        "and objective.toml).")],
    model: Annotated[str | None, typer.Option(
        help="The distiller's model (without one, the statistical distiller).")] = None,
    base_url: Annotated[str | None, typer.Option(
        help="The distiller's OpenAI-compatible endpoint.")] = None,
    judge_model: Annotated[str | None, typer.Option(
        help="The model that judges rubric goldens (without one they are unscored and left "
        "out).")] = None,
    judge_base_url: Annotated[str | None, typer.Option(
        help="The judge's endpoint (default: --base-url).")] = None,
    scope: Annotated[str | None, typer.Option(help="Distill only this scope.")] = None,
    night: Annotated[int | None, typer.Option(
        min=0, help="The night's number (picks the held-out part; default: the nights "
        "recorded so far).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Propose and gate, record nothing, write no branch.")] = False,
    patch: Annotated[Path | None, typer.Option(
        parser=path_value, help="Write what passed as this patch file (and "
        "FILE.summary.md) instead of a branch.")] = None,
    proposals: Annotated[Path | None, typer.Option(
        parser=path_value, help="Gate the proposals of this JSON-lines file instead of "
        "distilling.")] = None,
    isolation: Annotated[str, typer.Option(
        help="The agent's sandbox: required or auto.")] = "required",
    store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False,
) -> None:
    """One night of learning: distill rules from the accepted traces, gate them on held-out
    goldens, canaries and the floor, and commit what passed as a branch of the config
    repository (or a patch) with a summary; nothing merges by itself."""

    def body() -> None:
        from dreamrsi.errors import ConfigError
        from dreamrsi.knowledge.learn import learn as run_learn
        from dreamrsi.knowledge.learn import read_proposals
        from dreamrsi.store import open_store

        if isolation not in ("required", "auto"):
            raise ConfigError("the agent's isolation is 'required' or 'auto'",
                              key="--isolation")
        given = read_proposals(proposals) if proposals is not None else None
        client = None
        if model is not None and given is None:
            from dreamrsi.agents.client import ModelClient
            from dreamrsi.tasks.proposers import LlmSettings, ModelChoice

            client = ModelClient(LlmSettings(models=(ModelChoice(model),), base_url=base_url))
        judge = None
        if judge_model is not None:
            from dreamrsi.knowledge.judge import judge_client

            judge = judge_client(judge_model, judge_base_url or base_url)
        try:
            with open_store(store, writer=not dry_run, holder="learn") as handle:
                report = run_learn(handle, config, proposals=given, model=client,
                                   scope=scope, night=night, dry_run=dry_run, patch=patch,
                                   isolation=isolation, judge=judge)
        finally:
            if client is not None:
                client.close()
            if judge is not None:
                judge.close()
        if as_json:
            print_json({**report.as_dict(), "summary": report.summary})
        else:
            _render(report.as_dict(), report.summary)

    guard(body)
