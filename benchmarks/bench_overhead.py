"""Orchestration overhead: `dreamrsi run` against a shell loop running the same commands alike.

A no-op task whose proposer and evaluator are one-line `python3 -c` commands (write a file;
print the result JSON) runs N attempts through `dreamrsi run` (W=1, one chain) and through a
shell loop. With isolation on, the shell loop runs each command under the very bubblewrap
invocation dreamrsi uses (the same ``prlimit`` limits, ``bwrap`` mounts and namespaces,
``setpriv`` to an unprivileged uid, the same environment), after handing the writable folders
to that uid as dreamrsi does; it copies the seed folder for the proposer and the proposer's
folder for the evaluator. So the ratio is what dreamrsi adds: the store, workspace commits,
the ledger, the trusted copy, the supervision of each command, and the process's start-up.

Each size runs as sandwiches, shell half, dreamrsi, shell half, so that a machine getting
busier or quieter weighs on both sides alike. The figure is the ratio of total wall times.
Targets (isolation on): <= 1.3 at 50 attempts, <= 1.1 at 1,000.

Usage: python benchmarks/bench_overhead.py [--sizes 50 1000] [--repeats 3 1] [--with-off]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.engine.sandboxing import (  # noqa: E402
    base_env,
    command_limits,
    evaluator_env,
    evaluator_isolation,
    proposer_isolation,
)
from dreamrsi.sandbox import Isolation, IsolationMode, isolation_problem  # noqa: E402
from dreamrsi.sandbox._bwrap import choose_bwrap  # noqa: E402
from dreamrsi.sandbox._config import sandbox_env  # noqa: E402
from dreamrsi.sandbox._rlimits import plan_rlimits  # noqa: E402
from dreamrsi.sandbox._run import _build_argv  # noqa: E402
from dreamrsi.sandbox._uids import lease_uid  # noqa: E402
from dreamrsi.store.workfolder import work_folder_for  # noqa: E402
from dreamrsi.tasks import Task, load_task  # noqa: E402

PROPOSE = "python3 -c \"open('out.txt', 'w').write('x')\""
EVALUATE = "python3 -c \"print('{\\\"score\\\": 1.0, \\\"valid\\\": true}')\""
TARGETS = {50: 1.3, 1000: 1.1}


def make_task(root: Path) -> Path:
    seed = root / "task" / "seed"
    seed.mkdir(parents=True)
    (seed / "data.txt").write_text("seed\n")
    (root / "task" / "task.toml").write_text(textwrap.dedent(f"""\
        name = "noop"
        objective = "Measure orchestration overhead."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = '''{EVALUATE}'''
        timeout_s = 30
        [proposer]
        kind = "command"
        command = '''{PROPOSE}'''
        timeout_s = 30
        """))
    return root / "task"


def _wrapped(command: str, cwd: Path, isolation: Isolation, env: dict[str, str], task: Task,
             uid: int | None, timeout_s: float) -> str:
    """The shell line that runs ``command`` exactly as dreamrsi's sandbox starts it."""
    plan = plan_rlimits(command_limits(task.constraints, timeout_s))
    argv, _, _ = _build_argv(command, cwd, isolation, choose_bwrap(isolation), plan, uid)
    clean = sandbox_env(env, task.constraints.pass_env)
    return "env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in clean.items()) + " " + \
        shlex.join(argv)


def isolated_lines(task: Task, work: Path, uid: int | None, propose: str,
                   evaluate: str) -> tuple[str, str]:
    """The proposer's and the evaluator's shell lines under dreamrsi's bubblewrap argv."""
    ws, io, view, trusted = work / "ws", work / "io", work / "eval", work / "trusted"
    for d in (ws, io, view, trusted):  # the mounts must exist while the argv is built
        d.mkdir(parents=True, exist_ok=True)
    mode = IsolationMode.REQUIRED
    env = {**base_env(task, io), "DREAM_ATTEMPT_ID": "x", "DREAM_RUN_ID": "x",
           "DREAM_SEED": "0", "DREAM_CONTEXT": str(io / "context.json"),
           "DREAM_COST": str(io / "cost.json")}
    eenv = evaluator_env(task, io, trusted, {"DREAM_RESULT": str(io / "result.json")})
    return (_wrapped(propose, ws, proposer_isolation(task, mode, ws, io), env, task, uid,
                     task.proposer.timeout_s),
            _wrapped(evaluate, view, evaluator_isolation(task, mode, io, trusted), eenv, task,
                     uid, task.evaluator.timeout_s))


