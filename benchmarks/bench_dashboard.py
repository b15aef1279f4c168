"""The dashboard: what it costs a run writing the same store, and how fast big trees come back.

**Overhead.** A run of a toy task (`dreamrsi run`, the sandboxed proposer and evaluator of
tests/conftest.py, W=2) with the dashboard open and refreshing, against the same run without
it, in interleaved pairs (without, with; then with, without; ...) so a machine getting busier
or quieter weighs on both sides. "Open and refreshing": `dreamrsi serve` on the store, and
CLIENTS clients that each keep the event stream open and, on every change it reports, fetch
what the run page fetches (the runs list, the run, its tree and its curve), as the page does.
The figure is the ratio of the pairs' wall times (target <= 1.05), with its spread.

**Big trees.** A 5,000-node tree (10 branches of 500) and a 100,000-node one (100 branches of
1,000), written through the store: the API's answer times for the run, a page of 5,000 nodes,
one branch, the curve and a node, and, in headless chromium, the time from navigation until
the run page has drawn the 5,000 nodes, and until it has drawn the 100,000-node tree's
branches (its aggregated level) and then one branch's 1,000 nodes.

Usage: python benchmarks/bench_dashboard.py [--pairs 4] [--budget 40] [--clients 3]
    [--skip-overhead] [--skip-trees]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.store.base import TaskRecord  # noqa: E402
from dreamrsi.store.sqlite import SqliteRunStore  # noqa: E402
from dreamrsi.testing.builders import TASK, grid_nodes, make_run  # noqa: E402

EVALUATE = """import json
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}", "metrics": {"v": v}}))
"""
PROPOSE = """import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
v = float(open("value.txt").read()) + random.Random(ctx["seed"]).uniform(-1.0, 2.0)
open("value.txt", "w").write(repr(v))
print("PLAN: a step")
"""


def write_task(folder: Path) -> Path:
    """The toy task: a number in value.txt, a proposer that steps it, an evaluator that
    scores it (both sandboxed as any task's commands)."""
    seed = folder / "seed"
    seed.mkdir(parents=True)
    (seed / "evaluate.py").write_text(EVALUATE)
    (seed / "propose.py").write_text(PROPOSE)
    (seed / "value.txt").write_text("0")
    (folder / "task.toml").write_text(
        'name = "bench-dashboard"\nobjective = "Make the number large."\n'
        'direction = "maximize"\n[workspace]\nseed = "seed"\n[evaluator]\n'
        'command = "python3 evaluate.py"\ntimeout_s = 20\n[proposer]\nkind = "command"\n'
        'command = "python3 propose.py"\ntimeout_s = 20\n[constraints]\n'
        'protected_paths = ["evaluate.py"]\n')
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(store: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dreamrsi", "serve", "--store", str(store),
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/api/version", timeout=2)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the dashboard did not start")


class Client(threading.Thread):
    """A page left open: the event stream, and the run page's fetches on every change."""

    def __init__(self, url: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.fetches = url, stop, 0
        self.changed = threading.Event()

    def run(self) -> None:
        threading.Thread(target=self.listen, daemon=True).start()
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self.stop.is_set():
                if not self.changed.wait(0.2):
                    continue
                self.changed.clear()
                runs = http.get("/api/runs").json()["items"]
                self.fetches += 1
                if runs:
                    run = runs[0]["run_id"]
                    for path in (f"/api/runs/{run}?branch_limit=1", f"/api/runs/{run}/tree",
                                 f"/api/runs/{run}/curve"):
                        http.get(path)
                        self.fetches += 1

    def listen(self) -> None:
        try:
            with httpx.stream("GET", self.url + "/api/events", timeout=None) as stream:
                for line in stream.iter_lines():
                    if self.stop.is_set():
                        return
                    if line.startswith("data: "):
                        self.changed.set()
        except httpx.HTTPError:
            return


def one_run(task: Path, store: Path, budget: int, seed: int) -> tuple[float, float]:
    """The run's wall time and CPU time (its process and every command it ran)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dreamrsi", "run", str(task), "--store", str(store),
                    "--budget", str(budget), "--workers", "2", "--seed", str(seed)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def cpu_of(pid: int) -> float:
    """CPU seconds process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def overhead(pairs: int, budget: int, clients: int, tmp: Path) -> tuple[str, dict[str, float]]:
    task = write_task(tmp / "task")
    rows, ratios, fetched = [], [], 0
    run_cpu = server_cpu = 0.0
    walls_with: list[float] = []
    walls_without: list[float] = []
    for pair in range(pairs):
        order = ("without", "with") if pair % 2 == 0 else ("with", "without")
        walls: dict[str, float] = {}
        for side in order:
            store = tmp / f"store-{pair}-{side}"
            SqliteRunStore.open(store, writer=True).close()  # the dashboard reads a store
            if side == "without":
                walls[side], _ = one_run(task, store, budget, pair)
                continue
            proc, url = serve(store)
            stop = threading.Event()
            readers = [Client(url, stop) for _ in range(clients)]
            for c in readers:
                c.start()
            try:
                served_before = cpu_of(proc.pid)
                walls[side], cpu = one_run(task, store, budget, pair)
                server_cpu += cpu_of(proc.pid) - served_before
                run_cpu += cpu
            finally:
                stop.set()
                for c in readers:
                    c.join(10)
                fetched += sum(c.fetches for c in readers)
                proc.send_signal(signal.SIGINT)
                proc.wait(15)
        walls_with.append(walls["with"])
        walls_without.append(walls["without"])
        ratio = walls["with"] / walls["without"]
        ratios.append(ratio)
        rows.append(f"| {pair + 1} | {' then '.join(order)} | {walls['without']:.2f} | "
                    f"{walls['with']:.2f} | {ratio:.3f} |")
        print(rows[-1], flush=True)
    table = ("| pair | order | without (s) | with the dashboard (s) | ratio |\n"
             "|---|---|---|---|---|\n" + "\n".join(rows))
    figures = {"median": statistics.median(ratios), "lo": min(ratios), "hi": max(ratios),
               "fetches": fetched, "server_cpu": server_cpu, "run_cpu": run_cpu,
               "total": sum(walls_with) / sum(walls_without)}
    return table, figures


def big_store(root: Path, branches: int, depth: int, run_id: str) -> None:
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest,
                                  {"direction": "maximize"}))
        store.create_run(make_run(run_id))
        nodes = grid_nodes(run_id, random.Random(1), branches=branches, depth=depth)
        for i in range(0, len(nodes), 20_000):
            store.add_nodes(nodes[i:i + 20_000])


