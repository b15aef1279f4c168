"""The knowledge commands: ``traces import|list|show|accept|reject`` and
``lessons list|show|history`` (``goldens`` is :mod:`dreamrsi.cli.goldens`).

Each imports its services inside its body: ``--help`` and the reading commands load nothing
heavy (``tests/cli/test_startup.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dreamrsi.cli._shared import fail, guard, print_json, reader, visible
from dreamrsi.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt

if TYPE_CHECKING:
    from dreamrsi.store.knowledge import TraceRecord

traces_app = typer.Typer(help="Import agent traces (redacted, staged) and judge them.",
                         no_args_is_help=True, rich_markup_mode=None)
lessons_app = typer.Typer(help="Read the pool of lessons and its history.",
                          no_args_is_help=True, rich_markup_mode=None)

TraceArg = Annotated[str, typer.Argument(help="Trace id (or a unique prefix of it).")]
ScopeOpt = Annotated[str | None, typer.Option("--scope", help="Only lessons of this scope.")]


def _trace_dict(r: TraceRecord) -> dict[str, Any]:
    return {**r._asdict(), "feedback": dict(r.feedback)}


def _table(title: str, headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    from dreamrsi.cli._table import Column, TextTable

    table = TextTable(title, [Column(h) for h in headers])
    for row in rows:
        table.add_row(*(visible(c) for c in row))
    table.print()


@traces_app.command("import")
def import_traces(
    paths: Annotated[list[Path] | None, typer.Argument(
        show_default=False, help="Trace files.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, jsonl, otel, claude-code or "
                                     "codex.")] = "auto",
    run: Annotated[str | None, typer.Option("--run", help="Import the branches of this run "
                                            "of ours instead.")] = None,
    redact_emails: Annotated[bool, typer.Option("--redact-emails",
                                                help="Redact e-mail addresses too.")] = False,
    store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False,
) -> None:
    """Import agent traces: each is redacted, bounded and stored once, staged; a malformed
    file imports nothing."""

    def body() -> None:
        from dreamrsi.knowledge.traces import import_run, read_traces, store_traces
        from dreamrsi.store import open_store

        if bool(paths) == bool(run):
            fail("give trace files or --run RUN (one of them)")
        items = [] if run else read_traces(paths or [], fmt=fmt, emails=redact_emails)
        with open_store(store, writer=True, holder="traces import") as handle:
            done = (import_run(handle, run, emails=redact_emails) if run else
                    store_traces(handle, items))
        if as_json:
            print_json([{**_trace_dict(i.record), "new": i.new} for i in done])
        else:
            for i in done:
                r = i.record
                if i.new:
                    note = f"; {r.note}" if r.note else ""
                    typer.echo(visible(f"imported {r.trace_id[:12]} {r.source}: {r.steps} "
                                       f"steps, {r.outcome}, staged{note}"))
                else:
                    typer.echo(visible(f"already imported {r.trace_id[:12]} {r.source}"))
        if not any(i.new for i in done):
            fail("already imported: nothing new in " + ", ".join(
                sorted({i.record.trace_id[:12] for i in done})))

    guard(body)


@traces_app.command("list")
def list_traces(
    status: Annotated[str | None, typer.Option(help="staged, accepted or rejected.")] = None,
    store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False,
) -> None:
    """List imported traces, oldest first."""

    def body() -> None:
        from dreamrsi.store.knowledge import check_trace_status

        if status is not None:
            check_trace_status(status)
        with reader(store) as handle:
            records = handle.list_traces(status)
        if as_json:
            print_json([_trace_dict(r) for r in records])
            return
        _table(f"{len(records)} traces", ("id", "format", "status", "outcome", "steps",
                                          "tools", "task", "source"),
               [(r.trace_id[:12], r.source_format, r.status, r.outcome, str(r.steps),
                 str(r.tool_calls), r.task, r.source) for r in records])

    guard(body)


@traces_app.command("show")
def show_trace(trace: TraceArg, store: StoreOpt = DEFAULT_STORE,
               as_json: JsonOpt = False) -> None:
    """Show a trace: its summary, steps and feedback (as stored: redacted)."""

    def body() -> None:
        from dreamrsi.knowledge.traces import load_trajectory
        from dreamrsi.knowledge.trajectory import to_dict

        with reader(store) as handle:
            record, t = load_trajectory(handle, trace)
        if as_json:
            print_json({**_trace_dict(record), "trajectory": to_dict(t)})
            return
        lines = [f"trace {record.trace_id}", f"  {record.source_format} from {record.source}, "
                 f"{record.status}, {record.outcome}; task {record.task or '-'}, session "
                 f"{record.session_id or '-'}"]
        if record.note:
            lines.append(f"  note: {record.note}")
        for k, s in enumerate(t.steps):
            lines.append(f"  [{k}] {s.role}: {s.text[:200]}")
            lines += [f"      -> {c.name}({c.arguments[:120]})"
                      f"{' error' if c.error else ''}: {(c.result or '')[:120]}"
                      for c in s.tool_calls]
        for f in t.feedback:
            where = "whole" if f.step is None else f"step {f.step}"
            verdict = "" if f.passed is None else (" passed" if f.passed else " failed")
            lines.append(f"  feedback ({where}): {f.kind} {f.value:g}{verdict} {f.name} "
                         f"{f.text[:200]}".rstrip())
        typer.echo(visible("\n".join(lines)))

    guard(body)


def _judge(trace: str, status: str, reason: str, store: Path) -> None:
    def body() -> None:
        from dreamrsi.knowledge.traces import judge
        from dreamrsi.store import open_store

        with open_store(store, writer=True, holder=f"traces {status}") as handle:
            record = judge(handle, trace, status, reason=reason)
        typer.echo(f"trace {record.trace_id[:12]} {status}")

    guard(body)


ReasonOpt = Annotated[str, typer.Option("--reason", help="Why, kept in the event.")]


@traces_app.command("accept")
def accept(trace: TraceArg, reason: ReasonOpt = "", store: StoreOpt = DEFAULT_STORE) -> None:
    """Accept a staged trace: learning may read it."""
    _judge(trace, "accepted", reason, store)


@traces_app.command("reject")
def reject(trace: TraceArg, reason: ReasonOpt = "", store: StoreOpt = DEFAULT_STORE) -> None:
    """Reject a trace: learning never reads it."""
    _judge(trace, "rejected", reason, store)


@lessons_app.command("list")
def list_lessons(scope: ScopeOpt = None,
                 everything: Annotated[bool, typer.Option(
                     "--all", help="Archived (pruned) lessons too.")] = False,
                 store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List the pool's lessons, most important first."""

    def body() -> None:
        from dreamrsi.knowledge.reading import lessons_list

        with reader(store) as handle:
            shown = lessons_list(handle, scope, everything)
        if as_json:
            print_json(shown)
            return
        _table(f"{len(shown)} lessons", ("id", "importance", "state", "scope", "text"),
               [(i["insight_id"], str(i["importance"]), i["state"], i["scope"], i["text"])
                for i in shown])

    guard(body)


