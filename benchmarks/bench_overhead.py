"""Orchestration overhead: `dreamrsi run` against a loop written by hand running the same commands.

A no-op task whose proposer and evaluator are one-line `python3 -c` commands (write a file;
print the result JSON) runs N attempts through `dreamrsi run` (W=1, one chain) and through the
baseline, a loop a careful engineer would write by hand in Python. Per attempt the baseline
starts exactly two processes, the ones dreamrsi must also start: the proposer and the
evaluator, each as the argument vector dreamrsi's sandbox builds for it (``prlimit`` limits;
with isolation on, the same ``bwrap`` mounts and namespaces and ``setpriv`` to an unprivileged
uid; ``sh -c`` and the command), with the same allow-listed environment, spawned as dreamrsi
spawns it (a new session, closed descriptors, output read through pipes). Everything else it
does in its own process, with no further process start: it empties the attempt folders,
copies the seed folder into the workspace and makes the io folder, hands both to the sandbox
uid (``os.lchown`` over the tree, as dreamrsi does), copies the workspace into the evaluator's
folder and opens it to others (``os.chmod`` a+rX), and parses the evaluator's JSON answer.
One uid is leased for the whole loop. So the ratio is what dreamrsi adds: the store,
workspace commits, the ledger, the trusted copy, the supervision of each command, and the
process's start-up (shown apart: the start-up share, and the ratio without it).

Each size runs as sandwiches, baseline half, dreamrsi, baseline half, so that a machine
getting busier or quieter weighs on both sides alike. The figure is the ratio of total wall
times. The table prints both loops' per-attempt times; the machine's reference figures (a bare
``python3``, one bare ``bwrap``, ``true`` under the full sandbox line, ``dreamrsi --help``)
follow it. Targets (isolation on): <= 1.3 at 50 attempts, <= 1.1 at 1,000.

Usage: python benchmarks/bench_overhead.py [--sizes 50 1000] [--repeats 3 1] [--with-off]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Command:
    """One command as the sandbox starts it: its argv, environment and working folder."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path

    def shell_line(self) -> str:
        """The same start as one shell line (``env -i`` and the argv)."""
        return "env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in self.env.items()) + \
            " " + shlex.join(self.argv)


def _sandbox_argv(command: str, cwd: Path, isolation: Isolation, env: dict[str, str],
                  task: Task, uid: int | None, timeout_s: float) -> Command:
    """The argument vector and environment dreamrsi's sandbox starts ``command`` with."""
    plan = plan_rlimits(command_limits(task.constraints, timeout_s))
    argv, _, _ = _build_argv(command, cwd, isolation, choose_bwrap(isolation), plan, uid)
    return Command(argv, sandbox_env(env, task.constraints.pass_env), cwd)


def sandbox_commands(task: Task, work: Path, uid: int | None, propose: str, evaluate: str,
                     isolated: bool) -> tuple[Command, Command]:
    """The proposer's and the evaluator's starts under dreamrsi's sandbox line (bubblewrap
    when ``isolated``, else the line of isolation ``off``)."""
    ws, io, view, trusted = work / "ws", work / "io", work / "eval", work / "trusted"
    for d in (ws, io, view, trusted):  # the mounts must exist while the argv is built
        d.mkdir(parents=True, exist_ok=True)
    mode = IsolationMode.REQUIRED if isolated else IsolationMode.OFF
    env = {**base_env(task, io), "DREAM_ATTEMPT_ID": "x", "DREAM_RUN_ID": "x",
           "DREAM_SEED": "0", "DREAM_CONTEXT": str(io / "context.json"),
           "DREAM_COST": str(io / "cost.json")}
    eenv = evaluator_env(task, io, trusted, {"DREAM_RESULT": str(io / "result.json")})
    return (_sandbox_argv(propose, ws, proposer_isolation(task, mode, ws, io), env, task, uid,
                          task.proposer.timeout_s),
            _sandbox_argv(evaluate, view, evaluator_isolation(task, mode, io, trusted), eenv,
                          task, uid, task.evaluator.timeout_s))


def _start(command: Command) -> bytes:
    """Run one command as dreamrsi's sandbox spawns it; its standard output."""
    proc = subprocess.Popen(command.argv, cwd=command.cwd, env=command.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{command.argv[-1]!r} failed ({proc.returncode}): {err.decode()}")
    return out


def _hand_to(top: Path, uid: int) -> None:
    """Give ``top`` and everything in it to ``uid`` (links changed themselves)."""
    os.lchown(top, uid, uid)
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), uid, uid)


def _open_to_others(top: Path) -> None:
    """``chmod -R a+rX``: readable by all, folders enterable."""
    for folder, _dirs, files in os.walk(top):
        os.chmod(folder, os.stat(folder).st_mode | 0o555)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, os.stat(path).st_mode | 0o444)


