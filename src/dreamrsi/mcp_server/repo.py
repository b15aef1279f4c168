"""The Dream Run tools (``repo_open``, ``repo_brief``, ``repo_exec``, ``repo_shadow``, ...):
the commands of :mod:`dreamrsi.cli.repo`, each calling the same verb of
:mod:`dreamrsi.repo_runs` and returning the dict the command prints with ``--json``.

A tool that writes waits for its work (a command, an evaluation) and holds the store's writer
lock meanwhile, as the command does; it is refused while one of the server's jobs runs (the
job holds the lock). The reading tools (``repo_brief``, ``repo_dreams``) answer at any time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from dreamrsi.mcp_server._shared import Served, answer
from dreamrsi.mcp_server.reading import RunId

if TYPE_CHECKING:
    from dreamrsi.repo_runs.session import Session

MAX_TEXT = 4000
"""``dreamrsi.repo_runs.opening.MAX_TEXT``."""
DEFAULT_CHARS = 12_000
"""``dreamrsi.repo_runs.brief.DEFAULT_CHARS``."""
Text = Annotated[str, Field(max_length=MAX_TEXT)]
DreamId = Annotated[str, Field(min_length=1, max_length=100,
                               description="A dream of the run (d1, d2, ...).")]
Checkpoint = Annotated[str, Field(min_length=1, max_length=200, description=(
    "A checkpoint: a node id of the run or a unique prefix of one."))]
Cites = Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(
    max_length=1000, description="Admissible ledger rows (ids or unique prefixes) the claim "
    "rests on: `repo_exec`'s rows, evaluations' rows.")]
Timeout = Annotated[float, Field(gt=0, le=86400, allow_inf_nan=False,
                                 description="The command's time limit, seconds.")]


class RepoTools:
    """The Dream Run tools, each a method: ``register`` adds them to a server."""

    TOOLS = ("repo_open", "repo_brief", "repo_dreams", "repo_exec", "repo_checkpoint",
             "repo_fork", "repo_revert", "repo_abandon", "repo_shadow", "repo_answer",
             "repo_hypothesis", "repo_question", "repo_subgoal")

    def __init__(self, served: Served) -> None:
        self.served = served

    def register(self, server: MCPServer) -> None:
        """Add each tool to ``server``."""
        for tool in self.TOOLS:
            server.add_tool(getattr(self, tool))

    @contextmanager
    def _session(self, run_id: str, what: str) -> Iterator[Session]:
        """The Dream Run ``run_id``, opened for writing (the store must exist; no job may
        run)."""
        from dreamrsi.repo_runs.journal import load_state
        from dreamrsi.repo_runs.session import Session
        from dreamrsi.store import open_store

        self.served.jobs.check_idle()
        self.served.reader().close()  # a missing store is an error, never created
        with open_store(self.served.store, writer=True,
                        holder=f"{what} {run_id} (mcp)") as handle:
            full = handle.get_run(run_id).run_id
            load_state(handle, full)
            yield Session(handle, full)

    def _write(self, run_id: str, what: str,
               fn: Callable[[Session], dict[str, Any]]) -> dict[str, Any]:
        def body() -> dict[str, Any]:
            with self._session(run_id, what) as session:
                return fn(session)

        return answer(body)

    def _read(self, run_id: str, fn: Callable[[Any, Any], dict[str, Any]]) -> dict[str, Any]:
        from dreamrsi.repo_runs.journal import load_state

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return fn(handle, load_state(handle, handle.get_run(run_id).run_id))

        return answer(body)

    # -- open and read ---------------------------------------------------------------------

    def repo_open(
        self,
        repo: Annotated[str, Field(min_length=1, max_length=4096, description=(
            "The git repository on the server's machine (its HEAD is the root; it is "
            "never written)."))],
        objective: Annotated[str, Field(min_length=1, max_length=MAX_TEXT,
                                        description="What the work is for.")],
        eval_command: Annotated[str, Field(min_length=1, max_length=MAX_TEXT, description=(
            "The command that judges a checkpoint, run in a clean checkout of it."))],
        verdict: Annotated[Literal["exit", "json"], Field(description=(
            "exit: its exit status and test counts; json: it prints dreamrsi's verdict "
            "{score, valid, feedback}."))] = "exit",
        success: Annotated[list[Text] | None, Field(max_length=100,
                                                    description="Success criteria.")] = None,
        constraints: Annotated[list[Text] | None, Field(max_length=100, description=(
            "Constraints (every brief shows them)."))] = None,
        protect: Annotated[list[Text] | None, Field(max_length=1000, description=(
            "Paths no checkpoint may change."))] = None,
        budget: Annotated[list[Annotated[str, Field(max_length=100)]] | None, Field(
            max_length=10, description="6h | 90m | $20 | 40 (checkpoints).")] = None,
        agent: Annotated[str | None, Field(min_length=1, max_length=MAX_TEXT, description=(
            "The agent command of unattended work."))] = None,
        eval_timeout: Annotated[float, Field(gt=0, le=86400, allow_inf_nan=False, description=(
            "The evaluator's time limit, seconds."))] = 600.0,
        network: Annotated[bool, Field(description="Let commands reach the network.")] = False,
        seed: Annotated[int, Field(ge=0, le=2**32 - 1, description="The run's seed.")] = 0,
        target: Annotated[float | None, Field(allow_inf_nan=False, description=(
            "The score that meets the success criteria (default 1.0, a full pass)."))] = None,
        model: Annotated[str | None, Field(min_length=1, max_length=200, description=(
            "With agent `llm` (dreamrsi's own model client): the model."))] = None,
        base_url: Annotated[str | None, Field(min_length=1, max_length=2000, description=(
            "With agent `llm`: its OpenAI-compatible endpoint."))] = None,
        files: Annotated[list[Text] | None, Field(max_length=1000, description=(
            "With agent `llm`: the files it is shown and may edit."))] = None,
    ) -> dict[str, Any]:
        """Open a Dream Run over a git repository (as `dreamrsi open --json`): its HEAD
        evaluated as the root, the primary dream d1 in a working copy of its own; returns the
        run id, the root's verdict, the dreams (with their working copies) and d1's brief.
        Waits for the root's evaluation."""
        from pathlib import Path

        from dreamrsi.repo_runs.opening import OpenRequest, check_request
        from dreamrsi.repo_runs.verbs import open_run
        from dreamrsi.store import open_store
        from dreamrsi.views import opened_dict

        def body() -> dict[str, Any]:
            req = OpenRequest(
                repo=Path(repo), objective=objective, eval_cmd=eval_command, verdict=verdict,
                success=tuple(success or ()), constraints=tuple(constraints or ()),
                protect=tuple(protect or ()), budget=tuple(budget or ()), agent=agent,
                eval_timeout_s=eval_timeout, network=network, seed=seed, target=target,
                model=model, base_url=base_url, files=tuple(files or ()))
            check_request(req)  # before the store is made: a mistake writes nothing
            self.served.jobs.check_idle()
            with open_store(self.served.store, writer=True, holder="open (mcp)") as handle:
                state = open_run(handle, req)
                return opened_dict(handle, state, DEFAULT_CHARS)

        return answer(body)

    def repo_brief(
        self,
        run_id: RunId,
        dream: Annotated[str | None, Field(min_length=1, max_length=100, description=(
            "Brief this dream's worker (its question, last evaluation, shadows' answers)."))
        ] = None,
        max_chars: Annotated[int, Field(ge=1000, le=10_000_000, description=(
            "The brief's size limit, characters of its JSON."))] = DEFAULT_CHARS,
    ) -> dict[str, Any]:
        """The state a fresh model context starts from (as `dreamrsi brief --json`):
        objective, criteria, constraints, subgoal, open hypotheses, dreams, recent admissible
        evidence, autopsies, budget; `omitted` counts what did not fit."""
        from dreamrsi.repo_runs.brief import brief

        return self._read(run_id, lambda handle, state: brief(
            handle, state, dream=dream, max_chars=max_chars))

    def repo_dreams(self, run_id: RunId) -> dict[str, Any]:
        """The run's dreams (as `dreamrsi dreams --json`): kind, status, head checkpoint and
        its score, a shadow's question and answer, the working copy's folder."""
        from dreamrsi.views import dream_rows

        return self._read(run_id, lambda handle, state: {
            "run_id": state.run_id, "dreams": dream_rows(handle, state)})

    # -- work in a dream ------------------------------------------------------------------

    def repo_exec(
        self,
        run_id: RunId,
        dream: DreamId,
        command: Annotated[str, Field(min_length=1, max_length=32768, description=(
            "A shell command line, run in the dream's working copy in the sandbox."))],
        timeout: Timeout = 600.0,
        keep: Annotated[list[Text] | None, Field(max_length=100, description=(
            "Files of the working copy the command writes (a JUnit report), kept with its "
            "row and read for their counts."))] = None,
    ) -> dict[str, Any]:
        """Run a command in the dream's working copy, in the sandbox, and record it (as
        `dreamrsi exec --json`): its ledger `row` (cite it), `exit`, `timed_out`, the
        `commit` of the files it ran on, the tails of its output, what its output says.
        Waits for the command."""
        return self._write(run_id, "exec", lambda s: s.execute(
            dream, [command], timeout_s=timeout, artifacts=tuple(keep or ())).as_dict())

    def repo_checkpoint(
        self,
        run_id: RunId,
        dream: DreamId,
        message: Annotated[str, Field(max_length=MAX_TEXT,
                                      description="What this checkpoint is.")] = "",
    ) -> dict[str, Any]:
        """Make the dream's working copy a checkpoint (as `dreamrsi checkpoint --json`):
        committed, protected paths checked, evaluated in a clean checkout, recorded as a node.
        Waits for the evaluation."""
        from dreamrsi.repo_runs.verbs import checkpoint
        from dreamrsi.views import checkpoint_dict

        return self._write(run_id, "checkpoint", lambda s: {
            "dream": dream, **checkpoint_dict(checkpoint(s, dream, message))})

    def repo_fork(self, run_id: RunId, dream: DreamId,
                  at: Annotated[Checkpoint | None, Field(description=(
                      "The checkpoint to start from (default: the dream's head)."))] = None,
                  ) -> dict[str, Any]:
        """Start an alternative dream from a checkpoint of `dream` (as `dreamrsi fork
        --json`); returns the new dream."""
        from dreamrsi.repo_runs.verbs import fork

        return self._write(run_id, "fork", lambda s: _dream_of(s, fork(s, dream,
                                                                       at=at).dream_id))

    def repo_revert(self, run_id: RunId, dream: DreamId, checkpoint: Checkpoint,
                    ) -> dict[str, Any]:
        """Put one of the dream's checkpoints' files back in its working copy (as `dreamrsi
        revert --json`); its changes since are dropped."""
        from dreamrsi.repo_runs.verbs import revert

        return self._write(run_id, "revert", lambda s: _dream_of(
            s, revert(s, dream, checkpoint).dream_id))

    def repo_abandon(self, run_id: RunId, dream: DreamId,
                     reason: Annotated[str, Field(max_length=MAX_TEXT, description=(
                         "Why the path ends (its autopsy)."))],
                     cite: Cites | None = None,
                     ) -> dict[str, Any]:
        """End a dream with its autopsy, citing the evidence (as `dreamrsi abandon
        --json`)."""
        from dreamrsi.repo_runs.verbs import abandon

        return self._write(run_id, "abandon", lambda s: _dream_of(
            s, abandon(s, dream, reason, tuple(cite or ())).dream_id))

    def repo_shadow(
        self,
        run_id: RunId,
        question: Annotated[str, Field(max_length=MAX_TEXT,
                                       description="The side question it answers.")],
        decision: Annotated[str, Field(max_length=MAX_TEXT, description=(
            "The decision its answer could change."))],
        budget: Annotated[int, Field(ge=1, le=1_000_000,
                                     description="The steps it may spend.")],
        returns: Annotated[str, Field(max_length=MAX_TEXT, description=(
            "The artifact it returns (a commit, a number, yes or no)."))],
        parent: Annotated[str, Field(min_length=1, max_length=100,
                                     description="The dream it serves.")] = "d1",
        at: Annotated[Checkpoint | None, Field(description=(
            "The parent's checkpoint to start from (default: its head)."))] = None,
    ) -> dict[str, Any]:
        """Start a shadow dream (as `dreamrsi shadow --json`): a bounded side question in a
        working copy of its own; work in it with `repo_exec`, end it with `repo_answer`."""
        from dreamrsi.repo_runs.verbs import shadow

        return self._write(run_id, "shadow", lambda s: _dream_of(s, shadow(
            s, question=question, decision=decision, budget=budget, returns=returns,
            parent=parent, at=at).dream_id))

    def repo_answer(self, run_id: RunId, dream: DreamId,
                    text: Annotated[str, Field(max_length=MAX_TEXT,
                                               description="The shadow's answer.")],
                    cite: Cites,
                    ) -> dict[str, Any]:
        """Answer a shadow's question citing the admissible rows behind it (as `dreamrsi
        answer --json`); the shadow ends and its answer goes to its parent's brief."""
        from dreamrsi.repo_runs.verbs import answer as answer_verb

        return self._write(run_id, "answer", lambda s: _dream_of(
            s, answer_verb(s, dream, text, tuple(cite)).dream_id))

    # -- beliefs ---------------------------------------------------------------------------

    def repo_hypothesis(
        self,
        run_id: RunId,
        action: Annotated[Literal["add", "update", "test", "list"], Field(description=(
            "add (text; dream, test, predicts) | update (hypothesis, status, cite; note) | "
            "test (hypothesis; dream, timeout) | list."))],
        hypothesis: Annotated[str | None, Field(min_length=1, max_length=100, description=(
            "The hypothesis (h1, ...) to update or test."))] = None,
        text: Annotated[str | None, Field(max_length=MAX_TEXT,
                                          description="A new hypothesis's claim.")] = None,
        dream: Annotated[str | None, Field(min_length=1, max_length=100, description=(
            "add: the dream it is about; test: where to run it."))] = None,
        test: Annotated[str | None, Field(min_length=1, max_length=32768, description=(
            "add: a command whose outcome decides it."))] = None,
        predicts: Annotated[Literal["pass", "fail"] | None, Field(description=(
            "add: what the test command does if the hypothesis holds (default pass)."))
        ] = None,
        status: Annotated[Literal["open", "supported", "eliminated"] | None, Field(
            description="update: the new status.")] = None,
        cite: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
                        Field(max_length=1000, description=(
                            "update: the admissible rows that moved it."))] = None,
        note: Annotated[str | None, Field(max_length=MAX_TEXT,
                                          description="update: why, in words.")] = None,
        timeout: Annotated[float | None, Field(gt=0, le=86400, allow_inf_nan=False,
                                               description="test: the time limit, s.")] = None,
    ) -> dict[str, Any]:
        """State, update, test or list hypotheses (as `dreamrsi hypothesis ACTION --json`).
        `test` runs the hypothesis's command in a dream and moves it by the outcome, citing
        that command's row; an argument the action does not take is refused."""
        given = {"hypothesis": hypothesis, "text": text, "dream": dream, "test": test,
                 "predicts": predicts, "status": status, "cite": cite, "note": note,
                 "timeout": timeout}

        def body() -> dict[str, Any]:
            _takes(f"action {action!r}", given, _HYPOTHESIS_ARGS[action])
            if action == "list":
                return _hypotheses(self, run_id)
            with self._session(run_id, f"hypothesis {action}") as s:
                return _HYPOTHESIS_ACTIONS[action](s, given)

        return answer(body)

    def repo_question(
        self,
        run_id: RunId,
        action: Annotated[Literal["add", "resolve", "list"], Field(description=(
            "add (text) | resolve (question, text, cite) | list."))],
        question: Annotated[str | None, Field(min_length=1, max_length=100, description=(
            "resolve: the question (q1, ...)."))] = None,
        text: Annotated[str | None, Field(max_length=MAX_TEXT, description=(
            "add: the question; resolve: its answer."))] = None,
        cite: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
                        Field(max_length=1000, description=(
                            "resolve: the admissible rows behind the answer."))] = None,
    ) -> dict[str, Any]:
        """Ask, resolve or list the run's questions (as `dreamrsi question ACTION --json`)."""
        from dreamrsi.repo_runs import verbs
        from dreamrsi.views import question_rows

        given = {"question": question, "text": text, "cite": cite}
        wants = {"add": {"text"}, "resolve": {"question", "text", "cite"}, "list": set()}

        def body() -> dict[str, Any]:
            _takes(f"action {action!r}", given, wants[action])
            if action == "list":
                return self._read(run_id, lambda handle, state: {
                    "run_id": state.run_id, "questions": question_rows(state)})
            with self._session(run_id, f"question {action}") as s:
                if action == "add":
                    qid = verbs.question(s, text or "")
                else:
                    qid = question or ""
                    verbs.resolve(s, qid, text or "", tuple(cite or ()))
                return next(q for q in question_rows(s.state()) if q["question"] == qid)

        return answer(body)

    def repo_subgoal(self, run_id: RunId,
                     text: Annotated[str, Field(max_length=MAX_TEXT,
                                                description="What the work is on now.")],
                     ) -> dict[str, Any]:
        """Set the run's current subgoal (as `dreamrsi subgoal --json`)."""
        from dreamrsi.repo_runs.verbs import set_subgoal

        def fn(s: Session) -> dict[str, Any]:
            set_subgoal(s, text)
            return {"run_id": s.run_id, "subgoal": s.state().subgoal}

        return self._write(run_id, "subgoal", fn)


