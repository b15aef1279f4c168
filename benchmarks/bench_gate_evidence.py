"""How many trees does a dream need before its promotion gate opens?

``--loops`` fixed-arm loops of π_1 (the loop's defaults, a total budget in rounds of
``--per-round-budget``) are recorded in one store, one after the other (later loops see the
earlier ones' elites as history context, as a user's store would). Then a dream with a loop's
settings (``dreaming.loop.protocol_dream``: both protocols) runs over the first k recorded
trees, in recording order, for k = 2, 4, ...: whether it promoted, what it picked, the
leader's gain and the interval the gate read.

Usage: python benchmarks/bench_gate_evidence.py [--task autocorrelation-c3] [--loops 3]
       [--total-budget 120] [--per-round-budget 20] [--workers 2] [--step 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.dreaming.dream import dream  # noqa: E402
from dreamrsi.dreaming.history import load_history  # noqa: E402
from dreamrsi.dreaming.loop import protocol_dream  # noqa: E402
from dreamrsi.engine.config import default_policy  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

FIRST_SEED = 101


def record(args: argparse.Namespace, store: Path) -> list[str]:
    """The loops' run ids, in recording order."""
    runs: list[str] = []
    for i in range(args.loops):
        out = subprocess.run(
            [sys.executable, "-m", "dreamrsi", "loop", args.task, "--arm", "fixed", "--seed",
             str(FIRST_SEED + i), "--total-budget", str(args.total_budget),
             "--per-round-budget", str(args.per_round_budget), "--workers", str(args.workers),
             "--store", str(store), "--json"], check=True, capture_output=True, text=True)
        runs += [r["run_id"] for r in json.loads(out.stdout)["rounds"]]
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--loops", type=int, default=3)
    parser.add_argument("--total-budget", type=int, default=120)
    parser.add_argument("--per-round-budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--step", type=int, default=2)
    args = parser.parse_args()
    task = resolve_task(args.task)
    incumbent = default_policy(args.per_round_budget, args.workers)
    lines = [f"Task `{args.task}`: {args.loops} loops of π_1 = `{incumbent.label()}` "
             f"({args.total_budget} attempts in rounds of {args.per_round_budget}, W="
             f"{args.workers}) recorded in one store; a dream with a loop's settings over the "
             "first k trees in recording order.", "",
             "| protocol | trees k | promoted | selected | why |",
             "|---|---:|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-gate-") as tmp:
        store_path = Path(tmp) / "store"
        runs = record(args, store_path)
        with SqliteRunStore.open(store_path, writer=True) as store:
            for protocol in ("total", "per-round"):
                base = protocol_dream(protocol)
                config = replace(base, replay=replace(
                    base.replay, workers=args.workers, attempt_budget=args.per_round_budget))
                for k in range(args.step, len(runs) + 1, args.step):
                    history = load_history(store, task.name, task.digest,
                                           task.evaluator_digest, run_ids=runs[:k])
                    report = dream(store, task, incumbent, config, history).as_dict()
                    line = (f"| {protocol} | {k} | {'yes' if report['promoted'] else 'no'} | "
                            f"`{report['selected']}` | {report['reason']} |")
                    print(line, flush=True)
                    lines.append(line)
    write_section(f"gate-evidence-{task.name}", f"How many trees before a dream promotes? "
                  f"({args.task}, rounds of {args.per_round_budget})", "\n".join(lines),
                  f"python benchmarks/bench_gate_evidence.py --task {args.task} --loops "
                  f"{args.loops} --total-budget {args.total_budget} --per-round-budget "
                  f"{args.per_round_budget} --workers {args.workers} --step {args.step}")


if __name__ == "__main__":
    main()
