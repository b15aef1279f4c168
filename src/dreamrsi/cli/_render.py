"""Rendering of the CLI's outputs: progress, summaries, trees and tables.

The reading commands (``status``, ``show``, ``best``, ``policies``, ``tasks``, ``ledger show``)
draw their tables with :mod:`dreamrsi.cli._table` (plain text drawn as Rich draws it, without
Rich's cost); the others print through Rich, imported when they do.

Text that comes from outside (plans, feedback, metrics, commands, policy labels, reasons) goes
through :func:`_v` into a plain table, and through :func:`_e` into Rich: a model's plan or a
candidate's feedback may hold terminal control sequences (clear the screen, set the title,
reset the terminal), which are shown as ``\x1b`` and the like instead; and Rich would read
``[...]`` in it as markup, where a stray ``[/]`` would crash.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dreamrsi.cli._shared import visible
from dreamrsi.cli._table import DIM, Column, TextTable, output_shape, panel, wrap
from dreamrsi.core.model import Direction

if TYPE_CHECKING:
    from rich.console import Console

    from dreamrsi.core.model import Node
    from dreamrsi.engine import CheckReport, RunProgress
    from dreamrsi.store.ledger import ChainHead, VerifyReport

def _e(value: object) -> str:
    """``value`` as text that Rich prints as it is (no markup, no control characters)."""
    from rich.markup import escape

    return escape(visible(str(value)))


def _v(value: object) -> str:
    """``value`` as text for a plain table (no control characters)."""
    return visible(str(value))


def _rich_table(**settings: Any) -> Any:
    """A Rich table (Rich is imported by the commands that print one)."""
    from rich.table import Table

    return Table(**settings)


def _line(text: str) -> None:
    """Print ``text`` wrapped at the output's width, as Rich prints a plain line."""
    width, _ = output_shape()
    sys.stdout.write("".join(f"{line}\n" for line in wrap(text, width)))


def _fmt(score: float | None) -> str:
    return "-" if score is None else f"{score:.10g}"


def money(usd: float) -> str:
    """An amount of money: cents from a dollar up, down to millionths below (``$0.50``,
    ``$0.00036``), a tinier one in scientific notation."""
    if usd >= 1:
        return f"${usd:,.2f}"
    if usd <= 0:
        return "$0"
    if usd < 1e-6:
        return f"${usd:.1e}"
    whole, frac = f"{usd:.6f}".rstrip("0").split(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def spend(tokens_in: int, tokens_out: int, usd: float) -> str:
    """Tokens in and out and money in a few words ("-" when nothing was spent)."""
    if not (tokens_in or tokens_out or usd):
        return "-"
    return f"{tokens_in:,} in / {tokens_out:,} out, {money(usd)}"


def one_line(text: str | None, most: int = 80) -> str:
    """``text``'s first line, cut to ``most`` characters with an ellipsis."""
    line = (text or "").strip().split("\n", 1)[0]
    return line if len(line) <= most else line[:most - 1] + "…"


class RunProgressBar:
    """A live progress bar; also the engine's observer (call it with progress events).

    Below the bar, a line with what the run spent (tokens and money, once there are any) and
    one with the last failure (status and the first line of its reason)."""

    def __init__(self, console: Console, budget: int | None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.text import Text

        lines: list[str] = []

        class _Progress(Progress):
            def get_renderables(self) -> Any:
                yield self.make_tasks_table(self.tasks)
                for line in lines:
                    yield Text(line, no_wrap=True, overflow="ellipsis")

        self._lines = lines
        self._progress = _Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("best {task.fields[best]}"), TextColumn("{task.fields[rate]}/s"),
            TextColumn("{task.fields[bad]}"), TimeElapsedColumn(), console=console,
            transient=False)
        self._task = self._progress.add_task("starting", total=budget, best="-", rate="0.00",
                                             bad="")
        self._last = ""

    def __enter__(self) -> RunProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, event: str, progress: RunProgress, node: Node | None) -> None:
        best = "-"
        if progress.best is not None:
            best = f"{_fmt(progress.best.raw_score)} ({progress.best.node_id})"
        rate = progress.attempts / progress.elapsed_s if progress.elapsed_s > 0 else 0.0
        counts = progress.by_status
        bad = " ".join(f"{k} {counts[k]}" for k in ("invalid", "error", "timeout", "lost")
                       if counts.get(k))
        if node is not None and (node.status.value != "ok" or not node.valid):
            self._last = visible(f"last {node.status.value} ({node.node_id}): "
                                 f"{one_line(node.feedback, 200)}")
        c = progress.cost
        self._lines[:] = [line for line in (
            f"spent {spend(c.tokens_in, c.tokens_out, c.money_usd)}"
            if c.tokens or c.money_usd else "", self._last) if line]
        self._progress.update(self._task, completed=progress.attempts,
                              description=f"{progress.task_name} {progress.run_id}",
                              best=best, rate=f"{rate:.2f}", bad=bad)


