"""Benchmark of a store of a million nodes: the reading commands, paged store queries, loading a
dream's history, replaying a family over it and a small dream, each in its own process with its
wall time and peak memory.

Run it as ``python benchmarks/bench_million.py [--runs 1000] [--nodes 1000] [--big 100000]
[--cache DIR] [--rebuild]``. The store is built once into ``--cache`` (default
``~/.cache/dreamrsi/bench-million``) and reused while its sizes and this script's builder
version match. It holds one task (``million``) with ``--runs`` runs of ``--nodes`` nodes each
(a root with chains, as ``bench_store.make_tree`` draws them: feedback, metrics and evidence
on every node; no artifacts or commits, which would need blobs and git objects behind them)
and another task (``million-big``) with one run of ``--big`` nodes; every node has one
evaluator row in its run's ledger chain besides its record row. It is built through the
store's own API (``append_ledger`` then ``add_nodes``, 1,000 nodes per
transaction): there is no second way to write a store to keep equal to it.

Each measurement runs in a fresh process (this script with ``--probe``, or the ``dreamrsi``
console script); its peak resident memory is that process's ``ru_maxrss`` as ``os.wait4``
reports it, next to a process that only imports dreamrsi. The section "million" of
BENCHMARKS.md is replaced.

``--dreaming`` measures the dreaming steps alone (and the import floor), into a section
of their own. ``--before REV`` measures the dreaming steps (and the import floor) on the
source of git revision ``REV`` too, side by side, each step first on it and then on the
working tree: the same probes, the same store, the same machine minutes apart. Any size
is a scale: ``--runs 100 --nodes 1000 --big 1000`` is a history of 10^5 nodes built in
seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import reference_loop, write_section  # noqa: E402
from bench_reading import write_task  # noqa: E402
from bench_startup import dreamrsi_command  # noqa: E402
from bench_store import make_tree  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUILDER = 3
"""The version of the builder below: a cached store built by another version is rebuilt (3: the
store schema numbered its million-node indexes 9, after the learned models' 8)."""
CHUNK = 1_000
BIG = "rbig00000"
TASK = "million"


def run_ids(runs: int) -> list[str]:
    """The ids of the small runs, oldest first."""
    return [f"r{k:08d}" for k in range(runs)]


# -- building ------------------------------------------------------------------------------


def build(cache: Path, runs: int, nodes: int, big: int) -> dict[str, Any]:
    """The cached store's description, building it first when missing or of other sizes."""
    marker = cache / "built.json"
    wanted = {"builder": BUILDER, "runs": runs, "nodes": nodes, "big": big}
    if marker.is_file():
        built = json.loads(marker.read_text())
        if {k: built.get(k) for k in wanted} == wanted:
            return dict(built)
    if cache.exists():
        subprocess.run(["rm", "-rf", str(cache)], check=True)
    cache.mkdir(parents=True)
    started = time.perf_counter()
    _fill(cache, runs, nodes, big)
    built = {**wanted, "seconds": round(time.perf_counter() - started, 1),
             "bytes": sum(f.stat().st_size for f in (cache / "store").glob("store.db*"))}
    marker.write_text(json.dumps(built))
    return built


def _fill(cache: Path, runs: int, nodes: int, big: int) -> None:
    from dreamrsi.core.policy import PolicySpec
    from dreamrsi.store import RunRecord, RunStatus, SqliteRunStore, TaskRecord
    from dreamrsi.tasks import load_task

    small = load_task(write_task(cache / "task", TASK))
    large = load_task(write_task(cache / "task-big", f"{TASK}-big"))
    rng = random.Random(39)
    plan = [(run_id, small, nodes) for run_id in run_ids(runs)] + [(BIG, large, big)]
    with SqliteRunStore.open(cache / "store", writer=True, holder="bench_million") as store:
        for task in (small, large):
            store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest,
                                      task.summary()))
        for k, (run_id, task, size) in enumerate(plan):
            store.create_run(RunRecord(
                run_id, task.digest, task.name, PolicySpec("fixed"),
                {"budget": size - 1, "workers": 2}, k, RunStatus.FINISHED,
                1_700_000_000.0 + k))
            # no blobs or commits behind these nodes: name none, so that verify passes
            tree = [n._replace(artifacts=(), commit=None) for n in make_tree(run_id, size, rng)]
            for i in range(0, len(tree), CHUNK):
                part = tree[i:i + CHUNK]
                with store.atomic():
                    store.append_ledger(run_id, [_evaluated(n) for n in part], run_id=run_id)
                    store.add_nodes(part)
            if k % 100 == 0:
                print(f"built {k + 1} of {len(plan)} runs", file=sys.stderr, flush=True)