@lessons_app.command("show")
def show_lesson(lesson: Annotated[str, typer.Argument(help="Lesson id.")],
                store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Show a lesson, its lifecycle state and its events."""

    def body() -> None:
        from dreamrsi.knowledge.reading import lesson_show

        with reader(store) as handle:
            data = lesson_show(handle, lesson)
        if as_json:
            print_json(data)
            return
        typer.echo(visible(f"lesson {data['insight_id']} ({data['state']}, importance "
                           f"{data['importance']}, lifecycle {data['lifecycle'] or '-'}, scope "
                           f"{data['scope'] or '-'})\n  {data['text']}\n  sources: "
                           f"{', '.join(data['sources']) or '-'}"))
        for e in data["events"]:
            typer.echo(visible(f"  #{e['seq']} {e['kind']} {e['payload']}"))

    guard(body)


@lessons_app.command("history")
def lesson_history(scope: ScopeOpt = None, store: StoreOpt = DEFAULT_STORE,
                   as_json: JsonOpt = False) -> None:
    """The pool's deltas, in order: the pool is their fold."""

    def body() -> None:
        from dreamrsi.knowledge.reading import lesson_history as deltas

        with reader(store) as handle:
            events = deltas(handle, scope)
        if as_json:
            print_json(events)
            return
        _table(f"{len(events)} pool events", ("seq", "op", "lesson", "text"),
               [(str(e["seq"]), e["kind"].removeprefix("pool."), e["subject"],
                 str(e["payload"].get("text", ""))) for e in events])

    guard(body)