def summary_table(console: Console, s: Mapping[str, Any]) -> None:
    """The end-of-run summary."""
    table = _rich_table(title=_e(f"run {s['run_id']} ({s['task']})"), show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("status", _e(f"{s['status']}: {s['stop_reason'] or ''}"))
    table.add_row("policy", _e(s["policy"]))
    table.add_row("best score", f"{_fmt(s['best_score'])} ({s['direction']})"
                  + survival_note(s.get("survival")))
    table.add_row("best node", s["best_node"] or "-")
    table.add_row("attempts", str(s["attempts"]))
    table.add_row("by status", ", ".join(f"{k} {v}" for k, v in s["counts"].items()))
    table.add_row("wall time", f"{s['elapsed_s']:.1f} s (CPU of commands {s['cpu_s']:.1f} s)")
    table.add_row("tokens, money", spend(s["tokens_in"], s["tokens_out"], s["money_usd"]))
    for m in s.get("models") or ():
        table.add_row(_e(f"model {m['model'] or '?'}"), _model_line(m))
    console.print(table)


def _model_line(m: Mapping[str, Any]) -> str:
    return (f"{m['calls']} calls ({m['answered']} answered), "
            f"{spend(m['tokens_in'], m['tokens_out'], m['money_usd'])}")


def runs_table(runs: Sequence[Mapping[str, Any]]) -> None:
    """``dreamrsi status``."""
    if not runs:
        sys.stdout.write("no runs yet\n")
        return
    # The spend column only where some run spent something: a command proposer's runs have
    # nothing to show there, and the table has to fit 80 columns.
    spent = any(r["tokens_in"] or r["tokens_out"] or r["money_usd"] for r in runs)
    columns = [Column("run", wrap=False), Column("task", wrap=False),
               Column("state", wrap=False), Column("policy"), Column("attempts"),
               Column("best"), Column("by status")]
    columns += [Column("tokens in / out, money")] if spent else []
    table = TextTable("runs", [*columns, Column("stop reason")])
    for r in runs:
        cells = [_v(r["run_id"]), _v(r["task"]), r["status"], _v(r["policy"]),
                 str(r["attempts"]), _fmt(r["best_score"]) + survival_note(r.get("survival")),
                 ", ".join(f"{k} {v}" for k, v in r["counts"].items())]
        cells += [spend(r["tokens_in"], r["tokens_out"], r["money_usd"])] if spent else []
        table.add_row(*cells, _v(r["stop_reason"] or ""))
    table.print()


BRANCH_ROWS = 10
"""``show`` tables this many branches, best first."""


def tree_view(overview: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], title: str,
              offset: int, page: int | None) -> None:
    """``dreamrsi show``: the tree in numbers, its best branches, then the nodes listed."""
    s, tree = overview["run"], overview["tree"]
    best = "-" if s["best_node"] is None else (f"{_fmt(s['best_score'])} ({_v(s['best_node'])})"
                                               + survival_note(s.get("survival")))
    sys.stdout.write(_v(f"run {s['run_id']} ({s['task']}): {tree['nodes']} nodes, "
                        f"{tree['branches']} branches, depth {tree['depth']}, best ")
                     + best + "\n")
    models = overview.get("models") or ()
    if s["tokens_in"] or s["tokens_out"] or s["money_usd"] or models:
        _line("; ".join([f"spent: {spend(s['tokens_in'], s['tokens_out'], s['money_usd'])}",
                         *(_v(f"{m['model'] or '?'}: ") + _model_line(m) for m in models)]))
    branches = sorted(overview["branches"], key=lambda b: (b["best_score"] is None,
                                                            _rank(b, s["direction"])))
    if branches:
        shown = branches[:BRANCH_ROWS]
        more = (f", {len(shown)} best of {len(branches)}; --depth 1 lists every branch's first "
                "node" if len(branches) > len(shown) else "")
        table = TextTable(f"branches (best first{more})", [
            Column("branch"), Column("first node", wrap=False), Column("nodes"),
            Column("depth"), Column("best"), Column("best node", wrap=False),
            Column("by status")])
        for b in shown:
            table.add_row(str(b["branch"]), _v(b["head"]), str(b["nodes"]), str(b["depth"]),
                          _fmt(b["best_score"]), _v(b["best_node"] or "-"),
                          ", ".join(f"{k} {v}" for k, v in b["counts"].items()))
        table.print()
    nodes_table(rows, title, offset, page)