def _evaluated(node: Any) -> Any:
    """The evaluator's ledger row of a node, as the engine records one."""
    from dreamrsi.store import Actor, LedgerEvent

    return LedgerEvent(Actor.EVAL, "python3 evaluate.py", exit=0, commit=node.commit,
                       parsed={"score": node.raw_score, "valid": node.valid,
                               "feedback": node.feedback[:40]},
                       env_digest="sha256:" + "e" * 64, duration_ms=node.cost.wall_ms,
                       node_id=node.node_id, event_id=f"evt_{node.node_id}",
                       t="2026-12-05T00:00:00.000Z")


# -- measuring -----------------------------------------------------------------------------


def probe(name: str, store_dir: Path, arg: str) -> dict[str, Any]:
    """One measurement, in this process (run with ``--probe``): what it did and its seconds."""
    from dreamrsi.store import SqliteRunStore

    if name == "import":
        import dreamrsi.dreaming.dreamer  # noqa: F401  what every probe below imports

        return {"did": "imports only"}
    with SqliteRunStore.open(store_dir) as store:
        started = time.perf_counter()
        did = _PROBES[name](store, arg)
        return {"did": did, "seconds": time.perf_counter() - started}


def _tree_page(store: Any, arg: str) -> str:
    offset, _, after = arg.partition(":")
    rows = list(store.tree_listing(BIG, offset=int(offset or 0), limit=100,
                                   after=after or None))
    return f"{len(rows)} rows"


def _cursor(store: Any, arg: str) -> str:
    return str(next(iter(store.tree_listing(BIG, offset=int(arg) - 1, limit=1))).node_id)


def _best(store: Any, arg: str) -> str:
    from dreamrsi.engine import queries

    return str(queries.best(store, BIG)["node_id"])


def _ledger_page(store: Any, arg: str) -> str:
    rows = list(store.ledger(BIG, after=int(arg), limit=100))
    return f"{len(rows)} rows from seq {rows[0].seq}"


def _verify(store: Any, arg: str) -> str:
    report = store.verify(BIG)
    if not report.ok:
        raise SystemExit(f"verify failed: {report.problem}")
    return f"{report.rows} rows, {report.nodes} node records"


def _history(store: Any, arg: str) -> Any:
    from dreamrsi.dreaming.history import load_history

    run = store.get_run(run_ids(1)[0])
    task = store.get_task(run.task_digest)
    return load_history(store, TASK, task.digest, task.evaluator_digest)


def _load(store: Any, arg: str) -> str:
    history = _history(store, arg)
    return f"{len(history.trees)} trees, {sum(t.size + 1 for t in history.trees):,} nodes"


def _replay(store: Any, arg: str) -> str:
    from dreamrsi.core.policy import PolicySpec
    from dreamrsi.dreaming import ReplaySettings
    from dreamrsi.dreaming.evaluate import mean_value, score_policy

    history = _history(store, arg)
    started = time.perf_counter()
    scores = score_policy(PolicySpec("greedy", {"branches": 8, "top": 1}), history.trees,
                          ReplaySettings(workers=4, attempt_budget=200))
    return (f"{len(scores)} trees, mean V {mean_value(scores):.4f}; the replay alone "
            f"{time.perf_counter() - started:.1f} s")


def _dream(store: Any, arg: str) -> str:
    from dreamrsi.core.policy import PolicySpec
    from dreamrsi.dreaming import DreamConfig, ReplaySettings
    from dreamrsi.dreaming.dreamer import choose
    from dreamrsi.dreaming.quality import QualityScale

    history = _history(store, arg)
    started = time.perf_counter()
    config = DreamConfig(families=("fixed", "greedy"), trials=int(arg), processes=1,
                         replay=ReplaySettings(workers=4, attempt_budget=200))
    train, holdout = config.split.divide(list(history.trees))
    choice = choose(train, holdout, PolicySpec("fixed", {"branches": 10, "refine": 20}),
                    config, QualityScale.of(history.trees))
    return (f"{int(arg)} trials, chose {choice.selected.label()}; the dream alone "
            f"{time.perf_counter() - started:.1f} s")


_PROBES = {"tree-page": _tree_page, "cursor": _cursor, "best": _best,
           "ledger-page": _ledger_page, "verify": _verify, "load": _load, "replay": _replay,
           "dream": _dream}


CPU_SECONDS: list[float] = []
"""The CPU seconds (user and system) of each run of :func:`measured`, in order: under load,
steadier than wall seconds."""


