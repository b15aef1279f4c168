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

CPU time is measured too, since a busy machine inflates wall times: each loop's own CPU time
(the baseline's process; dreamrsi's process, all its threads, read by a small wrapper that
runs its command line and reports ``RUSAGE_SELF`` at exit) and its total (own plus what the
reaped children used, the commands' processes as far as the kernel charges them to their
reaper: the same for both loops, which start the same argv). The CPU ratio compares totals.
``--against SRC`` also runs the dreamrsi of another checkout's ``src`` folder in the same
sandwiches (before and after a change, side by side in one run).

Each size runs as sandwiches, baseline half, dreamrsi, baseline half, so that a machine
getting busier or quieter weighs on both sides alike. The figure is the ratio of total wall
times. The table prints both loops' per-attempt times; the machine's reference figures (a bare
``python3``, one bare ``bwrap``, ``true`` under the full sandbox line, ``dreamrsi --help``)
follow it. Targets (isolation on): <= 1.3 at 50 attempts, <= 1.1 at 1,000.

Usage: python benchmarks/bench_overhead.py [--sizes 50 1000] [--repeats 3 1] [--with-off]
    [--against OTHER/src]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
from _noop import noop_task  # noqa: E402
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
SELF_CPU = "BENCH-SELF-CPU"
# runs dreamrsi's command line in this interpreter and reports the process's own CPU time
CPU_PROBE = textwrap.dedent(f"""\
    import resource, sys
    from dreamrsi.cli.main import main
    sys.argv[0] = "dreamrsi"
    try:
        main()
    finally:
        used = resource.getrusage(resource.RUSAGE_SELF)
        sys.stderr.write(f"\\n{SELF_CPU} {{used.ru_utime + used.ru_stime}}\\n")
    """)
RUN_IMPORTS = ("dreamrsi.cli.runs", "dreamrsi.engine.run", "dreamrsi.store.sqlite",
               "dreamrsi.tasks.spec", "dreamrsi.programs.stored")


@dataclass
class Took:
    """Wall seconds, own CPU seconds and CPU seconds of the reaped children of a loop."""

    wall: float = 0.0
    own: float = 0.0
    children: float = 0.0

    def __iadd__(self, other: Took) -> Took:
        self.wall += other.wall
        self.own += other.own
        self.children += other.children
        return self

    @property
    def cpu(self) -> float:
        return self.own + self.children


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def make_task(root: Path) -> Path:
    return noop_task(root, "noop", "Measure orchestration overhead.", propose=PROPOSE,
                     evaluate=EVALUATE)


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
    eenv = evaluator_env(task, io, trusted, {}, view)
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


def hand_loop(task_dir: Path, work: Path, n: int, isolated: bool) -> Took:
    """Wall and CPU seconds of ``n`` attempts of the baseline (see the module's docstring):
    two process starts per attempt, the proposer's and the evaluator's, and the file work done
    in this process."""
    if n <= 0:
        return Took()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ws, io, view, seed = work / "ws", work / "io", work / "eval", task_dir / "seed"
    with lease_uid() if isolated and os.geteuid() == 0 else _no_uid() as uid:
        propose, evaluate = sandbox_commands(load_task(task_dir), work, uid, PROPOSE, EVALUATE,
                                             isolated)
        start, own, children = time.perf_counter(), time.process_time(), _children_cpu()
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
        took = Took(time.perf_counter() - start, time.process_time() - own,
                    _children_cpu() - children)
    shutil.rmtree(work, ignore_errors=True)
    return took


class _no_uid:  # noqa: N801 - a context manager used like lease_uid()
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def dreamrsi_run(task: Path, store: Path, n: int, isolation: str,
                 src: Path | None = None) -> Took:
    """Wall and CPU seconds of one ``dreamrsi run`` of ``n`` attempts (the dreamrsi of
    ``src`` when given, else the one this interpreter imports)."""
    cmd = [sys.executable, "-c", CPU_PROBE, "run", str(task), "--budget", str(n),
           "--workers", "1", "--policy", f"fixed:branches=1,refine={n}", "--isolation",
           isolation, "--store", str(store), "--json"]
    env = None if src is None else {**os.environ, "PYTHONPATH": str(src)}
    start, children = time.perf_counter(), _children_cpu()
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    wall, total = time.perf_counter() - start, _children_cpu() - children
    if out.returncode != 0 or '"ok": ' not in out.stdout or f'"attempts": {n}' not in out.stdout:
        raise SystemExit(f"the dreamrsi run did not finish {n} ok attempts:\n{out.stdout}"
                         f"\n{out.stderr[-3000:]}")
    own = float(out.stderr.rsplit(SELF_CPU, 1)[1].split()[0])
    return Took(wall, own, total - own)