def nodes_table(rows: Sequence[Mapping[str, Any]], title: str, offset: int,
                page: int | None) -> None:
    """The nodes ``show`` lists, and where the next page starts when one may follow."""
    table = TextTable(_v(f"nodes: {title}"), [
        Column("node", wrap=False), Column("branch"), Column("depth"), Column("round"),
        Column("score"), Column("status"), Column("plan"), Column("reason")])
    for r in rows:
        plan: str | tuple[tuple[str, str], ...] = _v(r["plan"] or "")
        if r["duplicate_of"]:
            plan = ((f"(duplicate of {_v(r['duplicate_of'])})", DIM), (f" {plan}", ""))
        indent = "  " * min(r["depth"], 1) + ("└ " if r["depth"] else "")
        table.add_row(f"{indent}{_v(r['node_id'])}", str(r["branch"] or "-"), str(r["depth"]),
                      str(r["round"]), _fmt(r["score"]), r["status"], plan,
                      _v(one_line(r["reason"]) if r["reason"] else ""))
    table.print()
    if page is not None and len(rows) == page:
        _line(f"more may follow: --offset {offset + page} lists the next {page} (so does "
              f"--after {rows[-1]['node_id']}, which reads only them); --all, --branch K "
              "and --depth D choose other nodes")


def _rank(branch: Mapping[str, Any], direction: str) -> float:
    score: float | None = branch["best_score"]
    if score is None:
        return 0.0
    return -score if direction == "maximize" else score


def survival_note(survival: Mapping[str, Any] | None) -> str:
    """`` survived`` (``failed``, ``could not run``) after a score its latest survival pass
    judged; nothing for a node never checked."""
    if not survival:
        return ""
    return " " + str(survival["verdict"]).replace("_", " ")


def best_panel(info: Mapping[str, Any]) -> None:
    """``dreamrsi best``."""
    lines = [f"node {info['node_id']} (depth {info['depth']}, round {info['round']})",
             f"score {_fmt(info['score'])}" + survival_note(info.get("survival")),
             f"commit {info['commit']}",
             f"plan {info['plan'] or '-'}", f"feedback {info['feedback']}"]
    if info.get("exported_to"):
        lines.append(f"exported to {info['exported_to']}")
    width, _ = output_shape()
    sys.stdout.write(panel("best", _v("\n".join(lines)), width))


def tasks_table(rows: Sequence[Mapping[str, Any]]) -> None:
    """``dreamrsi tasks``."""
    table = TextTable("built-in tasks", [Column("name"), Column("direction"),
                                         Column("objective")])
    for r in rows:
        table.add_row(_v(r["name"]), r["direction"], _v(r["objective"]))
    table.print()


