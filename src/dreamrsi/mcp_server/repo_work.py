"""The Dream Run tools that decide and finish: ``repo_next`` (reads), ``repo_merge``,
``repo_submit`` and ``repo_export`` (wait for their work, as the commands do), and
``repo_work`` (the unattended controller, hours long: a job, as ``run`` is). Each calls the
function :mod:`dreamrsi.cli.repo_work`'s command calls and returns the dict it prints with
``--json``.

``repo_export`` writes a branch into the run's own repository only: a patch file would be a
path the client names on the server's machine, which no tool writes (docs/mcp.md)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from dreamrsi.mcp_server._shared import Served, answer
from dreamrsi.mcp_server.reading import Isolation, RunId
from dreamrsi.mcp_server.repo import MAX_TEXT, Checkpoint, DreamId, RepoTools


class RepoWorkTools:
    """The tools, each a method: ``register`` adds them to a server."""

    TOOLS = ("repo_next", "repo_work", "repo_merge", "repo_submit", "repo_export")

    def __init__(self, served: Served) -> None:
        self.served = served
        self._repo = RepoTools(served)

    def register(self, server: MCPServer) -> None:
        """Add each tool to ``server``."""
        for tool in self.TOOLS:
            server.add_tool(getattr(self, tool))

    def repo_next(
        self,
        run_id: RunId,
        limit: Annotated[int, Field(ge=1, le=1000,
                                    description="How many ranked actions.")] = 10,
    ) -> dict[str, Any]:
        """Where the next unit of compute goes, and why (as `dreamrsi next --json`): ranked
        actions with their (ΔÔ + λÎ)/ĉ · ρ score, its terms, the reason and the admissible
        rows each rests on."""
        from dreamrsi.repo_runs.allocate import next_actions

        def ranked(handle: Any, state: Any) -> dict[str, Any]:
            actions = [a.as_dict() for a in next_actions(handle, state)]
            return {"run": state.run_id, "actions": actions[:limit]}

        return self._repo._read(run_id, ranked)

    def repo_work(
        self,
        run_id: RunId,
        agent: Annotated[str | None, Field(min_length=1, max_length=MAX_TEXT, description=(
            "The agent's command (default: the run's)."))] = None,
        steps: Annotated[int | None, Field(ge=1, le=1_000_000, description=(
            "Most decisions to carry out (default: until the budget or success)."))] = None,
        isolation: Annotated[Isolation | None, Field(
            description="auto | required | off (default: the task's setting).")] = None,
    ) -> dict[str, Any]:
        """Work on the Dream Run unattended (as `dreamrsi work`) and return at once with its
        job; `jobs` holds its summary (`work --json`) once it ends; `cancel` stops it, and
        `repo_work` again goes on where it stopped."""

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                run = handle.get_run(run_id).run_id
                from dreamrsi.repo_runs.journal import load_state

                load_state(handle, run)
            argv = ["-m", "dreamrsi", "work", run, "--json", "--store", str(self.served.store)]
            if agent is not None:
                argv += ["--agent", agent]
            if steps is not None:
                argv += ["--steps", str(steps)]
            if isolation is not None:
                argv += ["--isolation", isolation]
            return self.served.jobs.start("work", run, argv, run).as_dict()

        return answer(body)

    def repo_merge(
        self,
        run_id: RunId,
        dream: DreamId,
        into: DreamId,
        message: Annotated[str, Field(max_length=MAX_TEXT,
                                      description="What the merge is.")] = "",
    ) -> dict[str, Any]:
        """Merge a dream's head into another dream (as `dreamrsi merge --json`): a three-way
        merge, a checkpoint of `into`; conflicts are refused, naming the paths."""
        from dreamrsi.repo_runs.finishing import merge
        from dreamrsi.views import checkpoint_dict

        return self._repo._write(run_id, "merge", lambda s: {
            "dream": into, "merged": dream, **checkpoint_dict(merge(s, dream, into, message))})

    def repo_submit(
        self,
        run_id: RunId,
        dream: DreamId,
        repeats: Annotated[int | None, Field(ge=1, le=100, description=(
            "Evaluator runs on each side (default: the task's survival repeats)."))] = None,
    ) -> dict[str, Any]:
        """The survival gate on the dream's head checkpoint against the repository's HEAD
        (as `dreamrsi submit --json`): verdict, reasons, the measured delta with its
        interval, the report's files. Waits for the pass."""
        from dreamrsi.repo_runs.finishing import submit

        return self._repo._write(run_id, "submit", lambda s: submit(s, dream, repeats=repeats))

    def repo_export(
        self,
        run_id: RunId,
        dream: DreamId,
        branch: Annotated[str, Field(min_length=1, max_length=255, description=(
            "A new branch of the run's repository: the checkpoint's changes on its HEAD."))],
        at: Annotated[Checkpoint | None, Field(description=(
            "The checkpoint (default: the dream's head)."))] = None,
        force: Annotated[bool, Field(description=(
            "Export a checkpoint that did not survive (recorded as forced)."))] = False,
    ) -> dict[str, Any]:
        """Export a surviving checkpoint as a new branch of the run's repository (as
        `dreamrsi export --branch`); never merged, the checkout untouched."""
        from dreamrsi.repo_runs.finishing import export

        return self._repo._write(run_id, "export", lambda s: export(
            s, dream, branch=branch, force=force, at=at))