def timed(argv: list[str], times: int,
          env: dict[str, str] | None = None) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (as charged to this process's reaped
    children) of running ``argv`` (which must succeed)."""
    took, cpu = [], []
    for _ in range(times):
        start, children = time.perf_counter(), _children_cpu()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        took.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - children)
    return statistics.median(took), statistics.median(cpu)


RUN_START = "the imports of `dreamrsi run` (the modules a run loads)"
RUN_START_AGAINST = "the same imports from the `--against` folder"


def references(task: Path, work: Path, isolated: bool,
               against: Path | None = None) -> dict[str, tuple[float, float]]:
    """The machine's reference figures: a bare python3, one bare bwrap call, start-up."""
    figures = {"`python3 -c pass`": timed([sys.executable, "-c", "pass"], 15),
               "`dreamrsi --help` (the process's imports and start-up)":
               timed([sys.executable, "-m", "dreamrsi", "--help"], 5),
               RUN_START: timed([sys.executable, "-c", f"import {', '.join(RUN_IMPORTS)}"], 5)}
    if against is not None:
        figures[RUN_START_AGAINST] = timed(
            [sys.executable, "-c", f"import {', '.join(RUN_IMPORTS)}"], 5,
            {**os.environ, "PYTHONPATH": str(against)})
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
    parser.add_argument("--against", type=Path, default=None, metavar="SRC",
                        help="also run the dreamrsi of this src folder (another checkout's) "
                        "in the same sandwiches")
    args = parser.parse_args()
    if len(args.repeats) != len(args.sizes):
        raise SystemExit("give one --repeats number per --sizes number")
    problem = isolation_problem()
    if problem is not None:
        raise SystemExit(f"this benchmark compares isolated runs, and {problem}")
    modes = [("bubblewrap", "required", True)] + ([("off", "off", False)] if args.with_off else [])
    ref_before = reference_loop()
    if args.against is not None and not (args.against / "dreamrsi" / "__init__.py").is_file():
        raise SystemExit(f"--against {args.against}: no dreamrsi package there (give a src "
                         "folder)")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-bench-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        os.chmod(root, 0o755)  # the sandbox user reads the seed copies and python3 below
        # the baseline works where dreamrsi puts attempt folders (a tmpfs when there is one)
        work = work_folder_for(root / "store-probe") / "baseline"
        refs = references(task, work, True, args.against)
        try:
            for size, repeats in zip(args.sizes, args.repeats, strict=True):
                for label, mode, isolated in modes:
                    base, ours, other = Took(), Took(), Took()
                    for block in range(repeats):
                        half = size // 2
                        base += hand_loop(task, work, half, isolated)
                        store = root / f"store-{size}-{block}-{mode}"
                        ours += dreamrsi_run(task, store, size, mode)
                        shutil.rmtree(store, ignore_errors=True)
                        if args.against is not None:
                            other += dreamrsi_run(task, store, size, mode, args.against)
                            shutil.rmtree(store, ignore_errors=True)
                        base += hand_loop(task, work, size - half, isolated)
                    n = size * repeats
                    print(f"{size} attempts x{repeats}, {label}: baseline "
                          f"{1000 * base.wall / n:.1f} ms/attempt (CPU {1000 * base.cpu / n:.1f}),"
                          f" dreamrsi {1000 * ours.wall / n:.1f} (CPU {1000 * ours.cpu / n:.1f})"
                          + (f", --against {1000 * other.wall / n:.1f} "
                             f"(CPU {1000 * other.cpu / n:.1f})" if args.against else ""),
                          flush=True)
                    rows.append(Row(size, label, repeats, base, ours, "dreamrsi"))
                    if args.against is not None:
                        rows.append(Row(size, label, repeats, base, other, "--against"))
        finally:
            shutil.rmtree(work.parent, ignore_errors=True)
    ref_after = reference_loop()
    print(render(rows, refs, ref_before, ref_after, args))