def hand_loop(task_dir: Path, work: Path, n: int, isolated: bool) -> float:
    """Wall seconds of ``n`` attempts of the baseline (see the module's docstring): two
    process starts per attempt, the proposer's and the evaluator's, and the file work done
    in this process."""
    if n <= 0:
        return 0.0
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ws, io, view, seed = work / "ws", work / "io", work / "eval", task_dir / "seed"
    with lease_uid() if isolated and os.geteuid() == 0 else _no_uid() as uid:
        propose, evaluate = sandbox_commands(load_task(task_dir), work, uid, PROPOSE, EVALUATE,
                                             isolated)
        start = time.perf_counter()
        for _ in range(n):
            for folder in (ws, io, view):
                shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(seed, ws, symlinks=True)
            io.mkdir()
            if uid is not None:
                _hand_to(ws, uid)
                _hand_to(io, uid)
            _start(propose)
            shutil.copytree(ws, view, symlinks=True)
            _open_to_others(view)
            if json.loads(_start(evaluate)) != {"score": 1.0, "valid": True}:
                raise SystemExit("the evaluator's answer changed")
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
            true, _ = sandbox_commands(load_task(task), work, uid, "true", "true", True)
            if uid is not None:
                _hand_to(work / "ws", uid)
                _hand_to(work / "io", uid)
            figures["`true` under dreamrsi's full bwrap invocation (prlimit, bwrap, setpriv)"] = \
                timed(["bash", "-c", f"cd {shlex.quote(str(true.cwd))} && {true.shell_line()}"],
                      15)
        shutil.rmtree(work, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 1000])
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 1],
                        help="sandwiches per size (one number per size)")
    parser.add_argument("--with-off", action="store_true",
                        help="also compare with isolation off (both under the sandbox "
                        "line of 'off')")
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
        # the baseline works where dreamrsi puts attempt folders (a tmpfs when there is one)
        work = work_folder_for(root / "store-probe") / "baseline"
        refs = references(task, work, True)
        try:
            for size, repeats in zip(args.sizes, args.repeats, strict=True):
                for label, mode, isolated in modes:
                    base = ours = 0.0
                    for block in range(repeats):
                        half = size // 2
                        base += hand_loop(task, work, half, isolated)
                        store = root / f"store-{size}-{block}-{mode}"
                        ours += dreamrsi_run(task, store, size, mode)
                        shutil.rmtree(store, ignore_errors=True)
                        base += hand_loop(task, work, size - half, isolated)
                    print(f"{size} attempts x{repeats}, {label}: baseline "
                          f"{1000 * base / (size * repeats):.1f} ms/attempt, dreamrsi "
                          f"{1000 * ours / (size * repeats):.1f} ms/attempt", flush=True)
                    rows.append((size, label, base, ours, repeats))
        finally:
            shutil.rmtree(work.parent, ignore_errors=True)
    ref_after = reference_loop()
    print(render(rows, refs, ref_before, ref_after, args))


def render(rows: list[tuple[int, str, float, float, int]], refs: dict[str, float],
           ref_before: float, ref_after: float, args: argparse.Namespace) -> str:
    start_up = refs["`dreamrsi --help` (the process's imports and start-up)"]
    lines = ["| attempts | isolation | baseline ms/attempt | dreamrsi ms/attempt | "
             "ratio | start-up share of dreamrsi | ratio without start-up | target |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    verdicts = []
    for size, label, base, ours, repeats in rows:
        n = size * repeats
        ratio = ours / base
        share = start_up * repeats / ours
        bare = (ours - start_up * repeats) / base
        target = TARGETS.get(size) if label == "bubblewrap" else None
        verdict = "" if target is None else \
            f"<= {target}: {'PASS' if ratio <= target else 'FAIL'}"
        if target is not None:
            verdicts.append(ratio <= target)
        lines.append(f"| {size} (x{repeats}) | {label} | {1000 * base / n:.1f} | "
                     f"{1000 * ours / n:.1f} | {ratio:.2f} | {100 * share:.1f} % | "
                     f"{bare:.2f} | {verdict} |")
    lines += ["", "Reference figures of this machine during the run (median wall time):", "",
              "| reference | ms |", "|---|---:|"]
    lines += [f"| {name} | {1000 * secs:.1f} |" for name, secs in refs.items()]
    lines += ["", "Each size runs as sandwiches (baseline, half the attempts; one `dreamrsi run` "
              "of all of them, W=1, one chain, start-up included; baseline, the other half). "
              "The baseline is a loop written by hand in Python that starts two processes per "
              "attempt, the proposer and the evaluator, under the argv, environment and spawn "
              "dreamrsi's sandbox uses for them (with bubblewrap: prlimit, bwrap, setpriv to a "
              "leased uid); it copies the seed into the workspace, hands the writable folders "
              "to that uid, copies the workspace for the evaluator and parses its answer in "
              "its own process, on the folder kind dreamrsi uses for attempts. The start-up "
              "share is the median time of `dreamrsi --help` over the dreamrsi wall time. "
              f"Reference loop (2M iterations of pure Python): {ref_before:.3f} s before, "
              f"{ref_after:.3f} s after."]
    table = "\n".join(lines)
    write_section("overhead", "Orchestration overhead", table,
                  f"python benchmarks/bench_overhead.py --sizes {' '.join(map(str, args.sizes))}"
                  f" --repeats {' '.join(map(str, args.repeats))}"
                  + (" --with-off" if args.with_off else ""))
    return table


if __name__ == "__main__":
    main()
