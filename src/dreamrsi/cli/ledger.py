"""Commands for the evidence ledger: ``ledger verify``, ``ledger head``, ``ledger show``."""

from __future__ import annotations

from typing import Annotated

import typer

from dreamrsi.cli._shared import (
    console,
    err_console,
    guard,
    print_json,
    reader,
    stream_list,
)
from dreamrsi.cli.options import COUNT, DEFAULT_STORE, MAX_INT, ChainArg, JsonOpt, StoreOpt
from dreamrsi.views import head_dict, verify_dict

HeadOpt = Annotated[str | None, typer.Option(
    "--head", help="A head kept outside the store, as `dreamrsi ledger head` printed it "
    "(LENGTH:HASH, 'LENGTH HASH' or HASH): fail unless the chain still holds it.")]


def verify(run_id: ChainArg, head: HeadOpt = None, store: StoreOpt = DEFAULT_STORE,
           as_json: JsonOpt = False) -> None:
    """Check a run's (or dream's) ledger: the hash chain, the run and its nodes against their
    records, the blobs and commits it names; exit 1 naming the first problem."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.engine import queries
        from dreamrsi.store.ledger import ChainHead

        given = None if head is None else ChainHead.parse(head)
        with reader(store) as handle:
            report = handle.verify(queries.ledger_chain(handle, run_id), given)
        if as_json:
            print_json(verify_dict(report))
        elif report.ok:
            console().print(_render.verify_text(report), highlight=False, soft_wrap=True)
        else:
            err_console().print(_render.verify_text(report), highlight=False, soft_wrap=True)
        if not report.ok:
            raise typer.Exit(1)

    guard(body)


def head(run_id: ChainArg, store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Print a run's (or dream's) ledger length and head hash as `LENGTH HASH`: keep it outside
    the store and pass it to `ledger verify --head` later."""

    def body() -> None:
        from dreamrsi.engine import queries

        with reader(store) as handle:
            chain = queries.ledger_chain(handle, run_id)
            chain_head = handle.chain_head(chain)
        if as_json:
            print_json({"run_id": chain, **head_dict(chain_head)})
        else:
            typer.echo(f"{chain_head.length} {chain_head.hash}")

    guard(body)


def show(
    run_id: ChainArg,
    after: Annotated[int, typer.Option(
        min=0, max=MAX_INT, help="Print the rows after this seq (the last of the previous "
        "page); reads only the page, however long the chain.")] = 0,
    limit: Annotated[int | None, typer.Option(
        **COUNT, help="Print at most this many rows (default: every row).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Print a run's (or dream's) ledger rows in order, with the error of each row that has
    one (a model call's, a command's exit, time-out or signal, a verdict that did not score);
    a page of them with --after and --limit."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.engine import queries
        from dreamrsi.engine.node_view import row_error

        with reader(store) as handle:
            chain = queries.ledger_chain(handle, run_id)
            rows = handle.ledger(chain, after=after, limit=limit)
            if as_json:  # the rows as recorded (an error is in their facts: `parsed`)
                stream_list(r.as_dict() for r in rows)
                return
            _render.ledger_table([{**r.as_dict(), "error": row_error(r.event)} for r in rows])

    guard(body)
