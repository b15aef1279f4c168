"""Benchmark of the CLI's start-up: ``dreamrsi --help``, ``status`` and ``show`` next to
``python3 -c pass``.

Run it as ``python benchmarks/bench_startup.py [--rounds 15] [--baseline REF]``. It runs the
real ``dreamrsi`` console script (the one installed next to this Python; ``python -m dreamrsi``
where there is none) with this checkout's ``src`` first on ``PYTHONPATH``, so the code measured
is this checkout's. Each round runs every command once, in turn, so a busy machine slows all of
them alike; the table gives medians of wall time and of CPU time (user + system, which a busy
machine inflates less), each command's extra over ``python3 -c pass``, and the share of its
wall time that ``python -X importtime`` puts on imports. With ``--baseline REF`` the same
commands also run on the ``src`` of a git commit (its stores made by its own code), side by
side. The section "startup" of BENCHMARKS.md is replaced.

Every command runs with its bytecode cached, as an installed package's is (pip compiles it at
install; an editable checkout writes it on first import): the commands get a fresh
``PYTHONPYCACHEPREFIX`` in the benchmark's temporary directory, filled by the warm-up round, and
``PYTHONDONTWRITEBYTECODE`` is dropped from their environment (where it is set, every run would
otherwise compile every module of the checkout from source, a cost no user pays).

Target (issue 17): ``--help``, ``status`` on an empty store and ``show`` on a small store take
at most 0.15 s more wall time than ``python3 -c pass``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import reference_loop, write_section  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET_EXTRA_S = 0.15
RUN_ID = "rbench01"

MAKE_STORES = """
import sys
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.store.base import TaskRecord
from dreamrsi.testing.builders import make_node, make_run
empty, small = sys.argv[1], sys.argv[2]
SqliteRunStore.open(empty, writer=True).close()
with SqliteRunStore.open(small, writer=True) as store:
    store.put_task(TaskRecord("sha256:task0", "toy", "sha256:eval0", {"direction": "maximize"}))
    store.create_run(make_run("rbench01", task_digest="sha256:task0", task_name="toy"))
    store.add_nodes([make_node("rbench01", 0, None)]
                    + [make_node("rbench01", k, k - 1, plan=f"step {k}") for k in range(1, 20)])
