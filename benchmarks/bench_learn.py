"""Learning over nights: `dreamrsi learn` on the test agent and its golden sets.

For each golden set of ``dreamrsi.testing.knowledge_sets.SETS`` (one rule missing; five rules
missing; the five with a noisy model and wrong feedback, at two ``min_gain``; an agent that
answers with tools, one of them wrong) and each arm (the scripted model
distiller, the statistical distiller), in a fresh store and config repository: N nights, each

1. the day's traces: the agent runs (real sandbox) on the train goldens from the config's HEAD
   and each answer (with the tool calls the agent wrote beside it) becomes a trace with the
   eval's verdict (wrong a set's share of the time),
   imported and accepted;
2. ``learn`` distills the accepted traces (all days'), gates the proposals and commits what
   passed as a branch;
3. the branch is merged (fast-forward: the person's approval), and the agent runs on every
   held-out golden of the merged HEAD.

Both the agent's model and the distiller are scripted models on a loopback server; the
figures check what the gate keeps and rejects, how lean the pool stays and what a night costs,
not any real model. Tokens are the distiller's, estimated by the server as characters / 4.

Usage: python benchmarks/bench_learn.py [--sets NAME ...] [--arms model statistical]
                                        [--nights 4] [--seeds 0 1 2] [--no-section]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen  # noqa: E402

from _report import write_section  # noqa: E402
from dreamrsi.agents.client import ModelClient  # noqa: E402
from dreamrsi.knowledge.check import check_goldens  # noqa: E402
from dreamrsi.knowledge.config_repo import load_config  # noqa: E402
from dreamrsi.knowledge.goldens import Golden, add_goldens, golden_from, list_goldens  # noqa: E402
from dreamrsi.knowledge.learn import learn  # noqa: E402
from dreamrsi.knowledge.runner import run_agent  # noqa: E402
from dreamrsi.knowledge.traces import import_files, judge  # noqa: E402
from dreamrsi.store.sqlite import SqliteRunStore  # noqa: E402
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice  # noqa: E402
from dreamrsi.testing.knowledge_agent import make_config_repo  # noqa: E402
from dreamrsi.testing.knowledge_sets import (  # noqa: E402
    FAMILIES,
    SETS,
    GoldenSet,
    answer,
    day_traces,
    decoy_kind,
    distiller_answer,
)
from dreamrsi.testing.knowledge_tools import (  # noqa: E402
    TOOLS_AGENT_SOURCE,
    stops_guessing,
    tool_reply,
)

ARMS = ("model", "statistical")
AGENT_MODEL, DISTILLER = "fake-small", "scripted-distiller"


class Models:
    """The loopback server's two scripted models: the agent's (with the set's noise) and the
    distiller, which counts its calls and estimates tokens as characters / 4."""

    def __init__(self) -> None:
        self.noise, self.rng, self.calls = 0.0, random.Random(0), 0

    def reply(self, seen: Seen) -> Reply:
        body = seen.body or {}
        messages = body.get("messages", [])
        if body.get("model") == DISTILLER:
            text = distiller_answer(messages, self.calls)
            self.calls += 1
            return Reply.text(text, tokens_in=len(seen.user_text()) // 4,
                              tokens_out=len(text) // 4)
        if body.get("tools"):  # the tools set's agent offered its tools
            return Reply.raw(json.dumps(tool_reply(messages, self.rng)))
        return Reply.text(answer(messages, noise=self.noise, rng=self.rng))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                           "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _pass_rate(repo: Path, goldens: list[Golden], models: Models) -> float:
    """The pass rate of the config ``repo`` on ``goldens``, with the model's noise off."""
    noise, models.noise = models.noise, 0.0
    try:
        run = run_agent(load_config(repo), repo, goldens)
    finally:
        models.noise = noise
    if run.error:
        raise RuntimeError(f"the agent failed: {run.error}")
    results = check_goldens(goldens, run.outputs).results
    return sum(1 for r in results if r.passed) / len(results)


def run_set(gset: GoldenSet, arm: str, nights: int, seed: int, root: Path,
            server: FakeOpenAI, models: Models) -> list[dict[str, Any]]:
    """N nights of one set and arm in a fresh store and config repository under ``root``."""
    models.noise, models.rng = gset.noise, random.Random(f"{seed}:{gset.name}:{arm}")
    models.calls = 0
    raw = gset.goldens()
    store = SqliteRunStore.open(root / "store", writer=True)
    add_goldens(store, [golden_from(g, f"golden {n}") for n, g in enumerate(raw)])
    heldout = [g for g in list_goldens(store, split="heldout") if not g.canary]
    train = list_goldens(store, split="train")
    repo = make_config_repo(root / "repo", base_url=server.base_url, model=AGENT_MODEL,
                            rotation=gset.rotation, min_gain=gset.min_gain,
                            extra={"agent.py": TOOLS_AGENT_SOURCE}
                            if "tools" in gset.families else None)
    client = (ModelClient(LlmSettings(models=(ModelChoice(DISTILLER),),
                                      base_url=server.base_url, max_retries=0), environ={})
              if arm == "model" else None)
    rows: list[dict[str, Any]] = []
    before = _pass_rate(repo, heldout, models)
    try:
        for night in range(nights):
            day = run_agent(load_config(repo), repo, train)
            paths = day_traces(root / "traces", raw, day.outputs, day=night, flip=gset.flip,
                               seed=seed, transcripts=day.transcripts)
            for imported in import_files(store, paths):
                judge(store, imported.record.trace_id, "accepted")
            started = time.perf_counter()
            report = learn(store, repo, model=client, night=night)
            wall = time.perf_counter() - started
            if report.branch:
                _git(repo, "merge", "-q", "--ff-only", report.branch)
            after = _pass_rate(repo, heldout, models)
            rows_on_head = [line for line in (repo / "LESSONS.md").read_text().splitlines()
                            if line.strip()]
            data = report.as_dict()
            decoys = [decoy_kind(d.proposal.text) for d in report.gate.decisions if d.accepted]
            rows.append({
                "set": gset.name, "arm": arm, "seed": seed, "night": night,
                "heldout_before": before,
                "heldout_after": after, "part_before": data["baseline"]["heldout_pass_rate"],
                "part_after": data["final"]["heldout_pass_rate"],
                "proposals": data["proposals"], "accepted": data["accepted"],
                "decoys_accepted": [k for k in decoys if k], "rejected": data["rejected"],
                "pool": data["pool_size"], "lesson_rows": len(rows_on_head),
                "rules_on_head": [n for n, f in FAMILIES.items() if f"- {f.rule}" in rows_on_head]
                + (["tools"] if stops_guessing("\n".join(rows_on_head)) else []),
                "tokens_in": data["tokens_in"], "tokens_out": data["tokens_out"],
                "distill_errors": len(data["distill_errors"]), "wall_s": wall})
            print(json.dumps(rows[-1]), flush=True)
            before = after
    finally:
        if client is not None:
            client.close()
        store.close()
    return rows


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def table(rows: list[dict[str, Any]]) -> str:
    """The per-night table of one set and arm."""
    lines = ["| night | held-out pass (all) | gate's part | proposals | accepted | decoys "
             "accepted | rejected by reason | pool | lesson rows | rules on HEAD | tokens in "
             "/ out | learn wall s |", "|---:|---|---|---:|---:|---|---|---:|---:|---|---|---:|"]
    for r in rows:
        rejected = ", ".join(f"{k} {v}" for k, v in sorted(r["rejected"].items())) or "—"
        lines.append(
            f"| {r['night']} | {_pct(r['heldout_before'])} → {_pct(r['heldout_after'])} | "
            f"{_pct(r['part_before'])} → {_pct(r['part_after'])} | {r['proposals']} | "
            f"{r['accepted']} | {', '.join(r['decoys_accepted']) or '—'} | {rejected} | "
            f"{r['pool']} | {r['lesson_rows']} | {', '.join(r['rules_on_head']) or '—'} | "
            f"{r['tokens_in']} / {r['tokens_out']} | {r['wall_s']:.1f} |")
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]]) -> str:
    """One row per set, arm and seed: held-out before night 0 and after the last."""
    lines = ["| set | arm | seed | nights | held-out pass before → after | accepted (decoys) | "
             "rejected by reason (all nights) | lesson rows at the end | tokens in / out |",
             "|---|---|---:|---:|---|---|---|---:|---|"]
    keys = dict.fromkeys((r["set"], r["arm"], r["seed"]) for r in rows)
    for name, arm, seed in keys:
        mine = [r for r in rows if (r["set"], r["arm"], r["seed"]) == (name, arm, seed)]
        rejected: dict[str, int] = {}
        for r in mine:
            for k, v in r["rejected"].items():
                rejected[k] = rejected.get(k, 0) + v
        decoys = sum(len(r["decoys_accepted"]) for r in mine)
        lines.append(
            f"| {name} | {arm} | {seed} | {len(mine)} | {_pct(mine[0]['heldout_before'])} → "
            f"**{_pct(mine[-1]['heldout_after'])}** | {sum(r['accepted'] for r in mine)} "
            f"({decoys}) | {', '.join(f'{k} {v}' for k, v in sorted(rejected.items())) or '—'}"
            f" | {mine[-1]['lesson_rows']} | {sum(r['tokens_in'] for r in mine)} / "
            f"{sum(r['tokens_out'] for r in mine)} |")
    return "\n".join(lines)


