"""Commands for online runs: ``run``, ``resume``, ``status``, ``show``, ``best``.

Each command imports the services it calls inside its body, so ``--help`` and the reading
commands never load the engine, the task formats or the model client.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dreamrsi.cli._shared import (
    console,
    guard,
    print_json,
    reader,
    refit_priors,
    sigterm_as_interrupt,
    stream_json,
)
from dreamrsi.cli.options import (
    COUNT,
    DEFAULT_STORE,
    MAX_INT,
    POSITIVE_HELP,
    AcceptUnisolatedOpt,
    BaseUrlOpt,
    ExecutorOpt,
    HistoryOpt,
    InfraFailuresOpt,
    JsonOpt,
    ModelOpt,
    RayAddressOpt,
    RefitOpt,
    RunArg,
    StoreOpt,
    TargetOpt,
    TaskArg,
    WorkersOpt,
    path_value,
    seed_option,
)
from dreamrsi.views import head_dict

if TYPE_CHECKING:
    from dreamrsi.store.base import RunStore
    from dreamrsi.tasks.spec import Task

SMALL_TREE = 100
"""``show`` lists every node of a tree this small."""
PAGE = 100
"""``show`` lists at most this many nodes in text unless ``--limit`` says otherwise."""


def run(
    task: TaskArg,
    budget: Annotated[int, typer.Option(**COUNT, help="Most attempts (root excluded).")] = 60,
    workers: WorkersOpt = 1,
    rounds: Annotated[int | None, typer.Option(
        **COUNT, help="Most decision rounds (K1).")] = None,
    wall_time: Annotated[float | None, typer.Option(
        help="Most wall time, seconds" + POSITIVE_HELP)] = None,
    max_tokens: Annotated[int | None, typer.Option(**COUNT, help="Most model tokens.")] = None,
    max_cost: Annotated[float | None, typer.Option(
        help="Most money, USD" + POSITIVE_HELP)] = None,
    seed: Annotated[int, seed_option("Seed of the run.")] = 0,
    policy: Annotated[str | None, typer.Option(
        help="Policy as NAME[:key=value,...] (default: fixed refinement sized to the budget)."
    )] = None,
    isolation: Annotated[str | None, typer.Option(
        help="auto | required | off (default: the task's setting).")] = None,
    accept_unisolated: AcceptUnisolatedOpt = False,
    target: TargetOpt = None,
    history: HistoryOpt = 0,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    max_infra_failures: InfraFailuresOpt = 3,
    survive: Annotated[bool, typer.Option(
        "--survive", help="Then run a survival pass on the best node: only a node that "
        "survives is the run's result (exit 3 when it fails, 4 when it could not run).")
    ] = False,
    from_recipe: Annotated[str | None, typer.Option(
        "--from-recipe", help="Start from this recipe (`dreamrsi recipes list`) instead of "
        "the task's seed.")] = None,
    lessons: Annotated[bool, typer.Option(
        "--lessons/--no-lessons", help="Give proposers the task's ACTIVE lessons and its "
        "recipes (also off with the task's [proposer] lessons = false).")] = True,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
    refit: RefitOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run a discovery: explore TASK under a policy until a budget ends, the target is reached
    or the policy stops."""

    def body() -> int:
        from rich.markup import escape

        from dreamrsi.cli._shared import err_console, visible
        from dreamrsi.engine import RunConfig, default_policy, start_run
        from dreamrsi.engine.executor_kinds import make_executor
        from dreamrsi.knowledge.starts import record_recipes, run_knowledge
        from dreamrsi.policies.registry import parse_spec
        from dreamrsi.store import open_store
        from dreamrsi.tasks import resolve_task

        spec = parse_spec(policy) if policy else default_policy(budget, workers)
        settings: dict[str, Any] = dict(
            budget=budget, workers=workers, max_rounds=rounds, wall_time_s=wall_time,
            max_tokens=max_tokens, max_cost_usd=max_cost, seed=seed, policy=spec,
            isolation=isolation, target=target, history=history,
            max_infra_failures=max_infra_failures, base_url=base_url, model=model)
        RunConfig(**settings)  # a wrong setting is refused before the store is opened
        runner = make_executor(executor, ray_address)
        loaded = resolve_task(task)
        say_notes(loaded)
        with open_store(store, writer=True, holder=f"run {loaded.name}") as handle:
            known = run_knowledge(handle, loaded.name, loaded.digest, recipe=from_recipe,
                                  lessons=lessons and loaded.proposer.lessons)
            for warning in known.warnings:
                err_console().print(f"[yellow]warning:[/] {escape(visible(warning))}",
                                    highlight=False, soft_wrap=True)
            config = RunConfig(**settings, **known.settings)
            sigterm_as_interrupt()
            summary = _drive(lambda obs: start_run(
                handle, loaded, config, obs, accept_unisolated_model_code=accept_unisolated,
                executor=runner),
                as_json, budget)
            refit_priors(handle, loaded.name, summary.run_id, refit)
            gate = (isolation, accept_unisolated) if survive else None
            code = _finish(handle, summary.run_id, as_json, gate)
            _, problem = record_recipes(handle)
            if problem:
                err_console().print(f"[yellow]note:[/] {escape(visible(problem))}",
                                    highlight=False, soft_wrap=True)
            return code

    code = guard(body)
    if code:
        raise typer.Exit(code)


