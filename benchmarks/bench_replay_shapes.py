"""Replay on any tree shape: reveals per CPU second, and how time per replay grows.

Every built-in family replays, at W = 1 and W = 10, the ten-chain tree of ``bench_replay.py``
and bushy trees in which 10 %, 30 % or 60 % of the attempts open a branch at the root (the
others extend a random leaf), at 200, 2,000 and 20,000 attempts. Each family's parameters let
it explore the whole tree (``_shapes.family_specs``: as many branches as the tree holds,
chains as long as its longest). Targets: >= 300,000 reveals per CPU second in every cell, and
time per replay linear in the revealed nodes: the exponent of a least-squares fit of
log(seconds per replay) on log(nodes revealed per replay) over the three sizes, near 1.

With ``--baseline REV`` the same cells are measured, in the same run and interleaved cell by
cell, on the code of commit REV (its ``src/`` unpacked into a temporary folder by
``git archive``), each side in its own process on one core. A baseline replay that takes more
than ``--cap`` CPU seconds is stopped and reported as such.

With ``--peer`` the script instead measures, in the same run and interleaved cell by cell, our
``fixed`` and ``greedy`` at W = 1 beside the replay of the peer library Open Dream-RSI
(``pip install open-dream-rsi``; ``_peer_replay.py`` says what is timed and what a reveal is
on each side) on the same trees, and writes its own section. A peer replay over ``--peer-cap``
CPU seconds is stopped; the peer's other cells of that size are then not run. (``openevolve``
and ``shinka-evolve`` keep a program database and sample parents from it: no tree replay to
time.)

With ``--callgrind`` each side instead replays a fixed set of cells once under
``valgrind --tool=callgrind`` and the instruction counts per revealed node are compared:
deterministic where wall and CPU time are noisy. With ``--opcodes`` each side instead counts the
Python bytecodes one replay of each of those cells executes (``sys.settrace`` opcode events,
after one untraced replay), per revealed node and by function: as deterministic, and seconds
rather than minutes.

Every side replays as the dream does with its default quality: without the reveal order and
without the improvement record (``improvements=False``, on code that has the switch).

Usage: python benchmarks/bench_replay_shapes.py [--seconds 0.3] [--repeats 3]
       [--baseline REV] [--cap 5] [--sizes 200 2000 20000] [--callgrind | --opcodes]
       [--peer [--peer-cap 30]]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def throughput_options(replay: Any) -> dict[str, Any]:
    """What the dream's replays leave out, on this side's ``replay``: the improvement record
    where the code keeps one (code before it had none to leave out)."""
    import inspect

    return ({"improvements": False} if "improvements" in inspect.signature(replay).parameters
            else {})
ROOT = HERE.parent
SHAPES = ("chains", "bushy-10", "bushy-30", "bushy-60")
SIZES = (200, 2_000, 20_000)
FAMILIES = ("fixed", "greedy", "ucb", "halving", "stagnation", "allocation", "planned",
            "ladder")
WORKERS = (1, 10)
TARGET = 300_000


# -- the measuring side (a child process per checkout) -----------------------------------------

def _child() -> None:
    """Answer measurement requests, one JSON line each, with the code on ``sys.path``."""
    import gc
    import signal

    sys.path.insert(0, str(HERE))
    from _shapes import bushy_tree, chain_tree, family_specs
    from dreamrsi.core.policy import GridPlan
    from dreamrsi.core.replay import replay
    from dreamrsi.policies import make_policy

    trees: dict[tuple[str, int], Any] = {}
    fast = throughput_options(replay)

    class Capped(Exception):
        pass

    def on_alarm(signum: int, frame: Any) -> None:
        raise Capped

    signal.signal(signal.SIGPROF, on_alarm)
    for line in sys.stdin:
        ask = json.loads(line)
        key = (ask["shape"], ask["size"])
        if key not in trees:
            shape = ask["shape"]
            trees[key] = (chain_tree(ask["size"]) if shape == "chains" else
                          bushy_tree(ask["size"], int(shape.split("-")[1]) / 100))
        tree = trees[key]
        spec, grid = family_specs(tree)[ask["family"]]
        plan = None if grid is None else GridPlan(grid[0], grid[1], "bench")
        policy = make_policy(spec)
        best = None
        capped = False
        for _ in range(ask["repeats"]):
            reveals = replays = 0
            gc.collect()
            started = time.process_time()
            signal.setitimer(signal.ITIMER_PROF, ask["cap"])
            try:
                while True:
                    result = replay(policy, tree, workers=ask["workers"],
                                    max_rounds=tree.size, plan=plan, keep_order=False, **fast)
                    reveals += result.revealed
                    replays += 1
                    elapsed = time.process_time() - started
                    if elapsed >= ask["seconds"]:
                        break
            except Capped:
                capped = replays == 0
                elapsed = time.process_time() - started
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            if capped:
                break
            window = (reveals / elapsed, elapsed / replays, reveals / replays)
            best = window if best is None or window[0] > best[0] else best
        print(json.dumps({"capped": capped, "rate": best and best[0],
                          "per_replay": best and best[1], "revealed": best and best[2],
                          "cap": ask["cap"]}), flush=True)


def _cell_setup(cell: dict[str, Any]) -> tuple[Any, Any, Any]:
    """A cell's tree, its family's policy for that tree, and the policy's plan (or ``None``)."""
    from _shapes import bushy_tree, chain_tree, family_specs
    from dreamrsi.core.policy import GridPlan
    from dreamrsi.policies import make_policy

    shape, size = cell["shape"], cell["size"]
    tree = (chain_tree(size) if shape == "chains" else
            bushy_tree(size, int(shape.split("-")[1]) / 100))
    spec, grid = family_specs(tree)[cell["family"]]
    plan = None if grid is None else GridPlan(grid[0], grid[1], "bench")
    return tree, make_policy(spec), plan


