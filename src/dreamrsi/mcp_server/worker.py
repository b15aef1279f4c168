"""A ``run`` job of the MCP server, in a process of its own: ``python -m
dreamrsi.mcp_server.worker SPEC`` starts the run SPEC (JSON) names, with the run id the server
chose and returned, and prints what ``dreamrsi run --json`` prints. SIGTERM stops the run as
Ctrl-C does (recorded as interrupted; ``dreamrsi resume`` continues it)."""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import replace
from types import FrameType
from typing import Any


def run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Start and drive the run ``spec`` describes; its result as ``run --json`` prints it."""
    from dreamrsi.engine import start_run
    from dreamrsi.knowledge.starts import record_recipes, run_knowledge
    from dreamrsi.learning.refit import refit_landed
    from dreamrsi.mcp_server.specs import RunSpec
    from dreamrsi.store import open_store
    from dreamrsi.tasks import resolve_task
    from dreamrsi.views import head_dict, run_result

    args = RunSpec.model_validate(spec)
    task = resolve_task(args.task)
    config = args.config()
    with open_store(args.store, writer=True, holder=f"run {task.name} (mcp)") as handle:
        known = run_knowledge(handle, task.name, task.digest, recipe=args.from_recipe,
                              lessons=task.proposer.lessons)
        config = replace(config, **known.settings)
        signal.signal(signal.SIGTERM, _interrupt)
        start_run(handle, task, config, None, run_id=args.run_id)
        # neither raises: the run's result stands
        refit = refit_landed(handle, task.name, args.run_id, refit=args.refit_priors)
        if refit.message:
            print(("warning: " if refit.warning else "note: ") + refit.message,
                  file=sys.stderr)
        record_recipes(handle)
        return {**run_result(handle, args.run_id),
                "ledger_head": head_dict(handle.chain_head(args.run_id))}


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    from dreamrsi.errors import DreamError

    try:
        result = run_job(json.loads(argv[0]))
    except DreamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted before the run started", file=sys.stderr)
        return 130
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
