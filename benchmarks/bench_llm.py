"""Model calls: the client's overhead per call, and worker time idle while rounds wait.

1. **Client overhead.** A loopback OpenAI-compatible server (tests/agents/fake_openai.py, in
   a process of its own so that it does not share the benchmark's interpreter lock) answers
   every chat call at once with the same SEARCH/REPLACE answer. The same prompt (a real one,
   built by the ``llm`` proposer's templates from the toy task's files) is sent N times over W
   threads by dreamrsi's ``ModelClient.chat`` and by the bare ``openai`` SDK
   (``chat.completions.create``, no retries); the two loops alternate (ABBA) and each call's
   wall time is kept. The figure is the ratio of the loops' total wall times at each W.
   Target: <= 1.3.
2. **The whole run.** A real run of the toy ``llm`` task (bubblewrap required, W attempts in
   every round) against the bare SDK making as many calls at the same concurrency, the model
   answering after a fixed latency (1 s) in both: what a run adds around its calls.
3. **Idle workers.** A real run of the toy ``llm`` task (bubblewrap required) at W = 4 and 8,
   whose policy keeps W attempts in every round, against a server that sleeps a latency drawn
   uniformly from [0.2, 3] s (seeded) before answering. Rounds wait for their slowest attempt;
   the share of worker time idle in a round is 1 - (sum of its attempts' wall times) / (W x the
   round's wall time), and the part the model's spread alone explains is 1 - (sum of the
   latencies) / (W x the slowest latency).

Usage: python benchmarks/bench_llm.py [--calls 100] [--repeats 8] [--rounds 4] [--latency 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import openai  # noqa: E402
from tests.agents.conftest import KEY, improve, write_llm_task  # noqa: E402
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen  # noqa: E402

from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.agents.client import ModelClient  # noqa: E402
from dreamrsi.agents.files import editable_files  # noqa: E402
from dreamrsi.agents.prompts import load_prompts, prompt_values  # noqa: E402
from dreamrsi.core.model import Node  # noqa: E402
from dreamrsi.engine import RunConfig, start_run  # noqa: E402
from dreamrsi.policies.registry import parse_spec  # noqa: E402
from dreamrsi.store.sqlite import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import load_task  # noqa: E402

WORKERS = (1, 4, 8)
ANSWER = ("PLAN: return 2.0 instead of 1.0\n\ninitial_program.py\n<<<<<<< SEARCH\n"
          "    return 1.0\n=======\n    return 2.0\n>>>>>>> REPLACE\n")
SERVER = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from tests.agents.fake_openai import FakeOpenAI, Reply
with FakeOpenAI([Reply.text({ANSWER!r})]) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


# -- 1. client overhead --------------------------------------------------------------------


def prompt(task_dir: Path) -> list[dict[str, str]]:
    """The first attempt's messages, as the ``llm`` proposer builds them."""
    task = load_task(task_dir)
    files, notes = editable_files(task_dir / "seed", (), task.constraints.protected_paths)
    context = {"task": {"name": task.name, "objective": task.objective,
                        "direction": "maximize"},
               "parent": {"score": 1.0, "status": "ok", "feedback": "value() returned 1.0"},
               "ancestors": [], "budget": {"attempts_left": 10}, "seed": 1}
    values = prompt_values(context, files, notes, "diff")
    return load_prompts(task_dir, None).messages(values)


def timed_loop(call: Callable[[], object], calls: int, workers: int) -> tuple[float, list[float]]:
    """Run ``call`` ``calls`` times over ``workers`` threads: total wall, each call's wall."""
    times: list[float] = []
    lock = threading.Lock()

    def one(_: int) -> None:
        started = time.perf_counter()
        call()
        took = time.perf_counter() - started
        with lock:
            times.append(took)

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(calls)))
    return time.perf_counter() - started, times