@dataclass(frozen=True)
class Row:
    """One size and isolation: the baseline's and one dreamrsi's sums over the sandwiches."""

    size: int
    label: str
    repeats: int
    base: Took
    ours: Took
    by: str


def _per(took: Took, n: int) -> str:
    return (f"{1000 * took.wall / n:.1f} (CPU {1000 * took.cpu / n:.1f}, "
            f"own {1000 * took.own / n:.1f})")


def _commit_of(folder: Path) -> str:
    """The short commit of the checkout holding ``folder`` (no path of this machine is
    written to BENCHMARKS.md)."""
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, check=False,
                         capture_output=True, text=True).stdout.strip()
    return f"commit {out}" if out else "another checkout"


def render(rows: list[Row], refs: dict[str, tuple[float, float]], ref_before: float,
           ref_after: float, args: argparse.Namespace) -> str:
    lines = ["| attempts | isolation | dreamrsi | baseline ms/attempt (CPU, own CPU) | "
             "dreamrsi ms/attempt (CPU, own CPU) | ratio | CPU ratio | own CPU added ms/attempt "
             "| start-up share of dreamrsi | ratio without start-up | target |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        n = row.size * row.repeats
        base, ours = row.base, row.ours
        start_up = refs[RUN_START if row.by == "dreamrsi" else RUN_START_AGAINST][0] \
            * row.repeats
        target = TARGETS.get(row.size) if row.label == "bubblewrap" and row.by == "dreamrsi" \
            else None
        ratio = ours.wall / base.wall
        verdict = "" if target is None else \
            f"<= {target}: {'PASS' if ratio <= target else 'FAIL'}"
        by = "this checkout" if row.by == "dreamrsi" else f"{_commit_of(args.against)} " \
            "(`--against`)"
        lines.append(f"| {row.size} (x{row.repeats}) | {row.label} | {by} | {_per(base, n)} | "
                     f"{_per(ours, n)} | {ratio:.2f} | {ours.cpu / base.cpu:.2f} | "
                     f"{1000 * (ours.own - base.own) / n:.1f} | "
                     f"{100 * start_up / ours.wall:.1f} % | "
                     f"{(ours.wall - start_up) / base.wall:.2f} | {verdict} |")
    lines += ["", "Reference figures of this machine during the run (medians):", "",
              "| reference | wall ms | CPU ms |", "|---|---:|---:|"]
    lines += [f"| {name} | {1000 * wall:.1f} | {1000 * cpu:.1f} |"
              for name, (wall, cpu) in refs.items()]
    lines += ["", "Each size runs as sandwiches (baseline, half the attempts; one `dreamrsi run` "
              "of all of them, W=1, one chain, start-up included; baseline, the other half). "
              "The baseline is a loop written by hand in Python that starts two processes per "
              "attempt, the proposer and the evaluator, under the argv, environment and spawn "
              "dreamrsi's sandbox uses for them (with bubblewrap: prlimit, bwrap, setpriv to a "
              "leased uid); it copies the seed into the workspace, hands the writable folders "
              "to that uid, copies the workspace for the evaluator and parses its answer in "
              "its own process, on the folder kind dreamrsi uses for attempts. The start-up "
              "share is the median time of importing the modules a `dreamrsi run` loads over "
              "the dreamrsi wall time. CPU: the loop's own CPU time (dreamrsi's process with "
              "all its threads) plus what its reaped children used, per attempt; own CPU "
              "added is dreamrsi's own CPU time less the baseline's. "
              f"Reference loop (2M iterations of pure Python): {ref_before:.3f} s before, "
              f"{ref_after:.3f} s after."]
    table = "\n".join(lines)
    write_section("overhead", "Orchestration overhead", table,
                  f"python benchmarks/bench_overhead.py --sizes {' '.join(map(str, args.sizes))}"
                  f" --repeats {' '.join(map(str, args.repeats))}"
                  + (" --with-off" if args.with_off else "")
                  + (" --against SRC" if args.against else ""))
    return table


if __name__ == "__main__":
    main()