def resume(run_id: RunArg, accept_unisolated: AcceptUnisolatedOpt = False,
           base_url: BaseUrlOpt = None, model: ModelOpt = None,
           max_infra_failures: Annotated[int | None, typer.Option(
               "--max-infra-failures", min=0, max=MAX_INT,
               help="Replace the run's limit of attempts in a row failing outside the "
               "candidate, for this session (0: never stop on them).")] = None,
           executor: ExecutorOpt = "local", ray_address: RayAddressOpt = None,
           refit: RefitOpt = None, store: StoreOpt = DEFAULT_STORE,
           as_json: JsonOpt = False) -> None:
    """Continue a run that was killed, interrupted or stopped by failures outside its
    candidates; in-flight attempts become `lost`."""

    def body() -> None:
        from dreamrsi.engine import resume_run
        from dreamrsi.engine.executor_kinds import make_executor
        from dreamrsi.store import open_store

        runner = make_executor(executor, ray_address)
        with open_store(store, writer=True, holder=f"resume {run_id}") as handle:
            sigterm_as_interrupt()
            record = handle.get_run(run_id)
            summary = _drive(lambda obs: resume_run(
                handle, record.run_id, obs, accept_unisolated_model_code=accept_unisolated,
                base_url=base_url, model=model, max_infra_failures=max_infra_failures,
                executor=runner),
                as_json, record.config.get("budget"))
            refit_priors(handle, record.task_name, summary.run_id, refit)
            _finish(handle, summary.run_id, as_json)

    guard(body)


def say_notes(task: Task) -> None:
    """Print on stderr what dreamrsi does not take from a peer's folder (its notes)."""
    from rich.markup import escape

    from dreamrsi.cli._shared import err_console, visible

    for note in task.peer.notes if task.peer is not None else ():
        err_console().print(f"[yellow]note:[/] {escape(visible(note))}", highlight=False,
                            soft_wrap=True)


def _drive(start: Callable[[Any], Any], as_json: bool, budget: int | None) -> Any:
    if as_json or not console().is_terminal and os.environ.get("DREAMRSI_PROGRESS") != "1":
        return start(None)
    from dreamrsi.cli import _render

    with _render.RunProgressBar(console(), budget) as bar:
        return start(bar)


def _finish(handle: RunStore, run_id: str, as_json: bool,
            gate: tuple[str | None, bool] | None = None) -> int:
    """Print the run's summary; with ``gate`` (isolation, consent), first a survival pass on
    its best node, whose exit status is returned (else 0)."""
    from dreamrsi.cli import _render
    from dreamrsi.views import run_result

    summary = run_result(handle, run_id)
    code = 0
    if gate is not None and summary["best_node"] is not None:
        from dreamrsi.cli.survival import gate_run

        code = gate_run(handle, run_id, *gate, summary, as_json)
    elif gate is not None:  # nothing valid to check: no result
        summary["survival"] = None
        code = 4
        if not as_json:
            console().print("no valid node to check: the run has no result")
    head = handle.chain_head(run_id)
    if as_json:
        print_json({**summary, "ledger_head": head_dict(head)})
    else:
        _render.summary_table(console(), summary)
        _render.head_line(console(), run_id, head)
    return code