def measured(cmd: list[str], env: dict[str, str], keep: bool = False
             ) -> tuple[float, float, str]:
    """Wall seconds and peak resident MiB of one run of ``cmd`` (``os.wait4``: that process's
    own ``ru_maxrss``), and the last line it printed (``keep``; else its output is dropped).
    Its CPU seconds are appended to :data:`CPU_SECONDS`."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, stderr=err,
                                 stdout=subprocess.PIPE if keep else subprocess.DEVNULL)
        out = child.stdout.read() if child.stdout is not None else b""
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        CPU_SECONDS.append(usage.ru_utime + usage.ru_stime)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{cmd} failed: {err.read().decode(errors='replace')[-2000:]}")
    lines = out.decode(errors="replace").strip().splitlines()
    return wall, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def measurements(cache: Path, runs: int, big: int, cursor: str, small_node: str
                 ) -> list[tuple[str, list[str]]]:
    """What is measured, by label: the reading commands, then the probes of this script."""
    cli, s = dreamrsi_command(), ["--store", str(cache / "store")]
    small = run_ids(runs)[runs // 2]
    deep = big * 9 // 10
    rows = 2 * big + 1  # each node's evaluator row and record row, and the run's record

    def p(name: str, arg: str = "") -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--probe", name, "--arg", arg,
                "--cache", str(cache)]

    return [
        ("a process that imports dreamrsi's dreaming (every probe's floor)", p("import")),
        (f"dreamrsi status ({runs + 1:,} runs)", [*cli, "status", *s]),
        ("dreamrsi status --limit 20", [*cli, "status", "--limit", "20", *s]),
        ("dreamrsi status --limit 20 --offset 980", [*cli, "status", "--limit", "20",
                                                      "--offset", "980", *s]),
        ("dreamrsi status --json", [*cli, "status", "--json", *s]),
        (f"dreamrsi show BIG ({big:,} nodes)", [*cli, "show", BIG, *s]),
        (f"dreamrsi show BIG --offset {deep:,} --limit 100",
         [*cli, "show", BIG, "--offset", str(deep), "--limit", "100", *s]),
        ("dreamrsi show BIG --after NODE --limit 100 (the same page, by its cursor)",
         [*cli, "show", BIG, "--after", cursor, "--limit", "100", *s]),
        ("dreamrsi show BIG --json (every node, streamed)", [*cli, "show", BIG, "--json", *s]),
        ("dreamrsi show SMALL (1,000 nodes)", [*cli, "show", small, *s]),
        ("dreamrsi show SMALL NODE", [*cli, "show", small, small_node, *s]),
        ("dreamrsi best BIG", [*cli, "best", BIG, *s]),
        (f"dreamrsi ledger show BIG --after {rows - 100:,} --limit 100",
         [*cli, "ledger", "show", BIG, "--after", str(rows - 100), "--limit", "100", *s]),
        (f"dreamrsi ledger show BIG --json (every row: {rows:,})",
         [*cli, "ledger", "show", BIG, "--json", *s]),
        ("dreamrsi ledger verify SMALL", [*cli, "ledger", "verify", small, *s]),
        ("dreamrsi ledger verify BIG", [*cli, "ledger", "verify", BIG, *s]),
        ("store: tree_listing(BIG, limit=100), the first page", p("tree-page", "0")),
        (f"store: tree_listing(BIG, offset={deep:,}, limit=100)", p("tree-page", str(deep))),
        ("store: tree_listing(BIG, after=NODE, limit=100), the same page",
         p("tree-page", f":{cursor}")),
        ("store: the best node of BIG (queries.best)", p("best")),
        (f"store: ledger(BIG, after={rows - 100:,}, limit=100)", p("ledger-page",
                                                                   str(rows - 100))),
        ("store: verify(BIG)", p("verify")),
        (f"dreaming: load the history of {TASK} (load_history)", p("load")),
        ("dreaming: load it, replay greedy:branches=8,top=1 over every tree (W=4, 200 "
         "attempts)", p("replay")),
        ("dreaming: load it, a small dream (fixed and greedy, 10 trials, 1 process)",
         p("dream", "10")),
    ]


def before_source(rev: str, into: Path) -> Path:
    """The ``src`` folder of git revision ``rev`` of this repository, unpacked into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "dreamrsi" / "bench-million")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--only", default="", help="measure only labels containing this")
    parser.add_argument("--before", default="",
                        help="a git revision whose dreaming steps are measured side by side")
    parser.add_argument("--dreaming", action="store_true",
                        help="measure the dreaming steps alone, into a section of their own")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--arg", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe, args.cache / "store", args.arg)))
        return
    built = build(args.cache, args.runs, args.nodes, args.big)
    if args.build_only:
        print(built)
        return
    ref_before, load_before = reference_loop(), _load()
    from dreamrsi.store import SqliteRunStore

    with SqliteRunStore.open(args.cache / "store", writer=True, upgrade=True):
        pass  # a cache built by an older schema is migrated first
    env = {"PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120", "PATH": "/usr/bin:/bin"}
    me = [sys.executable, str(Path(__file__).resolve()), "--cache", str(args.cache), "--arg"]
    deep = args.big * 9 // 10
    cursor = json.loads(measured([*me, str(deep), "--probe", "cursor"], env, True)[2])["did"]
    small_node = f"{run_ids(args.runs)[args.runs // 2]}-{args.nodes // 2}"
    old_env = None
    if args.before:
        unpacked = Path(tempfile.mkdtemp(prefix="bench-million-before-"))
        old_env = {**env, "PYTHONPATH": str(before_source(args.before, unpacked))}
        lines = ["| measurement | wall s | CPU s | peak RSS MiB | before: wall s | before: CPU "
                 "s | before: peak RSS MiB | what it did |",
                 "|---|---:|---:|---:|---:|---:|---:|---|"]
    else:
        lines = ["| measurement | wall s | peak RSS MiB | what it did |", "|---|---:|---:|---|"]
    for label, cmd in measurements(args.cache, args.runs, args.big, cursor, small_node):
        if args.only not in label or (args.dreaming and not (
                "dreaming" in label or "imports" in label)):
            continue
        probe_run = "--probe" in cmd
        side = ""
        if old_env is not None:
            side = " | | |"
            if probe_run and ("dreaming" in label or "imports" in label):
                old_wall, old_rss, old_last = measured(cmd, old_env, keep=True)
                side = f" | {old_wall:.2f} | {CPU_SECONDS[-1]:.2f} | {old_rss:.0f}"
                print(f"before: {label}: {old_wall:.2f} s, {old_rss:.0f} MiB, {old_last}",
                      flush=True)
        wall, rss, last = measured(cmd, env, keep=probe_run)
        did = ""
        if probe_run:
            result = json.loads(last)
            did = str(result["did"])
            if "seconds" in result:
                did += f" ({result['seconds']:.2f} s inside)"
        cpu = f" {CPU_SECONDS[-1]:.2f} |" if old_env is not None else ""
        line = f"| {label} | {wall:.2f} |{cpu} {rss:.0f}{side} | {did} |"
        print(line, flush=True)
        lines.append(line)
    body = "\n".join(lines) + (
        f"\n\nStore: task `{TASK}` with {args.runs:,} runs of {args.nodes:,} nodes and task "
        f"`{TASK}-big` with one run (BIG) of {args.big:,} nodes, "
        f"{args.runs * args.nodes + args.big:,} nodes in all; every node has its record row "
        "and one evaluator row in its run's ledger chain "
        f"({2 * (args.runs * args.nodes + args.big) + args.runs + 1:,} ledger rows); "
        f"{built['bytes'] / 2**30:.1f} GiB on disk, built through the store's API "
        f"(`append_ledger`, `add_nodes`, 1,000 nodes a transaction) in {built['seconds']:.0f} s "
        "and cached between runs of the script. Each row is one fresh process: the "
        "`dreamrsi` console script (output to /dev/null), or this script's probe of one store "
        "query or dreaming step (the seconds inside exclude its start-up and imports). Peak "
        "RSS is the process's own `ru_maxrss` (`os.wait4`). "
        + (f"The before columns ran the same probe on the source of `{args.before}` just "
           "before the working tree's (its own choice and figures are in the script's "
           "output). " if args.before else "")
        + f"Load average before the run: {load_before}; after: {_load()}. Reference loop (2M "
        f"iterations of pure Python): {ref_before:.3f} s before, {reference_loop():.3f} s "
        "after.")
    if not args.only:
        default = (args.runs, args.nodes, args.big) == (1000, 1000, 100_000)
        name = ("million" if default else f"million-{args.runs}x{args.nodes}") + (
            "-dreaming" if args.dreaming else "")
        title = ("A store of a million nodes" if default else
                 f"A store of {args.runs * args.nodes + args.big:,} nodes (bench_million at "
                 "a smaller scale)") + (": dreaming" if args.dreaming else "")
        write_section(name, title, body,
                      f"python benchmarks/bench_million.py --runs {args.runs} --nodes "
                      f"{args.nodes} --big {args.big}"
                      + (f" --before {args.before}" if args.before else "")
                      + (" --dreaming" if args.dreaming else ""))
    print(body)


def _load() -> str:
    """The machine's load averages (1, 5 and 15 minutes), as ``uptime`` prints them."""
    return ", ".join(f"{v:.1f}" for v in os.getloadavg())


if __name__ == "__main__":
    main()