def check_dict(report: CheckReport) -> dict[str, Any]:
    """``dreamrsi task check --json``."""
    ev = report.evaluation
    proposal = report.proposal
    return {"task": report.task.name, "ok": report.ok, "problems": report.problems,
            "status": ev.status.value, "valid": ev.valid, "score": ev.raw_score,
            "feedback": ev.feedback, "metrics": ev.metrics,
            "seconds": round(report.seconds, 3), "isolated": report.result.isolated,
            "digest": report.task.digest, "evaluator_digest": report.task.evaluator_digest,
            "peer": report.task.peer.summary() if report.task.peer else None,
            "endpoint": report.endpoint, "endpoint_problem": report.endpoint_problem,
            "proposal": None if proposal is None else {
                "status": proposal.node.status.value, "failed": proposal.failed,
                "infrastructure": proposal.infrastructure, "plan": proposal.node.plan,
                "valid": proposal.node.valid, "score": proposal.node.raw_score,
                "feedback": proposal.node.feedback, "seconds": round(proposal.seconds, 3)},
            "skipped": list(report.skipped)}


def check_panel(console: Console, report: CheckReport) -> None:
    """``dreamrsi task check``."""
    from rich.panel import Panel

    d = check_dict(report)
    direction = Direction(report.task.direction)
    works = d["status"] in ("ok", "invalid")
    head = "[green]evaluator works[/]" if works else "[red]evaluator failed[/]"
    lines = [f"{head}: status {d['status']}, valid {d['valid']}, score {_fmt(d['score'])} "
             f"({direction.value}), {d['seconds']:.2f} s, isolated {d['isolated']}",
             _e(f"feedback: {d['feedback']}"), _e(f"metrics: {d['metrics']}")]
    if works and not d["valid"]:
        lines.append("[bold red]the seed itself scores invalid[/]: a run would start from a "
                     "program its evaluator rejects")
    if d["endpoint"] is not None:
        good = d["endpoint_problem"] is None
        lines.append(("[green]model endpoint works[/]: " if good
                      else "[red]model endpoint fails[/]: ") + _e(d["endpoint"]))
    if d["proposal"] is not None:
        p = d["proposal"]
        if p["failed"] is None:
            lines.append(f"[green]proposer works[/]: child {p['status']}, valid {p['valid']}, "
                         f"score {_fmt(p['score'])}, {p['seconds']:.2f} s; "
                         + _e(f"plan: {p['plan'] or 'none'}"))
        else:
            lines.append("[red]proposer failed[/]: " + _e(p["failed"]))
    if d["skipped"]:
        lines.append(_e("not checked: " + "; ".join(d["skipped"])))
    if d["peer"]:
        peer = d["peer"]
        lines.append(_e(f"{peer['style']} task: candidate {peer['program']}, evaluator "
                        f"{peer['evaluator_file']} (through dreamrsi's adapter)"))
        lines += [_e(f"note: {note}") for note in peer["notes"]]
    console.print(Panel("\n".join(lines), title=_e(f"task {d['task']}")), highlight=False)


def ledger_table(rows: Sequence[Mapping[str, Any]]) -> None:
    """``dreamrsi ledger show``."""
    table = TextTable("ledger", [Column(c) for c in ("seq", "t", "actor", "cmd", "exit", "ms",
                                                      "admissible", "node", "error")])
    for r in rows:
        table.add_row(str(r["seq"]), r["t"], r["actor"], _v(r["cmd"][:80]), str(r["exit"]),
                      str(r["duration_ms"]), "yes" if r["admissible"] else "no",
                      _v(r["node_id"] or ""), _v(one_line(r.get("error"), 200)))
    table.print()


def head_line(console: Console, chain: str, head: ChainHead) -> None:
    """The head printed after a run or a loop round, with what to do with it."""
    console.print(f"ledger head {head.length} {head.hash}\n  keep it outside the store; "
                  f"`dreamrsi ledger verify {chain} --head {head.length}:{head.hash}` then "
                  "detects a truncated or re-hashed chain", highlight=False, soft_wrap=True)


