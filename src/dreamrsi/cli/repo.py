"""The Dream Run commands: ``open`` a run over a git repository, then work in its dreams
(``exec``, ``checkpoint``, ``fork``, ``revert``, ``abandon``, ``shadow``, ``answer``), set its
``subgoal`` and read it (``brief``, ``dreams``). Each command calls one verb of
:mod:`dreamrsi.repo_runs` (docs/repo-runs.md); hypotheses and questions are in
:mod:`~dreamrsi.cli.beliefs`.

The commands that write take the store's writer lock for as long as they run; ``brief`` and
``dreams`` only read. A store that does not exist is an error of every command but ``open``
(nothing is created by a mistake). :data:`COMMANDS` holds the commands; ``cli/main.py``
registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from dreamrsi.cli._repo import (
    AtOpt,
    BriefChars,
    CiteOpt,
    DreamArg,
    TimeoutOpt,
    dream_line,
    dream_of,
    node_line,
    open_session,
    show,
)
from dreamrsi.cli._shared import err_console, guard, print_json, reader, visible
from dreamrsi.cli.options import DEFAULT_STORE, MAX_SEED, JsonOpt, RunArg, StoreOpt, path_value

DEFAULT_CHARS = 12_000
"""``dreamrsi.repo_runs.brief.DEFAULT_CHARS``."""
OPEN_BRIEF_LINES = 24
"""How many lines of the brief ``open`` prints."""


def open_run(
    repo: Annotated[Path, typer.Option(
        "--repo", parser=path_value, show_default=False,
        help="The git repository to work on (its HEAD is the root; it is never written).")],
    objective: Annotated[str, typer.Option(help="What the work is for, in words.")],
    eval_cmd: Annotated[str, typer.Option(
        "--eval", help="The command that judges a checkpoint, run in a clean checkout of it "
        "in the sandbox.")],
    verdict: Annotated[str, typer.Option(
        help="exit (its exit status and test counts) | json (it prints dreamrsi's verdict "
        "{\"score\", \"valid\", \"feedback\"}).")] = "exit",
    success: Annotated[list[str] | None, typer.Option(
        "--success", help="A success criterion, in words; repeat for more.")] = None,
    constraint: Annotated[list[str] | None, typer.Option(
        "--constraint", help="A constraint, in words (every brief shows it); repeat.")] = None,
    protect: Annotated[list[str] | None, typer.Option(
        "--protect", help="A path (relative to the repository) no checkpoint may change; "
        "repeat.")] = None,
    budget: Annotated[list[str] | None, typer.Option(
        "--budget", help="6h | 90m | $20 | 40 (checkpoints); repeat for several.")] = None,
    agent: Annotated[str | None, typer.Option(
        help="The agent command of unattended work, or llm (dreamrsi's own model client: "
        "--model, --base-url, --files).")] = None,
    model: Annotated[str | None, typer.Option(
        help="With --agent llm: the model to ask.")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="With --agent llm: its OpenAI-compatible endpoint (default "
        "$OPENAI_BASE_URL; the key is read from $OPENAI_API_KEY).")] = None,
    files: Annotated[list[str] | None, typer.Option(
        "--files", help="With --agent llm: a file it is shown and may edit; repeat "
        "(default: every text file).")] = None,
    eval_timeout: Annotated[float, typer.Option(
        "--eval-timeout", help="The evaluator's time limit, s (at most 86400).")] = 600.0,
    agent_timeout: Annotated[float, typer.Option(
        "--agent-timeout", help="One agent step's limit, s (at most 86400).")] = 1800.0,
    network: Annotated[bool, typer.Option(
        "--network", help="Let commands reach the network (off by default).")] = False,
    read_path: Annotated[list[str] | None, typer.Option(
        "--read-path", help="A host folder commands may read; repeat.")] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="The run's seed.")] = 0,
    target: Annotated[float | None, typer.Option(
        help="The score that meets the success criteria: unattended work stops there and "
        "offers the dream for submit (default 1.0, a full pass).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Open a Dream Run over a git repository: copy it, evaluate its HEAD as the root, and
    start the primary dream d1 in a working copy of its own."""

    def body() -> None:
        from dreamrsi.repo_runs.opening import OpenRequest, check_request
        from dreamrsi.repo_runs.verbs import open_run as open_verb
        from dreamrsi.store import open_store
        from dreamrsi.views import opened_dict

        req = OpenRequest(
            repo=repo, objective=objective, eval_cmd=eval_cmd, verdict=verdict,
            success=tuple(success or ()), constraints=tuple(constraint or ()),
            protect=tuple(protect or ()), budget=tuple(budget or ()), agent=agent,
            eval_timeout_s=eval_timeout, agent_timeout_s=agent_timeout, network=network,
            read_paths=tuple(read_path or ()), seed=seed, target=target, model=model,
            base_url=base_url, files=tuple(files or ()))
        check_request(req)  # before the store is made: a mistake writes nothing
        with open_store(store, writer=True, holder="open") as handle:
            state = open_verb(handle, req)
            data = opened_dict(handle, state, DEFAULT_CHARS)
        show(data, as_json, lambda: _opened_text(data))

    guard(body)