def shell_script(task_dir: Path, work: Path, n: int, isolated: bool, uid: int | None) -> str:
    """A bash loop of ``n`` attempts: copy, propose, copy, evaluate (isolated or not)."""
    ws, io, view = work / "ws", work / "io", work / "eval"
    seed = task_dir / "seed"
    q = shlex.quote
    if not isolated:
        propose, evaluate, hand = PROPOSE, EVALUATE, ":"
    else:
        propose, evaluate = isolated_lines(load_task(task_dir), work, uid, PROPOSE, EVALUATE)
        hand = f"chown -R {uid}:{uid} {q(str(ws))} {q(str(io))}" if uid is not None else ":"
    return textwrap.dedent(f"""\
        set -e
        for i in $(seq 1 {n}); do
          rm -rf {q(str(ws))} {q(str(io))} {q(str(view))}
          cp -r {q(str(seed))} {q(str(ws))}; mkdir {q(str(io))}
          {hand}
          cd {q(str(ws))}; {propose}
          cp -r {q(str(ws))} {q(str(view))}; chmod -R a+rX {q(str(view))}
          cd {q(str(view))}; {evaluate} > /dev/null
          cd {q(str(work))}
        done
        """)


def shell_loop(task: Path, work: Path, n: int, isolated: bool) -> float:
    if n <= 0:
        return 0.0
    # the same python3 the dreamrsi commands get: this interpreter's folder first on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONDONTWRITEBYTECODE": "1"}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with lease_uid() if isolated and os.geteuid() == 0 else _no_uid() as uid:
        script = shell_script(task, work, n, isolated, uid)
        start = time.perf_counter()
        subprocess.run(["bash", "-c", script], check=True, env=env, cwd=work)
        took = time.perf_counter() - start
    shutil.rmtree(work, ignore_errors=True)
    return took


class _no_uid:  # noqa: N801 - a context manager used like lease_uid()
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def dreamrsi_run(task: Path, store: Path, n: int, isolation: str) -> float:
    cmd = [sys.executable, "-m", "dreamrsi", "run", str(task), "--budget", str(n),
           "--workers", "1", "--policy", f"fixed:branches=1,refine={n}", "--isolation",
           isolation, "--store", str(store), "--json"]
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    took = time.perf_counter() - start
    if '"ok": ' not in out.stdout or f'"attempts": {n}' not in out.stdout:
        raise SystemExit(f"the dreamrsi run did not finish {n} ok attempts:\n{out.stdout}")
    return took