def verify_text(r: VerifyReport) -> str:
    """``dreamrsi ledger verify``: one line saying what was checked, or what is broken."""
    from rich.markup import escape

    if not r.ok:
        where = f" at row {r.bad_seq}" if r.bad_seq else ""
        where += f" ({r.bad_id})" if r.bad_id else ""
        return (f"[bold red]ledger of {escape(r.chain)} is broken[/]{where}: "
                f"{escape(r.problem or '')}")
    text = (f"ledger of {escape(r.chain)}: {r.rows} rows, chain intact; {r.nodes} nodes match "
            f"their records; {r.blobs} blobs and {r.commits} commits ({r.objects} git objects) "
            "intact")
    if r.anchored:
        text += (f"; {r.anchored} nodes were recorded by the store upgrade to schema 3 "
                 "(vouched for from then on)")
    if r.given_head is not None:
        text += f"; holds the head {r.given_head}"
    return text


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: float) -> str:
    """A count, or a mean of counts over root orders (one decimal when it is not whole)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def dream_table(console: Console, report: Mapping[str, Any]) -> None:
    """``dreamrsi dream``: the candidates, best first, and the decision."""
    table = _rich_table(title=f"dream {report['dream_id']}: {len(report['train_trees'])} training "
                  f"trees, {len(report['holdout_trees'])} holdout, {report['trials']} trials, "
                  f"{report['seconds']:.1f} s")
    split = report.get("select_on", "train")
    for col in ("policy", "version", "V train", "V holdout", f"vs incumbent on {split} (95% CI)",
                "attempts", "rounds", "out of support"):
        table.add_column(col, overflow="fold")
    rows = sorted(report["candidates"], key=lambda c: -c[split]["value"])
    for c in rows:
        low, high = c["interval"]
        interval = "[one tree]" if low is None else f"[{low:+.4f}, {high:+.4f}]"
        if "quality_gain" in c:  # the interval is on the quality gain, the gated quantity
            interval = f"quality {c['quality_gain']:+.4f} {interval}"
        table.add_row(_e(c["policy"]), c["version_id"], _num(c["train"]["value"]),
                      _num(c["holdout"]["value"]), f"{c['difference']:+.4f} {interval}",
                      f"{c['train']['attempts']:.1f}", f"{c['train']['rounds']:.1f}",
                      f"{100 * c['train']['out_of_support_share']:.0f}%")
    console.print(table)
    verdict = "promoted" if report["promoted"] else "kept the incumbent"
    note = " (one tree: holdout equals training)" if report["holdout_is_train"] else ""
    console.print(_e(f"{verdict}: {report['selected']} — {report['reason']}{note}"),
                  highlight=False)
    if report.get("crossval"):
        picks = ", ".join(report["crossval"]["picks"]) or "none (one tree)"
        console.print(_e(f"cross-validation reruns selected: {picks}"), highlight=False)
    if report.get("code"):
        code_revisions(console, report["code"])


def code_revisions(console: Console, code: Mapping[str, Any]) -> None:
    """The programs a model wrote in a dream, and what became of each."""
    table = _rich_table(title=f"policy programs: {code['scored']} scored, {code['rejected']} "
                  f"rejected; {code['tokens_in']} + {code['tokens_out']} tokens, "
                  f"${code['money_usd']:.4f}")
    for col in ("revision", "status", "program", "mean V train", "reason"):
        table.add_column(col, overflow="fold")
    for r in code["revisions"]:
        status = r["status"] if r["kind"] is None else f"{r['status']} ({r['kind']})"
        table.add_row(str(r["number"]), status, (r["digest"] or "-")[:19],
                      _num(r["train_mean"]) if r["train_mean"] is not None else "-",
                      _e(r["reason"]))
    console.print(table)


def loop_round(console: Console, r: Any, head: ChainHead | None = None) -> None:
    """One line block per loop round (with its run's ledger head, if given)."""
    console.print(f"[bold]round {r.round}[/] "
                  + _e(f"run {r.run_id}: policy {r.policy} — {r.why}"), highlight=False)
    console.print(f"  attempts {r.attempts} (cumulative {r.cumulative_attempts}), round best "
                  f"{_fmt(r.round_best)}, best so far {_fmt(r.best_so_far)}", highlight=False)
    if r.dream:
        d = r.dream
        console.print(_e(f"  dream {d['dream_id']}: {d['trials']} trials in {d['seconds']} s -> "
                         f"{'promote' if d['promoted'] else 'keep'} {d['selected']}"),
                      highlight=False)
    if getattr(r, "survival", None):
        v = r.survival
        console.print(_e(f"  survival pass {v['pass_id']} on {v['node_id']}: "
                         f"{v['verdict'].replace('_', ' ')}"
                         + (f" ({', '.join(v['failing'])})" if v.get("failing") else "")),
                      highlight=False)
    if head is not None:
        console.print(f"  ledger head {head.length} {head.hash}", highlight=False,
                      soft_wrap=True)


def loop_summary(console: Console, report: Any) -> None:
    """The end of a loop."""
    table = _rich_table(title=_e(f"loop {report.loop_id} ({report.task}, arm {report.arm})"))
    for col in ("round", "run", "policy", "attempts", "round best", "best so far"):
        table.add_column(col, overflow="fold")
    for r in report.rounds:
        table.add_row(str(r.round), _e(r.run_id), _e(r.policy), str(r.attempts),
                      _fmt(r.round_best), _fmt(r.best_so_far))
    console.print(table)
    gated = any(getattr(r, "survival", None) for r in report.rounds)
    what = "best surviving" if gated else "best"
    if gated and report.best is None:
        console.print("no round's best node survived: the loop has no result", highlight=False)
    console.print(_e(f"{what} {_fmt(report.best)} in {report.seconds:.0f} s ({report.stop})"),
                  highlight=False)


def policies_table(task: str, rows: Sequence[Mapping[str, Any]], deployed: str,
                   source: str) -> None:
    """``dreamrsi policies``."""
    table = TextTable(_v(f"policy versions of {task} (deployed: {deployed}, from {source})"),
                      [Column(c) for c in ("version", "policy", "parent", "dream",
                                           "mean V by dream (train / holdout)")])
    for r in rows:
        scores = "; ".join(f"{d}: {_num(v.get('train'))} / {_num(v.get('holdout'))}"
                           for d, v in r["scores"].items())
        table.add_row(r["version_id"], _v(r["policy"]), r["parent_id"] or "-",
                      r["dream_id"] or "-", scores or "-")
    table.print()


def replay_table(console: Console, data: Mapping[str, Any]) -> None:
    """``dreamrsi replay``."""
    orders = max((t["orders"] for t in data["trees"]), default=1)
    title = f"replay of {_e(data['policy'])}"
    if orders > 1:
        title += f" (means over up to {orders} root orders; stop: the recorded order's)"
    charged = bool(data.get("charge_misses"))
    if charged:
        title += "; misses charged: attempts online = revealed + out of support"
    table = _rich_table(title=title)
    for col in ("tree", "size", "V", "quality", "revealed" if charged else "attempts",
                *(("attempts online",) if charged else ()), "rounds", "parallelism",
                "out of support", "stop"):
        table.add_column(col)
    for t in data["trees"]:
        online = (_count(t["attempts"] + t["out_of_support"]),) if charged else ()
        table.add_row(_e(t["tree_id"]), str(t["tree_size"]), _num(t["value"]),
                      _num(t["quality"]), _count(t["attempts"]), *online, _count(t["rounds"]),
                      f"{t['parallelism']:.2f}", _count(t["out_of_support"]), _e(t["stop"]))
    m = data["mean"]
    trees = data["trees"]
    online_mean = ((f"{sum(t['attempts'] + t['out_of_support'] for t in trees) / len(trees):.1f}",)
                   if charged and trees else ("",) if charged else ())
    table.add_row("mean", "", _num(m["value"]), _num(m["quality"]), f"{m['attempts']:.1f}",
                  *online_mean, f"{m['rounds']:.1f}", f"{m['parallelism']:.2f}",
                  f"{100 * m['out_of_support_share']:.0f}%", "")
    console.print(table)
