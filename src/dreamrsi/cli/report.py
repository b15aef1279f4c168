"""``dreamrsi report``: a self-contained HTML report with PNG figures of a run, loop or task."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dreamrsi.cli._shared import console, guard, reader
from dreamrsi.cli.options import DEFAULT_STORE, StoreOpt, path_value


def report(
    target: Annotated[str, typer.Argument(
        help="A run id, a loop id (or a unique prefix of either), or a task's name.")],
    out: Annotated[Path, typer.Option(
        "--out", parser=path_value, help="Folder to write index.html and its figures into "
        "(created if missing).")],
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Write a report of TARGET that works offline: index.html with PNG figures (best score
    against attempts, loop arms, attempts per round, trees, dreams' selections, survival
    verdicts). Needs matplotlib: pip install 'dreamrsi[report]'."""

    def body() -> list[Path]:
        from dreamrsi.report.write import write_report

        with reader(store) as handle:
            return write_report(handle, target, out)

    files = guard(body)
    console().print(f"wrote {files[0]} and {len(files) - 1} figure(s)", highlight=False,
                    markup=False)