def timed(argv: list[str], times: int) -> float:
    """Median wall seconds of running ``argv`` (which must succeed)."""
    took = []
    for _ in range(times):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def references(task: Path, work: Path, isolated: bool) -> dict[str, float]:
    """The machine's reference figures: a bare python3, one bare bwrap call, start-up."""
    figures = {"`python3 -c pass`": timed([sys.executable, "-c", "pass"], 15),
               "`dreamrsi --help` (the process's imports and start-up)":
               timed([sys.executable, "-m", "dreamrsi", "--help"], 5)}
    if isolated:
        bwrap = shutil.which("bwrap") or "bwrap"
        figures["one bare bwrap call (`bwrap --ro-bind / / /bin/true`)"] = timed(
            [bwrap, "--ro-bind", "/", "/", "/bin/true"], 15)
        shutil.rmtree(work, ignore_errors=True)
        with lease_uid() if os.geteuid() == 0 else _no_uid() as uid:
            line, _ = isolated_lines(load_task(task), work, uid, "true", "true")
            if uid is not None:
                subprocess.run(["chown", "-R", f"{uid}:{uid}", str(work / "ws"),
                                str(work / "io")], check=True)
            figures["`true` under dreamrsi's full bwrap invocation (prlimit, bwrap, setpriv)"] = \
                timed(["bash", "-c", f"cd {shlex.quote(str(work / 'ws'))} && {line}"], 15)
        shutil.rmtree(work, ignore_errors=True)
    return figures



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 1000])
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 1],
                        help="sandwiches per size (one number per size)")
    parser.add_argument("--with-off", action="store_true",
                        help="also compare with isolation off (a plain shell loop)")
    args = parser.parse_args()
    if len(args.repeats) != len(args.sizes):
        raise SystemExit("give one --repeats number per --sizes number")
    problem = isolation_problem()
    if problem is not None:
        raise SystemExit(f"this benchmark compares isolated runs, and {problem}")
    modes = [("bubblewrap", "required", True)] + ([("off", "off", False)] if args.with_off else [])
    ref_before = reference_loop()
    rows: list[tuple[int, str, float, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-bench-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        os.chmod(root, 0o755)  # the sandbox user reads the seed copies and python3 below
        # the shell loop works where dreamrsi puts attempt folders (a tmpfs when there is one)
        work = work_folder_for(root / "store-probe") / "shell"
        refs = references(task, work, True)
        try:
            for size, repeats in zip(args.sizes, args.repeats, strict=True):
                for label, mode, isolated in modes:
                    shell = ours = 0.0
                    for block in range(repeats):
                        half = size // 2
                        shell += shell_loop(task, work, half, isolated)
                        store = root / f"store-{size}-{block}-{mode}"
                        ours += dreamrsi_run(task, store, size, mode)
                        shutil.rmtree(store, ignore_errors=True)
                        shell += shell_loop(task, work, size - half, isolated)
                    rows.append((size, label, shell, ours, repeats))
        finally:
            shutil.rmtree(work.parent, ignore_errors=True)
    ref_after = reference_loop()
    print(render(rows, refs, ref_before, ref_after, args))


def render(rows: list[tuple[int, str, float, float, int]], refs: dict[str, float],
           ref_before: float, ref_after: float, args: argparse.Namespace) -> str:
    start_up = refs["`dreamrsi --help` (the process's imports and start-up)"]
    lines = ["| attempts | isolation | shell loop ms/attempt | dreamrsi ms/attempt | "
             "ratio | start-up share of dreamrsi | ratio without start-up | target |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    verdicts = []
    for size, label, shell, ours, repeats in rows:
        n = size * repeats
        ratio = ours / shell
        share = start_up * repeats / ours
        bare = (ours - start_up * repeats) / shell
        target = TARGETS.get(size) if label == "bubblewrap" else None
        verdict = "" if target is None else \
            f"<= {target}: {'PASS' if ratio <= target else 'FAIL'}"
        if target is not None:
            verdicts.append(ratio <= target)
        lines.append(f"| {size} (x{repeats}) | {label} | {1000 * shell / n:.1f} | "
                     f"{1000 * ours / n:.1f} | {ratio:.2f} | {100 * share:.1f} % | "
                     f"{bare:.2f} | {verdict} |")
    lines += ["", "Reference figures of this machine during the run (median wall time):", "",
              "| reference | ms |", "|---|---:|"]
    lines += [f"| {name} | {1000 * secs:.1f} |" for name, secs in refs.items()]
    lines += ["", f"Each size runs as sandwiches (shell loop, half the attempts; one `dreamrsi "
              f"run` of all of them, W=1, one chain, start-up included; shell loop, the other "
              f"half). With bubblewrap the shell loop runs both commands under the argv "
              f"dreamrsi's sandbox builds for them (prlimit, bwrap, setpriv to a leased uid, the "
              f"same environment) after `chown -R` of the writable folders, and copies the "
              f"workspace for the evaluator; both work on the folder kind dreamrsi uses for "
              f"attempts. The start-up share is the median time of `dreamrsi --help` over the "
              f"dreamrsi wall time. Reference loop (2M iterations of pure Python): "
              f"{ref_before:.3f} s before, {ref_after:.3f} s after."]
    table = "\n".join(lines)
    write_section("overhead", "Orchestration overhead", table,
                  f"python benchmarks/bench_overhead.py --sizes {' '.join(map(str, args.sizes))}"
                  f" --repeats {' '.join(map(str, args.repeats))}"
                  + (" --with-off" if args.with_off else ""))
    return table


if __name__ == "__main__":
    main()