def timed_get(http: httpx.Client, path: str, repeats: int = 3) -> float:
    """The best of ``repeats`` answers, each computed afresh (a query parameter the route
    ignores makes each a new question to the answers the server shares)."""
    best = float("inf")
    for i in range(repeats):
        started = time.perf_counter()
        res = http.get(path + ("&" if "?" in path else "?") + f"fresh={i}")
        res.raise_for_status()
        best = min(best, time.perf_counter() - started)
    return best


def trees(tmp: Path) -> str:
    rows = []
    for label, branches, depth in (("5,000", 10, 500), ("100,000", 100, 1000)):
        store, run = tmp / f"tree-{branches}", f"t{branches}x{depth}"
        started = time.perf_counter()
        big_store(store, branches, depth, run)
        built = time.perf_counter() - started
        proc, url = serve(store)
        try:
            with httpx.Client(base_url=url, timeout=120) as http:
                api = {
                    "run (overview)": timed_get(http, f"/api/runs/{run}?branch_limit=500"),
                    "tree, 5,000 nodes": timed_get(http, f"/api/runs/{run}/tree?limit=5000"),
                    "tree, 10,000 nodes": timed_get(http, f"/api/runs/{run}/tree?limit=10000"),
                    "tree, one branch": timed_get(http, f"/api/runs/{run}/tree?branch=2"),
                    "curve": timed_get(http, f"/api/runs/{run}/curve"),
                    "node": timed_get(http, f"/api/runs/{run}/nodes/{branches * 7}"),
                }
            drawn = draw_times(url, run, branches, depth)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(15)
        rows.append(f"| {label} | {built:.1f} | " +
                    " | ".join(f"{1000 * v:.0f}" for v in api.values()) + f" | {drawn} |")
        print(rows[-1], flush=True)
    head = ("| nodes | written (s) | run (ms) | tree page of 5,000 (ms) | of 10,000 (ms) | "
            "one branch (ms) | curve (ms) | node (ms) | drawn in chromium, from navigation |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    return head + "\n".join(rows)


def draw_times(url: str, run: str, branches: int, depth: int) -> str:
    chromium = shutil.which("chromium")
    if chromium is None:
        return "(no chromium)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/runs/{run}")
        nodes = 1 + branches * depth
        if nodes <= 20_000:
            page.wait_for_selector(f"svg#tree[data-nodes='{nodes}']", timeout=120_000)
            done = int(page.get_attribute("svg#tree", "data-done-at") or 0)
            text = f"all {nodes:,} nodes: {done} ms"
        else:
            page.wait_for_selector(f"svg#tree[data-branches='{branches}']", timeout=120_000)
            done = round(page.evaluate("() => performance.now()"))
            started = time.perf_counter()
            page.click("svg#tree rect[data-branch='2']")
            page.wait_for_selector(f"svg#tree[data-nodes='{depth}']", timeout=120_000)
            opened = 1000 * (time.perf_counter() - started)
            text = f"{branches} branches: {done} ms; a branch's {depth:,} nodes: {opened:.0f} ms"
        browser.close()
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-trees", action="store_true")
    args = parser.parse_args()
    ref_before = reference_loop()
    parts = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-bench-dash-") as name:
        tmp = Path(name)
        if not args.skip_overhead:
            table, f = overhead(args.pairs, args.budget, args.clients, tmp)
            parts.append(
                f"**A run with the dashboard open and refreshing costs {f['median']:.3f}x the "
                f"wall time of the same run without it** (median of {args.pairs} interleaved "
                f"pairs; spread {f['lo']:.3f} to {f['hi']:.3f}; target <= 1.05). "
                f"The ratio of the pairs' summed wall times: {f['total']:.3f}. "
                f"{args.budget} attempts a run, W=2; {args.clients} clients made "
                f"{f['fetches']:.0f} requests in all. What does not depend on the machine's "
                f"load: the server used {f['server_cpu']:.2f} s of CPU while the runs it "
                f"watched used {f['run_cpu']:.2f} s "
                f"({100 * f['server_cpu'] / max(f['run_cpu'], 1e-9):.1f}%), at nice 10.\n\n"
                f"{table}")
        if not args.skip_trees:
            parts.append("Big trees: the API's answer times (best of 3, each computed afresh, "
                         "on loopback) and the run page's drawing in headless chromium "
                         "(first visit).\n\n" + trees(tmp))
    ref_after = reference_loop()
    parts.append(f"Reference loop: {ref_before:.3f} s before, {ref_after:.3f} s after "
                 f"(load: {os.getloadavg()[0]:.1f}).")
    body = "\n\n".join(parts)
    print(body)
    command = "python benchmarks/bench_dashboard.py " + " ".join(sys.argv[1:])
    write_section("dashboard", "The dashboard: its cost to a run, and big trees", body,
                  command.strip())
    print(json.dumps({"written": "BENCHMARKS.md"}))


if __name__ == "__main__":
    main()