def _callgrind_child(cells: list[dict[str, Any]], reps: int) -> None:
    """Replay each cell ``reps`` times and print the nodes one replay revealed (run under
    callgrind twice, with two counts of replays: the difference is the replays' alone)."""
    sys.path.insert(0, str(HERE))
    from dreamrsi.core.replay import replay

    out = []
    fast = throughput_options(replay)
    for cell in cells:
        tree, policy, plan = _cell_setup(cell)
        revealed = 0
        for _ in range(reps):
            revealed = replay(policy, tree, workers=cell["workers"], max_rounds=tree.size,
                              plan=plan, keep_order=False, **fast).revealed
        out.append(revealed)
    print(json.dumps(out), flush=True)


# -- the driving side --------------------------------------------------------------------------

class Side:
    """A measuring child process running one checkout's code."""

    def __init__(self, name: str, src: Path, python: str = sys.executable,
                 mode: str = "--child") -> None:
        self.name = name
        env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
        self.proc = subprocess.Popen([python, __file__, mode], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, **cell: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cell) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def unpack(rev: str, into: Path) -> Path:
    """The ``src/`` folder of commit ``rev``, unpacked under ``into``."""
    archive = subprocess.run(["git", "archive", "--format=tar", rev, "src"], cwd=ROOT,
                             check=True, capture_output=True).stdout
    tar = into / "src.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    return into / "src"


def cells(sizes: tuple[int, ...],
          families: tuple[str, ...] = FAMILIES) -> Iterator[tuple[str, int, str, int]]:
    for family in families:
        for workers in WORKERS:
            for shape in SHAPES:
                for size in sizes:
                    yield family, workers, shape, size


def exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(seconds per replay) on log(revealed per replay)."""
    pts = [(math.log(r), math.log(t)) for r, t in points if r > 0 and t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def fmt_rate(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return ""
    if answer["capped"]:
        return f"> {answer['cap']:g} s/replay"
    return f"{answer['rate'] / 1000:,.0f} k"


def measure(args: argparse.Namespace) -> str:
    sys.path.insert(0, str(HERE))
    from _report import reference_loop

    before_loop = reference_loop()
    with tempfile.TemporaryDirectory(prefix="dreamrsi-bench-") as tmp:
        sides = {"after": Side("after", ROOT / "src")}
        if args.baseline:
            sides["before"] = Side("before", unpack(args.baseline, Path(tmp)))
        results: dict[tuple[str, int, str, int, str], dict[str, Any]] = {}
        try:
            for family, workers, shape, size in cells(tuple(args.sizes), tuple(args.families)):
                for name, side in sides.items():
                    cap = args.cap if name == "before" else 600.0
                    results[family, workers, shape, size, name] = side.ask(
                        shape=shape, size=size, family=family, workers=workers,
                        seconds=args.seconds, repeats=args.repeats if name == "after" else 1,
                        cap=cap)
                row = results[family, workers, shape, size, "after"]
                print(f"{family:10} W={workers:<2} {shape:8} {size:>6}: "
                      f"{fmt_rate(row):>14} ({row['revealed']:.0f} revealed/replay)"
                      + (f"  before {fmt_rate(results[family, workers, shape, size, 'before'])}"
                         if args.baseline else ""), flush=True)
        finally:
            for side in sides.values():
                side.close()
    return table(results, args, before_loop)


def table(results: dict[tuple[str, int, str, int, str], dict[str, Any]],
          args: argparse.Namespace, before_loop: float) -> str:
    from _report import reference_loop

    sizes = tuple(args.sizes)
    names = ["after", "before"] if args.baseline else ["after"]
    head = " | ".join(f"{s:,} nodes" for s in sizes)
    lines = [f"| family | W | tree | {head} | exponent | target |",
             "|---|---:|---|" + "---:|" * len(sizes) + "---:|---|"]
    worst_all = math.inf
    for family in args.families:
        for workers in WORKERS:
            for shape in SHAPES:
                row = []
                points: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
                worst = math.inf
                for size in sizes:
                    after = results[family, workers, shape, size, "after"]
                    cell = fmt_rate(after)
                    worst = min(worst, after["rate"] or 0.0)
                    if args.baseline:
                        cell += f" ({fmt_rate(results[family, workers, shape, size, 'before'])})"
                    row.append(cell)
                    for n in names:
                        a = results[family, workers, shape, size, n]
                        if not a["capped"]:
                            points[n].append((a["revealed"], a["per_replay"]))
                worst_all = min(worst_all, worst)
                slopes = [exponent(points[n]) for n in names]
                slope = " (".join("n/a" if s is None else f"{s:.2f}" for s in slopes)
                slope += ")" if len(slopes) > 1 else ""
                verdict = "PASS" if worst >= TARGET else "FAIL"
                lines.append(f"| {family} | {workers} | {shape} | " + " | ".join(row)
                             + f" | {slope} | {verdict} |")
    note = (f"Reveals per CPU second of one core (k = 1,000), best of {args.repeats} windows of "
            f"{args.seconds} s"
            + (f"; in brackets the same cell on commit {args.baseline} (one window; a replay "
               f"over {args.cap:g} s of CPU is stopped)" if args.baseline else "")
            + ". Trees: `chains` is ten chains of equal length; `bushy-P` has P % of its "
            "attempts opening a branch, the others extending a random leaf (`_shapes.py`); "
            "every family explores the whole tree (`_shapes.family_specs`), K2 = the tree's "
            "size. Exponent: slope of log(CPU seconds per replay) on log(nodes revealed per "
            "replay) over the sizes (1 = linear), before in brackets. Target: >= "
            f"{TARGET:,} reveals/s in every cell. Reference loop (2M iterations of pure "
            f"Python): {before_loop:.3f} s before, {reference_loop():.3f} s after.")
    return "\n".join(lines) + f"\n\n{note}"


#: The peer's pick rules (``_peer_replay.PICKS``) and the family of ours measured beside each.
PEER_FAMILIES = {"fixed": "fixed", "greedy": "greedy", "baseline": "greedy"}


def measure_peer(args: argparse.Namespace) -> str:
    """Our ``fixed`` and ``greedy`` at W = 1 beside the peer's replay, cell by cell."""
    sys.path.insert(0, str(HERE))
    from _peer_replay import unavailable, version
    from _report import reference_loop

    why = unavailable()
    if why:
        return (f"The peer's replay was not measured: {why}. Nothing else is measured by "
                "`--peer`; the other sections are unchanged.")
    before_loop = reference_loop()
    ours = Side("ours", ROOT / "src")
    peer = Side("peer", ROOT / "src", mode="--peer-child")
    rows: list[tuple[str, str, int, dict[str, Any], dict[str, Any] | None]] = []
    try:
        for size in args.sizes:
            over_cap = False
            for family, our_family in PEER_FAMILIES.items():
                for shape in SHAPES:
                    cell = {"shape": shape, "size": size, "workers": 1,
                            "seconds": args.seconds, "repeats": args.repeats}
                    mine = ours.ask(**cell, family=our_family, cap=600.0)
                    theirs = (None if over_cap else
                              peer.ask(**cell, family=family, cap=args.peer_cap))
                    over_cap = over_cap or bool(theirs and theirs["capped"])
                    rows.append((family, shape, size, mine, theirs))
                    print(f"{family:7} {shape:8} {size:>6}: ours {fmt_any_rate(mine):>10} "
                          f"({mine['revealed']:.0f}/replay)  peer "
                          f"{fmt_any_rate(theirs) if theirs else 'not run':>16}", flush=True)
    finally:
        ours.close()
        peer.close()
    return peer_table(rows, args, before_loop, reference_loop(), version())


