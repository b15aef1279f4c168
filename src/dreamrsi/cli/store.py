"""Commands that maintain a store: ``store upgrade``."""

from __future__ import annotations

from dreamrsi.cli._shared import console, guard
from dreamrsi.cli.options import DEFAULT_STORE, StoreOpt


def upgrade(store: StoreOpt = DEFAULT_STORE) -> None:
    """Apply pending schema migrations to a store."""

    def body() -> None:
        from rich.markup import escape

        from dreamrsi.store import open_store

        with open_store(store, writer=True, holder="store upgrade", upgrade=True) as handle:
            console().print(f"store {escape(str(store))} is at schema version "
                          f"{handle.schema_version}")

    guard(body)
