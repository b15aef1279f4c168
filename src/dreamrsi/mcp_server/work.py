"""The tools that start long work and return at once (``run``, ``loop``, ``dream``), and
those that follow and stop it (``jobs``, ``cancel``): see :mod:`dreamrsi.mcp_server.jobs`.

``run`` names its run before it starts, so its answer holds the run id that ``status``,
``show`` and ``best`` follow; a loop's and a dream's ids are in their job's result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from dreamrsi.mcp_server._shared import Served, answer
from dreamrsi.mcp_server.reading import MAX_INT, Isolation

MAX_SEED = 2**32 - 1
TaskName = Annotated[str, Field(min_length=1, max_length=4096, description=(
    "A built-in task's name (see `tasks`) or a task folder on the server's machine."))]
Count = Annotated[int, Field(ge=1, le=MAX_INT)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED, description="Seed.")]


def _check_task(task: str) -> str:
    """The task's name, once it loads (an unknown task or a broken one is the tool's error
    before any job starts)."""
    from dreamrsi.tasks import resolve_task

    return resolve_task(task).name


def _check_recipe(store: Path, task: str, recipe: str) -> None:
    """Refuse, before any job starts, a recipe that is unknown, of another task or in a state
    no run starts from (as `dreamrsi run --from-recipe` does)."""
    from dreamrsi.knowledge.starts import run_knowledge
    from dreamrsi.store import open_store
    from dreamrsi.tasks import resolve_task

    loaded = resolve_task(task)
    with open_store(store) as handle:
        run_knowledge(handle, loaded.name, loaded.digest, recipe=recipe, lessons=False)


class WorkTools:
    """The job tools, each a method: ``register`` adds them to a server."""

    TOOLS = ("run", "loop", "dream", "jobs", "cancel")

    def __init__(self, served: Served) -> None:
        self.served = served

    def register(self, server: MCPServer) -> None:
        """Add each tool to ``server``."""
        for tool in self.TOOLS:
            server.add_tool(getattr(self, tool))

    def run(
        self,
        task: TaskName,
        budget: Annotated[Count, Field(description="Most attempts (root excluded).")] = 60,
        workers: Annotated[int, Field(ge=1, le=256,
                                      description="Attempts run in parallel (W).")] = 1,
        rounds: Annotated[Count | None, Field(description="Most decision rounds.")] = None,
        wall_time: Annotated[float | None, Field(
            gt=0, allow_inf_nan=False, description="Most wall time, seconds.")] = None,
        seed: Seed = 0,
        policy: Annotated[str | None, Field(
            min_length=1, max_length=4096, description="Policy as NAME[:key=value,...] "
            "(default: fixed refinement sized to the budget).")] = None,
        isolation: Annotated[Isolation | None, Field(
            description="auto | required | off (default: the task's setting).")] = None,
        target: Annotated[float | None, Field(
            allow_inf_nan=False, description="Stop once a node reaches this score.")] = None,
        from_recipe: Annotated[str | None, Field(
            min_length=1, max_length=200, description="Start from this recipe (`recipes_list`) "
            "instead of the task's seed, as `dreamrsi run --from-recipe`.")] = None,
        refit_priors: Annotated[bool | None, Field(
            description="Refit the task family's L2 prior once the run lands, as `dreamrsi "
            "run --refit-priors` (true: fit a first one too; false: never; default: when the "
            "family has a prior).")] = None,
    ) -> dict[str, Any]:
        """Start a discovery run of a task (as `dreamrsi run`) and return at once with its
        job and run id; follow it with `status`, `show RUN` and `jobs` (its result, as `run
        --json` prints it, once it ends); `cancel` stops it (resumable with `dreamrsi
        resume`)."""
        from dreamrsi.engine.run import new_run_id
        from dreamrsi.mcp_server.specs import RunSpec

        def body() -> dict[str, Any]:
            spec = RunSpec(task=task, store=str(self.served.store), run_id=new_run_id(),
                           budget=budget, workers=workers, rounds=rounds, wall_time=wall_time,
                           seed=seed, policy=policy, isolation=isolation, target=target,
                           from_recipe=from_recipe, refit_priors=refit_priors)
            spec.config()
            name = _check_task(task)
            if from_recipe is not None:
                _check_recipe(self.served.store, task, from_recipe)
            job = self.served.jobs.start("run", name, ["-m", "dreamrsi.mcp_server.worker",
                                                  spec.model_dump_json()], spec.run_id)
            return job.as_dict()

        return answer(body)

    def loop(
        self,
        task: TaskName,
        rounds: Annotated[int, Field(ge=1, le=1000, description="Online rounds.")] = 5,
        per_round_budget: Annotated[Count, Field(
            description="Attempt ceiling per round.")] = 40,
        workers: Annotated[int, Field(ge=1, le=256,
                                      description="Attempts run in parallel (W).")] = 2,
        arm: Annotated[Literal["dream", "fixed"], Field(
            description="dream | fixed (keep the initial policy).")] = "dream",
        seed: Seed = 0,
        isolation: Annotated[Isolation | None, Field(
            description="auto | required | off (default: the task's setting).")] = None,
        survive: Annotated[bool, Field(
            description="A survival pass on each round's best node.")] = False,
    ) -> dict[str, Any]:
        """Start the recursive loop on a task (as `dreamrsi loop`: explore, dream over the
        history, redeploy, repeat) and return at once with its job; its rounds' runs appear
        in `status`; `jobs` holds its report once it ends; `cancel` stops it."""

        def body() -> dict[str, Any]:
            name = _check_task(task)
            argv = ["-m", "dreamrsi", "loop", "--rounds", str(rounds),
                    "--per-round-budget", str(per_round_budget), "--workers", str(workers),
                    "--arm", arm, "--seed", str(seed), "--json"]
            if survive:
                argv.append("--survive")
            if isolation is not None:
                argv += ["--isolation", isolation]
            argv += ["--store", str(self.served.store), "--", task]
            return self.served.jobs.start("loop", name, argv).as_dict()

        return answer(body)

    def dream(
        self,
        task: TaskName,
        holdout: Annotated[float, Field(gt=0, lt=1,
                                        description="Share of trees held out.")] = 0.25,
        budget: Annotated[Count | None, Field(
            description="Replay budget per tree (default: the trees' own).")] = None,
        workers: Annotated[int | None, Field(
            ge=1, le=256, description="Replay W (default: the task's runs').")] = None,
        seed: Seed = 0,
    ) -> dict[str, Any]:
        """Dream over a task's recorded trees (as `dreamrsi dream`): search policies by
        replay and select the next one. Returns at once with its job; `jobs` holds the
        dream's report once it ends."""

        def body() -> dict[str, Any]:
            name = _check_task(task)
            argv = ["-m", "dreamrsi", "dream", "--holdout", repr(holdout), "--seed", str(seed)]
            if budget is not None:
                argv += ["--budget", str(budget)]
            if workers is not None:
                argv += ["--workers", str(workers)]
            argv += ["--store", str(self.served.store), "--json", "--", task]
            return self.served.jobs.start("dream", name, argv).as_dict()

        return answer(body)

    def jobs(self, job: Annotated[str | None, Field(
            min_length=1, max_length=100, description="One job's id (default: all).")] = None,
    ) -> dict[str, Any]:
        """This server's jobs: kind, task, run id, state (running, finished, failed,
        cancelled), exit code; a finished job's result (the command's `--json`), a failed
        one's error output."""
        return answer(lambda: {"jobs": [j.as_dict() for j in (
            [self.served.jobs.get(job)] if job is not None else self.served.jobs.all())]})

    def cancel(self, job: Annotated[str, Field(min_length=1, max_length=100,
                                              description="The job's id.")],
               ) -> dict[str, Any]:
        """Stop a running job as Ctrl-C stops its command (SIGTERM): a run is recorded as
        interrupted and `dreamrsi resume RUN` continues it. A job that ended is left."""
        return answer(lambda: self.served.jobs.cancel(job).as_dict())