def fmt_any_rate(answer: dict[str, Any]) -> str:
    """A rate in k from 10,000 up, in units below (the peer's slow cells)."""
    if answer["capped"] or answer["rate"] >= 10_000:
        return fmt_rate(answer)
    return f"{answer['rate']:,.0f}"


def peer_table(rows: list[tuple[str, str, int, dict[str, Any], dict[str, Any] | None]],
               args: argparse.Namespace, before_loop: float, after_loop: float,
               peer_version: str) -> str:
    lines = ["| policy | tree | nodes | ours: reveals/s | ours: revealed/replay | "
             "peer: reveals/s | peer: revealed/replay | peer: steps/s | ours / peer |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for family, shape, size, mine, theirs in rows:
        if theirs is None:
            peer_cells = f"not run (a peer replay of {size:,} nodes exceeded the cap) | | |"
            ratio = ""
        elif theirs["capped"]:
            peer_cells = f"{fmt_any_rate(theirs)} | | |"
            ratio = f"> {mine['rate'] * args.peer_cap / max(1, size):,.0f}x"
        else:
            peer_cells = (f"{fmt_any_rate(theirs)} | {theirs['revealed']:,.0f} | "
                          f"{theirs['steps_rate'] / 1000:,.1f} k |")
            ratio = f"{mine['rate'] / max(theirs['rate'], 1e-9):,.0f}x"
        policy = family if family == PEER_FAMILIES[family] else \
            f"{PEER_FAMILIES[family]} (peer: its {family})"
        lines.append(f"| {policy} | {shape} | {size:,} | {fmt_any_rate(mine)} | "
                     f"{mine['revealed']:,.0f} | {peer_cells} {ratio} |")
    note = (
        f"Peer: Open Dream-RSI {peer_version} (`open_dream_rsi`), its counterfactual rollout "
        "(`core.policygen._simulate_step_rewards`) on our trees converted to its "
        "`DiscoveryTree` (same ids, parents and order; no score = 0.0), with its default "
        "horizon (one step per non-root node). Reveals per CPU second of one core (k = "
        f"1,000), best of {args.repeats} windows of {args.seconds} s (the peer: one window "
        "once a replay takes over a CPU second), each side in its own process, interleaved "
        "cell by cell. A reveal, on both sides: a recorded non-root node made visible to the "
        "policy for the first time. Ours: `replay` at W = 1 with the family's parameters of "
        "`_shapes.family_specs` (at W = 1 our `fixed` keeps asking to refine its first branch"
        " once that branch's recorded chain has ended: selections out of support, nothing "
        "revealed, until the round budget; hence few reveals on bushy trees). The peer's pick"
        " rules (`_peer_replay.py`): `fixed` opens as many branches as the tree holds, then "
        "extends the earliest node never picked; `greedy` the same branches, then the best "
        "node never picked; `its baseline` is the peer's own greedy baseline (the best "
        "visible score every step: it sticks on the first leaf that is best, so it reveals "
        "only the few nodes before that leaf). Steps/s: the peer's decisions per CPU second; "
        "every step shows the policy every visible node again, as a fresh dict, and "
        "recomputes visibility over the whole tree, so one replay costs O(nodes x steps). "
        "Apples to apples in what is counted and on which trees (and, for `fixed` on "
        "`chains`, where both sides reveal the whole tree, in the work done); elsewhere the "
        "two sides reveal different numbers of nodes per replay, so the ratio compares cost "
        "per reveal, and the peer's replay also pays a reward each step while ours keeps "
        "branch statistics. Ratio: ours / peer; a capped peer cell gives a lower bound (ours "
        f"x cap / nodes; cap {args.peer_cap:g} s per replay). Reference loop (2M iterations of"
        f" pure Python): {before_loop:.3f} s before, {after_loop:.3f} s after.")
    return "\n".join(lines) + f"\n\n{note}"


def run_callgrind(args: argparse.Namespace) -> str:
    """Instruction counts per revealed node, before and after, for a fixed set of cells."""
    python = os.path.realpath(sys.executable)
    picked = [{"family": f, "workers": w, "shape": s, "size": args.callgrind_size}
              for f in args.families for w in WORKERS
              for s in args.callgrind_shapes]
    rows = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-cg-") as tmp:
        srcs = {"after": ROOT / "src"}
        if args.baseline:
            srcs["before"] = unpack(args.baseline, Path(tmp))
        counts: dict[str, list[tuple[int, int]]] = {}
        for name, src in srcs.items():
            counts[name] = []
            for cell in picked:
                out = Path(tmp) / f"cg-{name}.out"
                env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
                totals = []
                for reps in (1, 3):
                    run = subprocess.run(
                        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                         python, __file__, "--callgrind-child", json.dumps([cell]), str(reps)],
                        env=env, capture_output=True, text=True, check=True)
                    revealed = json.loads(run.stdout.strip().splitlines()[-1])[0]
                    totals.append(_instructions(run.stderr))
                counts[name].append(((totals[1] - totals[0]) // 2, revealed))
                print(name, cell, counts[name][-1], flush=True)
    head = "| family | W | tree | instructions per reveal | nodes revealed |"
    rows = [head, "|---|---:|---|---:|---:|"]
    for i, cell in enumerate(picked):
        after, revealed = counts["after"][i]
        text = f"{after / max(1, revealed):,.0f}"
        shown = f"{revealed:,}"
        if "before" in counts:
            before, rb = counts["before"][i]
            text += f" ({before / max(1, rb):,.0f}, {before / max(1, after):.1f}x)"
            shown += f" ({rb:,})"
        rows.append(f"| {cell['family']} | {cell['workers']} | {cell['shape']} | {text} | "
                    f"{shown} |")
    note = (f"Instructions (valgrind callgrind, `Ir`) of one replay per cell at "
            f"{args.callgrind_size:,} nodes (three replays less one, halved: tree building and "
            "start-up cancel out), per node revealed"
            + (f"; in brackets commit {args.baseline} and the ratio before/after"
               if args.baseline else "") + ". Deterministic: the same counts on a "
            "busy machine.")
    return "\n".join(rows) + f"\n\n{note}"


def _opcodes_child(cells: list[dict[str, Any]]) -> None:
    """Count each cell's bytecodes (:func:`_count_opcodes`); print them as one JSON line."""
    sys.path.insert(0, str(HERE))
    print(json.dumps([_count_opcodes(cell) for cell in cells]))


def _count_opcodes(cell: dict[str, Any]) -> list[Any]:
    """Replay ``cell`` once untraced (its branch states made), then once counting the bytecodes
    executed: the nodes revealed, the bytecodes, and the five functions that execute most."""
    import collections

    from dreamrsi.core.replay import replay

    tree, policy, plan = _cell_setup(cell)
    fast = throughput_options(replay)
    counts: collections.Counter[str] = collections.Counter()

    def trace(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[f"{Path(code.co_filename).name}:{code.co_name}"] += 1
        return trace

    def once() -> int:
        result = replay(policy, tree, workers=cell["workers"], max_rounds=tree.size, plan=plan,
                        keep_order=False, **fast)
        return int(result.revealed)

    once()
    sys.settrace(trace)
    try:
        revealed = once()
    finally:
        sys.settrace(None)
    return [revealed, sum(counts.values()), counts.most_common(5)]


def run_opcodes(args: argparse.Namespace) -> str:
    """Bytecodes per revealed node, before and after, for the cells ``--callgrind`` replays."""
    picked = [{"family": f, "workers": w, "shape": s, "size": args.callgrind_size}
              for f in args.families for w in WORKERS for s in args.callgrind_shapes]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-ops-") as tmp:
        srcs = {"after": ROOT / "src"}
        if args.baseline:
            srcs["before"] = unpack(args.baseline, Path(tmp))
        counts = {}
        for name, src in srcs.items():
            run = subprocess.run(
                [sys.executable, __file__, "--opcodes-child", json.dumps(picked)],
                env=dict(os.environ, PYTHONPATH=str(src)), capture_output=True, text=True,
                check=True)
            counts[name] = json.loads(run.stdout.strip().splitlines()[-1])
    rows = ["| family | W | tree | bytecodes per reveal | nodes revealed | most bytecodes in |",
            "|---|---:|---|---:|---:|---|"]
    for i, cell in enumerate(picked):
        revealed, total, top = counts["after"][i]
        per = total / max(1, revealed)
        text = f"{per:,.0f}"
        if "before" in counts:
            rb, tb, _ = counts["before"][i]
            text += f" ({tb / max(1, rb):,.0f}, {tb / max(1, rb) / max(1e-9, per):.2f}x)"
        where = ", ".join(f"{name} {n / max(1, revealed):,.0f}" for name, n in top[:3])
        rows.append(f"| {cell['family']} | {cell['workers']} | {cell['shape']} | {text} | "
                    f"{revealed:,} | {where} |")
    note = ("Python bytecodes one replay executes per node it reveals, at "
            f"{args.callgrind_size:,} nodes (`sys.settrace` opcode events, after one untraced "
            "replay of the same cell), "
            "with the three functions that execute most"
            + (f"; in brackets commit {args.baseline} and the ratio before/after"
               if args.baseline else "")
            + ". Deterministic, and the same on a busy machine; a bytecode is not a fixed cost "
            "(a call or an allocation costs more than a jump), so this ranks work, it does not "
            "time it.")
    return "\n".join(rows) + f"\n\n{note}"


def _instructions(stderr: str) -> int:
    for line in stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1].strip())
    raise RuntimeError(f"no instruction count in callgrind's output: {stderr[-500:]}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child()
        return
    if sys.argv[1:2] == ["--peer-child"]:
        sys.path.insert(0, str(HERE))
        from _peer_replay import serve

        serve()
        return
    if sys.argv[1:2] == ["--callgrind-child"]:
        _callgrind_child(json.loads(sys.argv[2]), int(sys.argv[3]))
        return
    if sys.argv[1:2] == ["--opcodes-child"]:
        _opcodes_child(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default="")
    parser.add_argument("--cap", type=float, default=5.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--opcodes", action="store_true",
                        help="count bytecodes per reveal instead (the cells --callgrind replays)")
    parser.add_argument("--callgrind-size", type=int, default=2_000)
    parser.add_argument("--callgrind-shapes", nargs="+", choices=SHAPES,
                        default=["chains", "bushy-30"],
                        help="the trees --callgrind and --opcodes replay (default: chains "
                        "bushy-30)")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES),
                        help="measure these families only (the section is then not written)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--peer", action="store_true")
    parser.add_argument("--peer-cap", type=float, default=30.0)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from _report import write_section

    extra = f" --baseline {args.baseline}" if args.baseline else ""
    if args.peer:
        body = measure_peer(args)
        name, title = "replay-peer", "Replay beside the peer's (Open Dream-RSI), W = 1"
        command = (f"python benchmarks/bench_replay_shapes.py --peer --seconds {args.seconds} "
                   f"--repeats {args.repeats} --peer-cap {args.peer_cap:g} --sizes "
                   + " ".join(map(str, args.sizes)))
    elif args.opcodes or args.callgrind:
        if args.opcodes:
            body, mode = run_opcodes(args), "--opcodes"
            name, title = "replay-opcodes", "Replay bytecode counts"
        else:
            body, mode = run_callgrind(args), "--callgrind"
            name, title = "replay-callgrind", "Replay instruction counts (callgrind)"
        command = (f"python benchmarks/bench_replay_shapes.py {mode} --callgrind-size "
                   f"{args.callgrind_size} --callgrind-shapes "
                   + " ".join(args.callgrind_shapes) + extra)
    else:
        body = measure(args)
        name, title = "replay-shapes", "Replay on any tree shape (W = 1 and 10)"
        command = (f"python benchmarks/bench_replay_shapes.py --seconds {args.seconds} "
                   f"--repeats {args.repeats} --cap {args.cap:g} --sizes "
                   + " ".join(map(str, args.sizes)) + extra)
    print(body)
    if not args.no_write and (args.peer or tuple(args.families) == FAMILIES):
        write_section(name, title, body, command)


if __name__ == "__main__":
    main()
