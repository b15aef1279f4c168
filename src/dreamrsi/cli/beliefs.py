"""The Dream Run's record of beliefs: ``hypothesis add|update|test|list`` and ``question
add|resolve|list``, each calling one verb of :mod:`dreamrsi.repo_runs` (docs/repo-runs.md).
:data:`GROUPS` holds the two command groups; ``cli/main.py`` registers them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from dreamrsi.cli._repo import CiteOpt, TimeoutOpt, open_session, show
from dreamrsi.cli._shared import guard, reader
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, RunArg, StoreOpt

if TYPE_CHECKING:
    from dreamrsi.repo_runs.session import Session

hypothesis_app = typer.Typer(
    help="State, update, test and list the run's hypotheses.", no_args_is_help=True,
    rich_markup_mode=None)
question_app = typer.Typer(help="Ask and resolve the run's open questions.",
                           no_args_is_help=True, rich_markup_mode=None)
HypArg = Annotated[str, typer.Argument(metavar="HYPOTHESIS", help="A hypothesis (h1, ...).")]


def _hyp_line(h: dict[str, Any]) -> str:
    test = f" (test: `{h['test']}`, predicts {h['predicts']})" if h["test"] else ""
    text = f"{h['hypothesis']} [{h['status']}] {h['text']}{test}"
    for b in h["history"]:
        note = f" ({b['note']})" if b["note"] else ""
        text += f"\n    -> {b['status']} on {', '.join(b['cites'])}{note}"
    return text


def _one_hypothesis(session: Session, hid: str) -> dict[str, Any]:
    from dreamrsi.views import hypothesis_rows

    return next(h for h in hypothesis_rows(session.state()) if h["hypothesis"] == hid)


@hypothesis_app.command("add")
def hypothesis_add(
    run_id: RunArg,
    text: Annotated[str, typer.Argument(help="The claim.")],
    dream: Annotated[str | None, typer.Option(help="The dream it is about.")] = None,
    test: Annotated[str | None, typer.Option(
        help="A command whose outcome decides it (`hypothesis test` runs it).")] = None,
    predicts: Annotated[str, typer.Option(
        help="pass | fail: what the hypothesis says the test command does.")] = "pass",
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """State a new open hypothesis, with the command that would decide it."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import hypothesize

        with open_session(store, run_id, "hypothesis add") as session:
            data = _one_hypothesis(session, hypothesize(session, text, dream=dream, test=test,
                                                        predicts=predicts))
        show(data, as_json, lambda: _hyp_line(data))

    guard(body)


@hypothesis_app.command("update")
def hypothesis_update(
    run_id: RunArg,
    hypothesis: HypArg,
    status: Annotated[str, typer.Option(help="open | supported | eliminated.")],
    cite: CiteOpt = None,
    note: Annotated[str, typer.Option(help="Why, in words.")] = "",
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Move a hypothesis to a new status, citing the admissible rows that moved it."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import believe

        with open_session(store, run_id, "hypothesis update") as session:
            believe(session, hypothesis, status, tuple(cite or ()), note)
            data = _one_hypothesis(session, hypothesis)
        show(data, as_json, lambda: _hyp_line(data))

    guard(body)


@hypothesis_app.command("test")
def hypothesis_test(
    run_id: RunArg,
    hypothesis: HypArg,
    dream: Annotated[str | None, typer.Option(
        help="The dream to run it in (default: the hypothesis's, else the primary).")] = None,
    timeout: TimeoutOpt = 600.0,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run a hypothesis's test command in a dream and move it by the outcome (supported when
    the command did what it predicts, eliminated when not), citing the command's row."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import test_hypothesis

        with open_session(store, run_id, "hypothesis test") as session:
            result, _ = test_hypothesis(session, hypothesis, dream, timeout_s=timeout)
            data = {**_one_hypothesis(session, hypothesis), "exec": result.as_dict()}
        show(data, as_json, lambda: _hyp_line(data) + (
            f"\n  (row {result.row} timed out: the hypothesis stays as it was)"
            if result.timed_out else ""))

    guard(body)


@hypothesis_app.command("list")
def hypothesis_list(run_id: RunArg, store: StoreOpt = DEFAULT_STORE,
                    as_json: JsonOpt = False) -> None:
    """The run's hypotheses, each with its status and the rows that moved it."""

    def body() -> None:
        from dreamrsi.repo_runs.journal import load_state
        from dreamrsi.views import hypothesis_rows

        with reader(store) as handle:
            state = load_state(handle, handle.get_run(run_id).run_id)
        rows = hypothesis_rows(state)
        show({"run_id": state.run_id, "hypotheses": rows}, as_json,
              lambda: "\n".join(map(_hyp_line, rows)) or "no hypotheses")

    guard(body)


@question_app.command("add")
def question_add(
    run_id: RunArg,
    text: Annotated[str, typer.Argument(help="The question.")],
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Ask an open question (every brief shows it until it is resolved)."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import question

        with open_session(store, run_id, "question add") as session:
            qid = question(session, text)
            data = {"question": qid, "text": text}
        show(data, as_json, lambda: f"{qid}: {text}")

    guard(body)


@question_app.command("resolve")
def question_resolve(
    run_id: RunArg,
    question_id: Annotated[str, typer.Argument(metavar="QUESTION", help="q1, q2, ...")],
    text: Annotated[str, typer.Argument(help="The answer.")],
    cite: CiteOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Answer an open question, citing the admissible rows behind the answer."""

    def body() -> None:
        from dreamrsi.repo_runs.verbs import resolve
        from dreamrsi.views import question_rows

        with open_session(store, run_id, "question resolve") as session:
            resolve(session, question_id, text, tuple(cite or ()))
            data = next(q for q in question_rows(session.state())
                        if q["question"] == question_id)
        show(data, as_json, lambda: f"{question_id}: resolved, {text}")

    guard(body)


@question_app.command("list")
def question_list(run_id: RunArg, store: StoreOpt = DEFAULT_STORE,
                  as_json: JsonOpt = False) -> None:
    """The run's questions, open and resolved."""

    def body() -> None:
        from dreamrsi.repo_runs.journal import load_state
        from dreamrsi.views import question_rows

        with reader(store) as handle:
            state = load_state(handle, handle.get_run(run_id).run_id)
        rows = question_rows(state)
        show({"run_id": state.run_id, "questions": rows}, as_json, lambda: "\n".join(
            f"{q['question']}: {q['text']}" + (f" -> {q['answer']}" if q["answer"] else "")
            for q in rows) or "no questions")

    guard(body)


GROUPS: dict[str, typer.Typer] = {"hypothesis": hypothesis_app, "question": question_app}
"""The Dream Run's command groups."""