def _dream_of(session: Session, dream_id: str) -> dict[str, Any]:
    from dreamrsi.views import dream_dict

    return dream_dict(session.store, session.state(), dream_id)


def _takes(what: str, given: dict[str, Any], wanted: set[str]) -> None:
    """Refuse an argument ``what`` does not take (it would be ignored otherwise)."""
    from dreamrsi.errors import ConfigError

    extra = sorted(k for k, v in given.items() if v is not None and k not in wanted)
    if extra:
        raise ConfigError(f"{what} takes no {', '.join(extra)} (it takes: "
                          f"{', '.join(sorted(wanted)) or 'nothing more'})")


_HYPOTHESIS_ARGS = {"add": {"text", "dream", "test", "predicts"},
                    "update": {"hypothesis", "status", "cite", "note"},
                    "test": {"hypothesis", "dream", "timeout"}, "list": set()}


def _one(session: Session, hid: str) -> dict[str, Any]:
    from dreamrsi.views import hypothesis_rows

    return next(h for h in hypothesis_rows(session.state()) if h["hypothesis"] == hid)


def _add(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    from dreamrsi.repo_runs.verbs import hypothesize

    return _one(s, hypothesize(s, a["text"] or "", dream=a["dream"], test=a["test"],
                               predicts=a["predicts"] or "pass"))


def _update(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    from dreamrsi.errors import ConfigError
    from dreamrsi.repo_runs.verbs import believe

    if a["hypothesis"] is None or a["status"] is None:
        raise ConfigError("update needs the hypothesis and its new status", key="status")
    believe(s, a["hypothesis"], a["status"], tuple(a["cite"] or ()), a["note"] or "")
    return _one(s, a["hypothesis"])


def _test(s: Session, a: dict[str, Any]) -> dict[str, Any]:
    from dreamrsi.errors import ConfigError
    from dreamrsi.repo_runs.verbs import test_hypothesis

    if a["hypothesis"] is None:
        raise ConfigError("test needs the hypothesis", key="hypothesis")
    result, _ = test_hypothesis(s, a["hypothesis"], a["dream"],
                                timeout_s=a["timeout"] or 600.0)
    return {**_one(s, a["hypothesis"]), "exec": result.as_dict()}


def _hypotheses(tools: RepoTools, run_id: str) -> dict[str, Any]:
    from dreamrsi.views import hypothesis_rows

    return tools._read(run_id, lambda handle, state: {
        "run_id": state.run_id, "hypotheses": hypothesis_rows(state)})


_HYPOTHESIS_ACTIONS: dict[str, Callable[[Session, dict[str, Any]], dict[str, Any]]] = {
    "add": _add, "update": _update, "test": _test}
