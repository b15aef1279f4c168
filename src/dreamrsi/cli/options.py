"""Options and arguments that several commands share, each defined once.

Every count option takes 1 to 2**63 - 1 (what the store holds), every ``--seed`` 0 to
2**32 - 1 (what NumPy's and Optuna's samplers take); ``--help`` shows both ranges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

MAX_INT = 2**63 - 1
"""``dreamrsi.engine.config.MAX_INT`` (importing the engine's config would load the core at
start-up; ``tests/cli/test_startup.py`` checks that both agree)."""
MAX_SEED = 2**32 - 1
"""``dreamrsi.engine.config.MAX_SEED``."""
MAX_HISTORY = 64
"""``dreamrsi.engine.config.MAX_HISTORY``."""
DEFAULT_HISTORY = 4
"""``dreamrsi.dreaming.loop_config.DEFAULT_HISTORY``."""

DEFAULT_STORE = Path(".dreamrsi")
COUNT = {"min": 1, "max": MAX_INT}
POSITIVE_HELP = " (a finite number above 0; leave it out for no limit)."


def path_value(value: str | Path) -> Path:
    """A path option's value; an empty one is refused (``Path("")`` is the current folder)."""
    if not str(value).strip():
        raise typer.BadParameter("the path is empty")
    return Path(value)


def seed_option(text: str) -> Any:
    """A ``--seed`` option (0 to 2**32 - 1) whose help is ``text``."""
    return typer.Option(min=0, max=MAX_SEED, help=text)


StoreOpt = Annotated[Path, typer.Option(
    "--store", envvar="DREAMRSI_STORE", parser=path_value, show_default=False,
    help="Store directory (default ./.dreamrsi; an empty DREAMRSI_STORE counts as unset).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
TaskArg = Annotated[str, typer.Argument(help="A built-in task's name or a task directory.")]
RunArg = Annotated[str, typer.Argument(help="Run id (or a unique prefix of it).")]
ChainArg = Annotated[str, typer.Argument(help="Run id (or unique prefix), or a dream id.")]
WorkersOpt = Annotated[int, typer.Option(**COUNT, help="Attempts in parallel (W).")]
IsolationOpt = Annotated[str | None, typer.Option(help="auto | required | off.")]
RepeatsOpt = Annotated[int | None, typer.Option(
    min=1, max=100, help="A survival pass's evaluator runs on each of the base and the "
    "candidate (default: the task's [survival] repeats).")]
ReportOutOpt = Annotated[Path | None, typer.Option(
    parser=path_value, help="Folder for a survival pass's report.json and report.md "
    "(default: survival-PASS beside the store).")]
AcceptUnisolatedOpt = Annotated[bool, typer.Option(
    "--i-accept-unisolated-model-code",
    help="Let a task whose proposer is a language model run with --isolation off or auto, "
         "so that code the model wrote may run WITHOUT bubblewrap.")]
HistoryOpt = Annotated[int, typer.Option(
    min=0, max=MAX_HISTORY,
    help="Elites of the task's earlier trees (the best node of each, best first) named in "
         "every proposer's context, with a read-only copy of their workspaces (0: none).")]
TargetOpt = Annotated[float | None, typer.Option(
    help="Stop once a raw score reaches this value (at or above it when the task maximises, "
         "at or below when it minimises).")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="The model endpoint of a task whose proposer is a model (an "
    "OpenAI-compatible URL such as http://127.0.0.1:8000/v1); wins over the task's base_url "
    "(config.yaml's api_base), which wins over $OPENAI_BASE_URL.")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="The one model such a proposer asks; wins over the task's models "
    "(config.yaml's models).")]
InfraFailuresOpt = Annotated[int, typer.Option(
    "--max-infra-failures", min=0, max=MAX_INT,
    help="Stop the run, resumable and with a non-zero exit, once this many attempts in a row "
         "failed outside the candidate (the model endpoint unreachable, a key refused, the "
         "proposer's command missing); 0: never.")]
ExecutorOpt = Annotated[str, typer.Option(
    "--executor", help="Where attempts and dreams run: local (this machine: attempts on "
    "threads, a dream's studies and replays on processes) | ray (Ray tasks on a cluster: "
    "each attempt with the task's [resources], each dream piece one CPU; see "
    "docs/cluster.md).")]
RayAddressOpt = Annotated[str | None, typer.Option(
    "--ray-address", help="With --executor ray: the cluster to join (auto, HOST:PORT or "
    "ray://HOST:PORT); left out, Ray's RAY_ADDRESS, else a local Ray instance on this "
    "machine.")]
RefitOpt = Annotated[bool | None, typer.Option(
    "--refit-priors/--no-refit-priors", envvar="DREAMRSI_REFIT_PRIORS", show_default=False,
    help="Refit the task family's L2 prior when a run lands (after each round of a loop), "
         "reading only the runs its latest version did not see. Default: when the family "
         "has a prior (`dreamrsi priors fit` made one); --refit-priors fits a first one; "
         "--no-refit-priors never. A refit that fails is a warning: the run's result "
         "stands.")]