def client_overhead(task_dir: Path, base_url: str, calls: int, repeats: int,
                    workers: int) -> dict[str, float]:
    messages = prompt(task_dir)
    settings = load_task(task_dir).proposer.llm
    assert settings is not None
    ours = ModelClient(settings, environ={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": base_url})
    bare = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0,
                         timeout=settings.call_timeout_s)

    def call_ours() -> None:
        result = ours.chat(messages, random.Random(1), deadline=time.monotonic() + 60)
        if result.answer != ANSWER:
            raise SystemExit(f"ModelClient got no answer: {result.error}")

    def call_bare() -> None:
        done = bare.chat.completions.create(
            model="fake-small", messages=messages,  # type: ignore[arg-type]
            temperature=settings.temperature, max_tokens=settings.max_tokens)
        if done.choices[0].message.content != ANSWER:
            raise SystemExit("the bare SDK got no answer")

    timed_loop(call_ours, 20, workers)  # warm both connection pools
    timed_loop(call_bare, 20, workers)
    walls = {"ours": 0.0, "bare": 0.0}
    per_call: dict[str, list[float]] = {"ours": [], "bare": []}
    ratios = []
    cpu = {"ours": 0.0, "bare": 0.0}
    for _ in range(repeats):
        repeat = {"ours": 0.0, "bare": 0.0}
        for name in ("ours", "bare", "bare", "ours"):
            cpu_before = time.process_time()
            wall, times = timed_loop(call_ours if name == "ours" else call_bare,
                                     calls // 2, workers)
            cpu[name] += time.process_time() - cpu_before
            repeat[name] += wall
            per_call[name] += times
        ratios.append(repeat["ours"] / repeat["bare"])
        walls = {k: walls[k] + repeat[k] for k in walls}
    ours.close()
    bare.close()
    out = {"ratio": walls["ours"] / walls["bare"], "ratio_median": statistics.median(ratios),
           "ratio_low": min(ratios), "ratio_high": max(ratios)}
    for name in ("ours", "bare"):
        ms = sorted(t * 1000 for t in per_call[name])
        out[f"{name}_p50"] = statistics.median(ms)
        out[f"{name}_p99"] = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
        out[f"{name}_rate"] = len(ms) / walls[name]
        out[f"{name}_calls"] = len(ms)
        out[f"{name}_cpu"] = cpu[name] * 1000 / len(ms)
    return out


# -- 2. idle workers -----------------------------------------------------------------------


def live_run(root: Path, name: str, workers: int, rounds: int,
             latency: Callable[[], float]) -> tuple[list[Node], dict[str, int], list[float]]:
    """A real run of the toy task at W (``fixed:branches=W,refine=99``, bubblewrap), each model
    call answered after ``latency()`` seconds: its attempts, each one's model latency (ms),
    and the times it began and ended each round."""
    stamps: list[tuple[str, float]] = []

    def slow(seen: Seen) -> Reply:
        time.sleep(latency())
        return improve(seen)

    def observe(event: str, progress: object, node: Node | None) -> None:
        stamps.append((event, time.monotonic()))

    with FakeOpenAI(responder=slow) as server:
        task = write_llm_task(root / f"task-{name}", server.base_url,
                              proposer="timeout_s = 60\ncall_timeout_s = 30\n")
        policy = parse_spec(f"fixed:branches={workers},refine=99")
        with SqliteRunStore.open(root / f"store-{name}", writer=True) as store:
            summary = start_run(store, load_task(task), RunConfig(
                budget=workers * rounds, workers=workers, policy=policy,
                isolation="required"), observer=observe)
            nodes = store.nodes(summary.run_id)[1:]
            latency_ms = {}
            for row in store.ledger(summary.run_id):
                if row.event.cmd.startswith("model chat"):
                    latency_ms[row.event.node_id or ""] = (row.event.parsed or {})["latency_ms"]
    if len(nodes) != workers * rounds or any(n.status.value != "ok" for n in nodes):
        raise SystemExit(f"the run at W = {workers} did not finish {workers * rounds} ok "
                         "attempts")
    for r in range(1, rounds + 1):
        if sum(n.round == r for n in nodes) != workers:
            raise SystemExit(f"round {r} did not run W = {workers} attempts")
    return nodes, latency_ms, [t for e, t in stamps if e in ("start", "round")]


def idle_share(root: Path, workers: int, rounds: int, seed: int) -> dict[str, float]:
    """A real run at W whose model calls take 0.2 to 3 s; idle shares per round."""
    draws = random.Random(seed)
    lock = threading.Lock()

    def latency() -> float:
        with lock:
            return draws.uniform(0.2, 3.0)

    nodes, latency_ms, marks = live_run(root, f"idle{workers}", workers, rounds, latency)
    shares, model_shares = [], []
    for r in range(1, len(marks)):
        batch = [n for n in nodes if n.round == r]
        wall_ms = (marks[r] - marks[r - 1]) * 1000
        shares.append(1 - sum(n.cost.wall_ms for n in batch) / (workers * wall_ms))
        lat = [latency_ms[n.node_id] for n in batch]
        model_shares.append(1 - sum(lat) / (workers * max(lat)))
    return {"rounds": len(shares), "idle": statistics.mean(shares),
            "idle_min": min(shares), "idle_max": max(shares),
            "model_idle": statistics.mean(model_shares),
            "attempt_s": statistics.mean(n.cost.wall_ms for n in nodes) / 1000}


def run_against_bare(root: Path, workers: int, rounds: int, seconds: float) -> dict[str, float]:
    """A whole run (prompt, call, edits, commit, sandboxed evaluation, store) against the bare
    SDK making as many calls at the same concurrency, the model answering after ``seconds``."""
    nodes, _, marks = live_run(root, f"whole{workers}", workers, rounds, lambda: seconds)
    run_s = marks[-1] - marks[0]

    def slow(seen: Seen) -> Reply:
        time.sleep(seconds)
        return Reply.text(ANSWER)

    with FakeOpenAI(responder=slow) as server:
        task = write_llm_task(root / f"bare{workers}", server.base_url)
        messages = prompt(task)
        bare = openai.OpenAI(api_key=KEY, base_url=server.base_url, max_retries=0, timeout=60)

        def call() -> None:
            bare.chat.completions.create(model="fake-small", messages=messages,  # type: ignore[arg-type]
                                         temperature=0.7, max_tokens=4096)

        bare_s, _ = timed_loop(call, len(nodes), workers)
        bare.close()
    return {"run_s": run_s, "bare_s": bare_s, "ratio": run_s / bare_s,
            "attempts": len(nodes)}


# -- report --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100,
                        help="calls per loop, W and repeat (in two halves, ABBA)")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each real run")
    parser.add_argument("--latency", type=float, default=1.0,
                        help="seconds the model takes in the whole-run comparison")
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = KEY
    ref = reference_loop()
    lines = ["| W | dreamrsi client: ms per call p50 / p99 | bare SDK: ms per call p50 / p99 "
             "| overhead per call (p50 difference, ms) | CPU ms per call dreamrsi / bare "
             "| calls/s dreamrsi / bare "
             "| ratio (wall, dreamrsi / bare): all calls | median of the repeats (range) "
             "| target |",
             "|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            base_url = (server.stdout.readline() if server.stdout else "").strip()
            task_dir = write_llm_task(root / "task", base_url)
            prompt_chars = len(json.dumps(prompt(task_dir)))
            for w in WORKERS:
                o = client_overhead(task_dir, base_url, args.calls, args.repeats, w)
                print(f"W={w}: ours p50 {o['ours_p50']:.2f} ms p99 {o['ours_p99']:.2f} ms, "
                      f"bare p50 {o['bare_p50']:.2f} ms p99 {o['bare_p99']:.2f} ms, "
                      f"ratio {o['ratio']:.3f}, median {o['ratio_median']:.3f}", flush=True)
                verdict = "PASS" if o["ratio_median"] <= 1.3 else "FAIL"
                lines.append(
                    f"| W={w} | {o['ours_p50']:.2f} / {o['ours_p99']:.2f} | {o['bare_p50']:.2f} / "
                    f"{o['bare_p99']:.2f} | {o['ours_p50'] - o['bare_p50']:+.2f} "
                    f"| {o['ours_cpu']:.2f} / {o['bare_cpu']:.2f} "
                    f"| {o['ours_rate']:.0f} / {o['bare_rate']:.0f} "
                    f"| {o['ratio']:.2f} | **{o['ratio_median']:.2f}** "
                    f"({o['ratio_low']:.2f}-{o['ratio_high']:.2f}) "
                    f"| client ratio <= 1.3: {verdict} |")
        finally:
            if server.stdin:
                server.stdin.close()
            server.wait(timeout=30)
        idle_lines = ["| W | rounds | worker time idle per round: mean (min-max) | idle the "
                      "model's spread alone explains | mean attempt wall (s) |",
                      "|---|---|---|---|---|"]
        whole_lines = ["| W | attempts | dreamrsi run (s) | bare SDK loop (s) | ratio | target |",
                       "|---|---|---|---|---|---|"]
        for w in WORKERS:
            r = run_against_bare(root, w, args.rounds, args.latency)
            print(f"W={w}: run {r['run_s']:.2f} s, bare {r['bare_s']:.2f} s, "
                  f"ratio {r['ratio']:.3f}", flush=True)
            verdict = "PASS" if r["ratio"] <= 1.3 else "FAIL"
            whole_lines.append(f"| W={w} | {r['attempts']} | {r['run_s']:.2f} | "
                               f"{r['bare_s']:.2f} | **{r['ratio']:.2f}** "
                               f"| run ratio <= 1.3: {verdict} |")
        for w in (4, 8):
            i = idle_share(root, w, args.rounds, seed=w)
            print(f"W={w}: idle {i['idle']:.1%} (model spread {i['model_idle']:.1%})",
                  flush=True)
            idle_lines.append(f"| {w} | {i['rounds']} | **{i['idle']:.0%}** "
                              f"({i['idle_min']:.0%}-{i['idle_max']:.0%}) | "
                              f"{i['model_idle']:.0%} | {i['attempt_s']:.2f} |")
    body = f"""\
Reference loop: {ref:.2f} s (a busy machine: other jobs shared its CPUs). Per W,
{args.calls // 2 * 2 * args.repeats} calls per loop, in {args.repeats} ABBA repeats of
{args.calls // 2} calls per segment, after 20 warm-up calls each; every call carries the same
{prompt_chars:,}-character prompt (the toy `llm` task's first) and gets the same answer from a
loopback server in its own process. The dreamrsi client runs each call on a watchdog thread (the
hard deadline and the cancel); the bare loop calls the SDK in the worker thread. Each repeat
(ABBA) gives a ratio; their median resists the bursts of other jobs better than the total, but
on a machine this busy the wall-time ratio still moves from run to run; the CPU time this
process spends per call (the SDK's own work included, the server's not) is the steadier
measure of what the client adds. Target for the ratio: <= 1.3.

{chr(10).join(lines)}

The whole run against the bare loop: a real run of the toy `llm` task (bubblewrap,
`fixed:branches=W,refine=99`, {args.rounds} rounds of W attempts, timed from its first decision
to its last round's end) against the bare SDK making as many calls with W threads, the server
answering each call after {args.latency:g} s in both. The run adds, per attempt, the prompt, the
edits, a git commit, the evaluator in bubblewrap (a Python subprocess) and the store.

{chr(10).join(whole_lines)}

Rounds that wait for their slowest attempt: a real run of the toy `llm` task (bubblewrap,
`fixed:branches=W,refine=99`: {args.rounds} rounds of W attempts, the first off the root), the
server sleeping a seeded uniform 0.2-3 s before each answer. Idle = 1 - (sum of the round's
attempt wall times) / (W x round wall time).

{chr(10).join(idle_lines)}

docs/dreaming.md ("Rounds and slow model calls") says what an asynchronous mode would change.
"""
    write_section("llm", "Model calls: client overhead and idle workers", body,
                  "python benchmarks/bench_llm.py")
    print(body)


if __name__ == "__main__":
    main()
