"""What the tool modules share: the server's store and jobs, the error boundary, readers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from dreamrsi.errors import DreamError
from dreamrsi.mcp_server.jobs import Jobs

if TYPE_CHECKING:
    from dreamrsi.store.base import RunStore

T = TypeVar("T")


@dataclass(frozen=True)
class Served:
    """What a server serves: one store (opened per call, as the command line opens it) and
    the jobs it started."""

    store: Path
    jobs: Jobs

    def reader(self) -> RunStore:
        """The store, opened for reading (a running job's writes are seen as they commit)."""
        from dreamrsi.store import open_store

        return open_store(self.store, writer=False)


def answer(fn: Callable[[], T]) -> T:
    """Run a tool's body; a DreamError (a bad argument, an unknown run, a busy store) becomes
    the tool's error with its message, as the command line prints it."""
    try:
        return fn()
    except DreamError as exc:
        raise ToolError(str(exc)) from exc