"""


def dreamrsi_command() -> list[str]:
    """The console script installed with this Python, or ``python -m dreamrsi``."""
    script = Path(sys.executable).parent / "dreamrsi"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "dreamrsi"]


class Side:
    """One version of the code: its ``src`` folder and the stores its own code made."""

    def __init__(self, name: str, src: Path, work: Path) -> None:
        self.name = name
        self.env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "100",
                    "PYTHONPYCACHEPREFIX": str(work / f"{name}-bytecode")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.empty, self.small = work / f"{name}-empty", work / f"{name}-small"
        subprocess.run([sys.executable, "-c", MAKE_STORES, str(self.empty), str(self.small)],
                       env=self.env, check=True)

    def commands(self) -> dict[str, list[str]]:
        cli = dreamrsi_command()
        return {
            "dreamrsi --help": [*cli, "--help"],
            "dreamrsi status (empty store)": [*cli, "status", "--store", str(self.empty)],
            "dreamrsi status --json (empty store)": [*cli, "status", "--json", "--store",
                                                     str(self.empty)],
            "dreamrsi show RUN (20 nodes)": [*cli, "show", RUN_ID, "--store", str(self.small)],
        }


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    res = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{cmd} failed: {res.stderr.decode(errors='replace')}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_seconds(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Seconds ``-X importtime`` puts on the top-level imports of one run, and the three
    heaviest of them."""
    python = cmd[:1] if cmd[0] == sys.executable else [sys.executable, cmd[0]]
    rest = cmd[1:]
    res = subprocess.run([python[0], "-X", "importtime", *python[1:], *rest], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    top = []
    for line in res.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
        if m:
            top.append((int(m.group(1)) / 1e6, m.group(2)))
    heaviest = ", ".join(f"{name} {s * 1000:.0f} ms" for s, name in sorted(top)[::-1][:3])
    return sum(s for s, _ in top), heaviest


def instructions(cmd: list[str], env: dict[str, str], work: Path) -> int | None:
    """Instructions one run of ``cmd`` executes, counted by callgrind with a fixed hash seed
    (the same count every run, where wall and CPU time vary with the machine's load);
    ``None`` without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    out = work / "callgrind.out"
    res = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
                         env={**env, "PYTHONHASHSEED": "0"}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    out.unlink(missing_ok=True)
    found = re.search(r"Collected : (\d+)", res.stderr)
    if res.returncode != 0 or found is None:
        raise SystemExit(f"{cmd} under callgrind failed: {res.stderr[-2000:]}")
    return int(found.group(1))


def baseline_src(ref: str, work: Path) -> Path:
    """The ``src`` folder of commit ``ref``, unpacked under ``work``."""
    dest = work / "baseline"
    dest.mkdir()
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def measure(sides: list[Side], rounds: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    env = sides[0].env
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    plan = [("", "python3 -c pass", [sys.executable, "-c", "pass"], env)]
    plan += [(s.name, name, cmd, s.env) for s in sides for name, cmd in s.commands().items()]
    for _ in range(rounds):
        for side, name, cmd, cmd_env in plan:
            runs.setdefault((side, name), []).append(timed(cmd, cmd_env))
    return runs


def _millions(count: int | None) -> str:
    return "(no valgrind)" if count is None else f"{count / 1e6:,.1f} M"


def _extra_millions(count: int | None, base: int | None) -> str:
    return "(no valgrind)" if count is None or base is None else \
        f"{(count - base) / 1e6:+,.1f} M"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline", help="a git commit to measure side by side")
    args = parser.parse_args()
    ref_before = reference_loop()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sides = [Side("this", ROOT / "src", work)]
        if args.baseline:
            sides.append(Side(args.baseline, baseline_src(args.baseline, work), work))
        for side in sides:  # warm the caches (bytecode, page cache) before timing
            for cmd in [[sys.executable, "-c", "pass"], *side.commands().values()]:
                timed(cmd, side.env)
        runs = measure(sides, args.rounds)
        imports = {(s.name, name): import_seconds(cmd, s.env) for s in sides
                   for name, cmd in s.commands().items()}
        counts = {(s.name, name): instructions(cmd, s.env, work) for s in sides
                  for name, cmd in s.commands().items()}
        base_count = instructions([sys.executable, "-c", "pass"], sides[0].env, work)
    base_wall = statistics.median(w for w, _ in runs[("", "python3 -c pass")])
    base_cpu = statistics.median(c for _, c in runs[("", "python3 -c pass")])
    lines = ["| code | command | wall s (median) | CPU s (median) | extra wall over "
             "`python3 -c pass` | extra CPU | extra instructions (callgrind) | "
             "imports (share of wall) | heaviest imports | target |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
             f"| | python3 -c pass | {base_wall:.3f} | {base_cpu:.3f} | | | "
             f"{_millions(base_count)} | | | |"]
    verdicts = []
    for (side, name), samples in runs.items():
        if not side:
            continue
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        extra = wall - base_wall
        seconds, heaviest = imports[(side, name)]
        verdict = "PASS" if extra <= TARGET_EXTRA_S else "FAIL"
        if side == "this" and "--json" not in name:
            verdicts.append(verdict)
        label = "this checkout" if side == "this" else f"commit {side}"
        lines.append(f"| {label} | {name} | {wall:.3f} | {cpu:.3f} | {extra:+.3f} "
                     f"({wall / base_wall:.1f}x) | {cpu - base_cpu:+.3f} | "
                     f"{_extra_millions(counts[(side, name)], base_count)} | "
                     f"{seconds:.3f} s ({seconds / wall:.0%}) | "
                     f"{heaviest} | {verdict} (<= +{TARGET_EXTRA_S} s) |")
    met = all(v == "PASS" for v in verdicts)
    summary = f"Target {'met' if met else 'NOT met'} by every command of this checkout."
    body = "\n".join(lines) + (
        f"\n\n{summary} Medians of {args.rounds} rounds; each round runs every command once, "
        "in turn. The console script is the one installed next to the Python running the "
        "benchmark, run with each version's `src` first on `PYTHONPATH` and its bytecode cached "
        "(as an installed package's is). Extra CPU: user + system seconds over those of "
        "`python3 -c pass`, which a busy machine inflates less than wall time (the target is on "
        "wall time). Extra instructions: what callgrind counts for one run of the command "
        "(hash seed fixed) less what it counts for `python3 -c pass` (in the first row, in "
        "full): the same figure on a busy machine as on an idle one. Imports: the sum of "
        "the top-level imports that `python -X importtime` reports for one more run (its own "
        "overhead included), so the share is approximate. Reference loop (2M iterations of "
        f"pure Python): {ref_before:.3f} s before, {reference_loop():.3f} s after.")
    print(body)
    command = "python benchmarks/bench_startup.py --rounds " + str(args.rounds) + (
        f" --baseline {args.baseline}" if args.baseline else "")
    write_section("startup", "CLI start-up", body, command)


if __name__ == "__main__":
    main()