def measure(sets: list[str], arms: list[str], nights: int,
            seeds: list[int]) -> list[dict[str, Any]]:
    """Every set, arm and seed, each in folders of its own, against one loopback server."""
    models = Models()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-bench-learn-") as tmp, \
            FakeOpenAI(models=(AGENT_MODEL, DISTILLER), responder=models.reply) as server:
        Path(tmp).chmod(0o755)  # the sandbox reads the config as another user would
        for name in sets:
            for arm in arms:
                for seed in seeds:
                    rows += run_set(SETS[name], arm, nights, seed,
                                    Path(tmp) / f"{name}-{arm}-{seed}", server, models)
    return rows


BODY = """\
A check of the learning loop end to end (real store, real git, the agent in the real sandbox),
not a measurement of any model: the agent's model and the distiller are scripted models on a
loopback server (`dreamrsi.testing.knowledge_sets`). The agent answers each question under
the rules its system prompt (`prompts/system.md` plus `LESSONS.md`) holds. **one-rule**: the
test agent's goldens, one rule missing (ISO dates); **more-rules**: five independent rules
missing (dates, distances in km, capitalised cities, dollar prices, comma lists), each
deciding 2 train and 2 held-out goldens of its own, the held-out goldens dealt into 2 parts
(`heldout_rotation = 2`: a night gates on half of them); **noisy**: the goldens of
more-rules, the agent's model ignoring its whole prompt for a question with probability 0.2
(drawn per question, so one config scores differently run to run) and each trace's verdict
wrong with probability 0.2 (a failure marked passed, a pass marked failed);
**noisy-min-gain**: the same with `min_gain = 0.2` (docs/knowledge.md's advice for a noisy
agent); `min_gain = 0` in the others; **tools**
(`dreamrsi.testing.knowledge_tools`): the agent answers "year the X opened?" with tools it
offers its model (`lookup_date`: right; `guess_date`: wrong, or an error; `check_calendar`:
changes nothing), and writes its tool calls and their results beside each answer; the model
calls `guess_date` on 3 train and 3 held-out subjects and `lookup_date` on the other 3 and 2,
`check_calendar` before `guess_date` with probability 0.7 (a bystander: on some seeds it is
in every failure of the night), and obeys a prompt line that says `do not call` or `call ...
before answering` a tool it names in backquotes. Every set has two canaries and a greeting
under a politeness floor.

A night: the agent runs on the train goldens from the config's HEAD, each answer a trace (with
the agent's tool calls, for tools) and the eval's verdict (`expected 'E', got 'G'`), imported
and accepted; `dreamrsi learn` reads all the accepted traces so far; its branch is merged (the
person approves everything the gate passed). **model**: the scripted distiller knows the five
rules: per group (a task, here a rule's family) it proposes each rule whose failure signature
an `expected/got` pair of the FAILED sessions shows, and on its k-th call adds decoy k mod 6: a
lie (`Answer "capital of France?" with "Lyon".`), the matched rule restricted to the train
subjects it saw fail, a summary (dropped by the distiller as not an instruction), an edit of
`.git/hooks/` (the edit dropped by the distiller, its rule gated), an edit whose `old` text is
not in the file, and `Do not greet the user.` (the floor). **statistical**: the statistical
distiller on the same traces ("bystander" among the decoys: a rule on `check_calendar`).
"held-out pass (all)": every held-out golden, run after the merge with the model's noise off
(what the config learned, not one day's luck); "gate's part": the night's held-out part,
baseline → the accepted state (as the gate saw them, noise included); "pool": the pool's
insights after the night (a lesson enters it when it passes the gate); "lesson rows": rows of
`LESSONS.md` on HEAD after the merge, "rules on HEAD" the families whose rule is one of them
(tools: a row that keeps the model off `guess_date`). Tokens are the distiller's, estimated as
characters / 4. The statistical distiller counts tools, tool errors and roles; the traces of
the first four sets hold a question and an answer only, so it has nothing to count and proposes
nothing there: those rows are the baseline of a night that learns nothing. The tools set's
traces hold the tool calls it counts."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--nights", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--no-section", action="store_true",
                        help="print, do not write BENCHMARKS.md")
    args = parser.parse_args()
    if args.nights < 1:
        parser.error("--nights must be at least 1")
    started = time.perf_counter()
    rows = measure(args.sets, args.arms, args.nights, args.seeds)
    first = args.seeds[0]
    parts = [BODY, f"N = {args.nights} nights, seeds {', '.join(map(str, args.seeds))} "
             f"(the seed draws the noise and the tools model's `check_calendar` calls: one-rule "
             f"and more-rules come out the same for every seed); "
             f"{time.perf_counter() - started:.0f} s in all.", summary(rows),
             f"Night by night, seed {first}:"]
    for name in dict.fromkeys(r["set"] for r in rows):
        for arm in dict.fromkeys(r["arm"] for r in rows):
            mine = [r for r in rows if (r["set"], r["arm"], r["seed"]) == (name, arm, first)]
            if mine:
                parts += [f"**{name}, {arm}**", table(mine)]
    body = "\n\n".join(parts)
    print(body)
    if args.no_section:
        return
    command = (f"python benchmarks/bench_learn.py --sets {' '.join(args.sets)} --arms "
               f"{' '.join(args.arms)} --nights {args.nights} --seeds "
               f"{' '.join(map(str, args.seeds))}")
    write_section("learn-nights", "Learning over nights: the gate, the pool and the tokens "
                  "(scripted models: a harness check)", body, command)


if __name__ == "__main__":
    main()