def status(
    offset: Annotated[int, typer.Option(
        min=0, max=MAX_INT, help="Skip this many runs (oldest first).")] = 0,
    limit: Annotated[int | None, typer.Option(
        **COUNT, help="List at most this many runs (default: every run).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """List the runs of the store with their state, counts and best score (oldest first; a
    page of them with --offset and --limit)."""

    def body() -> None:
        from dreamrsi.views import run_list

        with reader(store) as handle:
            runs = run_list(handle, offset=offset, limit=limit)
        if as_json:
            print_json({"store": str(store), "runs": runs})
        else:
            from dreamrsi.cli import _render

            _render.runs_table(runs)

    guard(body)


def show(
    run_id: RunArg,
    node: Annotated[str | None, typer.Argument(
        help="Show this node of the run instead of its tree: a node id, a unique prefix of "
        "one, or its seq (creation number; the root is 0).")] = None,
    all_nodes: Annotated[bool, typer.Option(
        "--all", help="List every node (the default for a tree of at most "
        f"{SMALL_TREE} nodes, and for --json).")] = False,
    branch: Annotated[int | None, typer.Option(
        **COUNT, help="List branch K only (branches are numbered by creation order).")] = None,
    depth: Annotated[int | None, typer.Option(
        min=0, max=MAX_INT, help="List nodes down to this depth only (1: the branches' "
        "first nodes).")] = None,
    offset: Annotated[int, typer.Option(
        min=0, max=MAX_INT, help="Skip this many nodes of the listing.")] = 0,
    limit: Annotated[int | None, typer.Option(
        **COUNT, help=f"List at most this many nodes (default {PAGE} in text, all in "
        "--json).")] = None,
    after: Annotated[str | None, typer.Option(
        help="List the nodes that follow this one in the listing (the last node of the "
        "previous page: its id, a unique prefix of one, or its seq); reads only the page, "
        "however deep.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Show a run's tree: its spend, its branches (size, depth, best score), then its nodes
    branch by branch (depth, score, status, plan, why it did not score): every node of a small
    tree; of a large one, the best node's branch down to it, unless --all, --branch or --depth
    choose. With NODE: that node's whole record (plan, feedback, metrics, cost, model, diff
    against its parent, ledger rows, the model's request and answer)."""

    def body() -> None:
        if node is not None:
            if all_nodes or branch is not None or depth is not None or offset or \
                    limit is not None or after is not None:
                raise _user_error("--all, --branch, --depth, --offset, --after and --limit "
                                  "choose nodes of a listing; with NODE, show prints that "
                                  "node alone", key="NODE")
            _show_node(run_id, node, store, as_json)
            return
        from dreamrsi.views import tree_head, tree_nodes

        if after is not None:
            _show_page(run_id, after, branch, depth, offset, limit, store, as_json)
            return
        with reader(store) as handle:
            overview = tree_head(handle, run_id)
            tree = overview["tree"]
            chosen, max_depth, title = _selection(tree, all_nodes or as_json, branch, depth)
            page = limit if limit is not None or as_json else PAGE
            rows = tree_nodes(handle, run_id, branch=chosen, depth=max_depth, offset=offset,
                              limit=page)
            if as_json:
                stream_json(overview, "nodes", rows)
                return
            from dreamrsi.cli import _render

            _render.tree_view(overview, list(rows), title, offset, page)

    guard(body)


def _selection(tree: dict[str, Any], every: bool, branch: int | None,
               depth: int | None) -> tuple[int | None, int | None, str]:
    """Which nodes ``show`` lists: (branch, depth limit, what the listing is called)."""
    if branch is not None and branch > tree["branches"]:
        raise _user_error(f"the run has {tree['branches']} branches; --branch takes 1 to "
                          f"{max(tree['branches'], 1)}")
    if every or branch is not None or depth is not None or tree["nodes"] <= SMALL_TREE:
        what = f"branch {branch}" if branch is not None else "every node"
        return branch, depth, what + ("" if depth is None else f" down to depth {depth}")
    if tree["best_branch"] is None:
        return None, 1, "the root and the first node of each branch (no scored node yet)"
    return (tree["best_branch"], tree["best_depth"],
            f"branch {tree['best_branch']} down to the best node")


def _show_page(run_id: str, after: str, branch: int | None, depth: int | None, offset: int,
               limit: int | None, store: Path, as_json: bool) -> None:
    """``show RUN --after NODE``: the page of the listing that follows the node (its id, a
    unique prefix of one, or its seq), alone: none of the run's summary, which reads the
    whole tree."""
    from dreamrsi.engine.node_view import find_node
    from dreamrsi.views import tree_nodes

    if offset:
        raise _user_error("a listing starts --after a node or at an --offset, not both",
                          key="--after")
    with reader(store) as handle:
        run = handle.get_run(run_id).run_id
        cursor = find_node(handle, run, after).node_id
        page = limit if limit is not None or as_json else PAGE
        rows = tree_nodes(handle, run, branch=branch, depth=depth, limit=page, after=cursor)
        if as_json:
            stream_json({"run_id": run, "after": cursor}, "nodes", rows)
            return
        from dreamrsi.cli import _render

        what = "every node" if branch is None else f"branch {branch}"
        what += "" if depth is None else f" down to depth {depth}"
        _render.nodes_table(list(rows), f"{what}, after {cursor}", 0, page)


def _user_error(message: str, key: str = "--branch") -> Exception:
    from dreamrsi.errors import ConfigError

    return ConfigError(message, key=key)


def _show_node(run_id: str, node: str, store: Path, as_json: bool) -> None:
    from dreamrsi.engine.node_view import node_detail

    with reader(store) as handle:
        detail = node_detail(handle, run_id, node)
    if as_json:
        print_json(detail)
    else:
        from dreamrsi.cli import _node

        _node.node_text(detail)


def best(
    run_id: RunArg,
    export: Annotated[Path | None, typer.Option(
        parser=path_value, help="Write the best workspace's files into this new directory, or "
        "into this existing empty one (a file, a symbolic link or a non-empty directory is "
        "refused: nothing is overwritten).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Show the best node of a run, and optionally export its workspace."""

    def body() -> None:
        from dreamrsi.views import best_info

        with reader(store) as handle:
            info = best_info(handle, run_id, export)
        if as_json:
            print_json(info)
        else:
            from dreamrsi.cli import _render

            _render.best_panel(info)

    guard(body)