def _opened_text(data: dict[str, Any]) -> str:
    from dreamrsi.repo_runs.brief import brief_text

    run = data["run_id"]
    d1 = data["dreams"][0]
    lines = [f"opened Dream Run {run} over {data['repo']} (HEAD {data['head'][:12]})",
             f"root {node_line(data['root'])}",
             f"dream d1 (primary): working copy {d1['working_copy']}", ""]
    brief = brief_text(data["brief"]).splitlines()
    lines += brief[:OPEN_BRIEF_LINES]
    if len(brief) > OPEN_BRIEF_LINES:
        lines.append(f"... (the whole brief: dreamrsi brief {run} --dream d1)")
    lines += ["", f"next: edit files in the working copy; `dreamrsi exec {run} d1 -- CMD` runs "
              f"a command there; `dreamrsi checkpoint {run} d1 -m MSG` evaluates and keeps it"]
    return "\n".join(lines)


def brief(
    run_id: RunArg,
    dream: Annotated[str | None, typer.Option(
        help="Brief this dream's worker: its question, last evaluation, shadows' answers.")
    ] = None,
    max_chars: BriefChars = DEFAULT_CHARS,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """The state a fresh model context starts from: objective, criteria, constraints,
    subgoal, open hypotheses, dreams, recent admissible evidence, autopsies, budget."""

    def body() -> None:
        from dreamrsi.repo_runs.brief import brief as make_brief
        from dreamrsi.repo_runs.brief import brief_text
        from dreamrsi.repo_runs.journal import load_state

        with reader(store) as handle:
            state = load_state(handle, handle.get_run(run_id).run_id)
            data = make_brief(handle, state, dream=dream, max_chars=max_chars)
        show(data, as_json, lambda: brief_text(data).rstrip("\n"))

    guard(body)


def dreams(run_id: RunArg, store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """The run's dreams: kind, status, head checkpoint and its score, working copy."""

    def body() -> None:
        from dreamrsi.repo_runs.journal import load_state
        from dreamrsi.views import dream_rows

        with reader(store) as handle:
            state = load_state(handle, handle.get_run(run_id).run_id)
            rows = dream_rows(handle, state)
        show({"run_id": state.run_id, "dreams": rows}, as_json,
              lambda: "\n".join(dream_line(d) for d in rows))

    guard(body)


# -- work in a dream ---------------------------------------------------------------------


TIMEOUT_EXIT = 124
"""``exec``'s exit status when the command ran past ``--timeout`` (as ``timeout(1)``)."""


def exec_command(
    run_id: RunArg,
    dream: DreamArg,
    command: Annotated[list[str], typer.Argument(
        help="The command and its arguments (after --); one argument is a shell line.",
        show_default=False)],
    timeout: TimeoutOpt = 600.0,
    keep: Annotated[list[str] | None, typer.Option(
        "--keep", help="A file of the working copy the command writes (a JUnit report, a "
        "benchmark's JSON), kept with its row and read for its counts; repeat.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run a command in the dream's working copy, in the sandbox, and record it in the
    ledger (its row id, exit, output, the commit of the files it ran on). Exits with the
    command's own status (124: timed out; 1 also for dreamrsi's own errors)."""

    def body() -> int:
        from dreamrsi.cli._shared import sigterm_as_interrupt

        with open_session(store, run_id, "exec") as session:
            sigterm_as_interrupt()
            try:
                result = session.execute(dream, command, timeout_s=timeout,
                                         artifacts=tuple(keep or ()))
            except KeyboardInterrupt:
                err_console().print("[yellow]interrupted[/]: the command was stopped and "
                                    "nothing was recorded")
                raise typer.Exit(130) from None
        data = result.as_dict()
        if as_json:
            print_json(data)
        else:
            if result.stdout_tail:
                typer.echo(visible(result.stdout_tail), nl=False)
            if result.stderr_tail:
                typer.echo(visible(result.stderr_tail), nl=False, err=True)
            state = "timed out" if result.timed_out else f"exit {result.exit}"
            if result.exit is None and not result.timed_out:
                state = f"killed by signal {result.parsed.get('signal')}"
            typer.echo(f"[row {result.row}: {state}, {result.duration_ms} ms, files at "
                       f"{result.commit[:12]}]", err=True)
        if result.timed_out:
            return TIMEOUT_EXIT
        signal = data["parsed"].get("signal")
        return result.exit if result.exit is not None else 128 + int(signal or 0)

    code = guard(body)
    if code:
        raise typer.Exit(code)


def checkpoint(
    run_id: RunArg,
    dream: DreamArg,
    message: Annotated[str, typer.Option("--message", "-m",
                                         help="What this checkpoint is.")] = "",
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Make the dream's working copy a checkpoint: committed, protected paths checked,
    evaluated in a clean checkout, recorded as a node of the run's tree."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import checkpoint as checkpoint_verb
        from dreamrsi.views import checkpoint_dict

        with open_session(store, run_id, "checkpoint") as session:
            data = {"dream": dream, **checkpoint_dict(checkpoint_verb(session, dream, message))}
        show(data, as_json, lambda: f"checkpoint {node_line(data)}")

    guard(body)


def fork(
    run_id: RunArg,
    dream: DreamArg,
    at: AtOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Start an alternative dream from a checkpoint of DREAM, in a working copy of its own."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import fork as fork_verb

        with open_session(store, run_id, "fork") as session:
            data = dream_of(session, fork_verb(session, dream, at=at).dream_id)
        show(data, as_json, lambda: dream_line(data))

    guard(body)


def revert(
    run_id: RunArg,
    dream: DreamArg,
    checkpoint_id: Annotated[str, typer.Argument(
        metavar="CHECKPOINT", help="A checkpoint of the dream (node id or unique prefix).")],
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Put a checkpoint's files back in the dream's working copy (its changes since are
    dropped); its next checkpoint continues from there."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import revert as revert_verb

        with open_session(store, run_id, "revert") as session:
            data = dream_of(session, revert_verb(session, dream, checkpoint_id).dream_id)
        show(data, as_json, lambda: f"reverted to {data['work_node']}: " + dream_line(data))

    guard(body)


def abandon(
    run_id: RunArg,
    dream: DreamArg,
    reason: Annotated[str, typer.Option(
        help="Why the path ends: what was tried, what the evidence showed (its autopsy).")
    ] = "",
    cite: CiteOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """End a dream, with its autopsy; its checkpoints stay in the tree."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import abandon as abandon_verb

        with open_session(store, run_id, "abandon") as session:
            data = dream_of(session, abandon_verb(session, dream, reason,
                                                   tuple(cite or ())).dream_id)
        show(data, as_json, lambda: dream_line(data))

    guard(body)


def shadow(
    run_id: RunArg,
    question: Annotated[str, typer.Option(help="The side question it answers (required).")
                        ] = "",
    decision: Annotated[str, typer.Option(
        help="The decision its answer could change (required).")] = "",
    budget: Annotated[int | None, typer.Option(
        max=1_000_000, help="The steps it may spend, at least 1 (required).")] = None,
    returns: Annotated[str, typer.Option(
        help="The artifact it returns: a commit, a number, a yes or no (required).")] = "",
    parent: Annotated[str, typer.Option(help="The dream it serves.")] = "d1",
    at: AtOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Start a shadow dream: a bounded side question (its question, the decision it could
    change, its budget, what it returns), answered with `dreamrsi answer`."""

    def body() -> None:
        from dreamrsi.errors import ConfigError
        from dreamrsi.repo_runs.verbs import shadow as shadow_verb

        if budget is None or budget < 1:
            raise ConfigError("a shadow must name its budget (steps, at least 1)",
                              key="--budget")
        with open_session(store, run_id, "shadow") as session:
            made = shadow_verb(session, question=question, decision=decision, budget=budget,
                               returns=returns, parent=parent, at=at)
            data = dream_of(session, made.dream_id)
        show(data, as_json, lambda: dream_line(data))

    guard(body)


def answer(
    run_id: RunArg,
    dream: DreamArg,
    text: Annotated[str, typer.Argument(help="The shadow's answer.")],
    cite: CiteOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Answer a shadow's question, citing the admissible rows behind it; the shadow ends and
    its answer goes to its parent's brief."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import answer as answer_verb

        with open_session(store, run_id, "answer") as session:
            data = dream_of(session, answer_verb(session, dream, text,
                                                  tuple(cite or ())).dream_id)
        show(data, as_json, lambda: dream_line(data))

    guard(body)


def subgoal(
    run_id: RunArg,
    text: Annotated[str, typer.Argument(help="What the work is on now.")],
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Set the run's current subgoal (every brief shows it)."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import set_subgoal

        with open_session(store, run_id, "subgoal") as session:
            set_subgoal(session, text)
            data = {"run_id": session.run_id, "subgoal": session.state().subgoal}
        show(data, as_json, lambda: f"subgoal: {data['subgoal']}")

    guard(body)


COMMANDS: dict[str, Callable[..., None]] = {
    "open": open_run, "brief": brief, "dreams": dreams, "exec": exec_command,
    "checkpoint": checkpoint, "fork": fork, "revert": revert, "abandon": abandon,
    "shadow": shadow, "answer": answer, "subgoal": subgoal,
}
"""The Dream Run's top-level commands, in the order ``--help`` lists them."""
