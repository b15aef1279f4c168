"""Where a survival pass runs: fresh checkouts the run never used, with the trusted files over
them, and the ledger rows that record each command.

Every checkout is a new folder under the store's work folder (``survival-PASS/``), written from
the store's git repository, with the task's protected files laid over it from a trusted copy
made for the pass, exactly as the engine prepares a candidate for its evaluator.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dreamrsi.engine.peers import prepare_trusted
from dreamrsi.store.base import RecordStore
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import GitCall
from dreamrsi.workspace.trusted import open_to_all, overlay_trusted

__all__ = ["Workbench"]


class Workbench:
    """The folders and the evidence of one pass.

    Args:
        store: The store (its repository, blobs, work folder and ledger).
        task: The task whose trusted files are laid over each checkout.
        pass_id: The pass (names its folder and every ledger row).
        run_id: The run whose chain the rows go to.
    """

    def __init__(self, store: RecordStore, task: Task, pass_id: str, run_id: str) -> None:
        self.store = store
        self.task = task
        self.pass_id = pass_id
        self.run_id = run_id
        self.root = store.work_folder / f"survival-{pass_id}"
        if store.work_folder.is_dir():  # what killed passes left (this process is the writer)
            for left in store.work_folder.glob("survival-*"):
                discard_folder(left)
        self.root.mkdir(parents=True)
        self.trusted = self.root / "trusted"
        prepare_trusted(task, self.trusted)
        self._count = 0

    def checkout(self, commit: str) -> tuple[Path, Path]:
        """A fresh checkout of ``commit`` with the trusted files over it, and an empty io
        folder beside it; open to every user (read-only inside the sandbox unless the command
        is given it to write)."""
        self._count += 1
        folder = self.root / f"c{self._count}"
        view, io = folder / "ws", folder / "io"
        io.mkdir(parents=True)
        calls: list[GitCall] = []
        self.store.workspaces.checkout(commit, view, folder / "index", calls)
        overlay_trusted(view, self.trusted, self.task.constraints.protected_paths)
        open_to_all(view)
        return view, io

    def record(self, event: LedgerEvent, **facts: Any) -> str:
        """Chain ``event`` in the run's ledger as the pass's (actor ``survival``, the pass and
        ``facts`` in ``parsed``); return its id."""
        parsed: Mapping[str, Any] = event.parsed or {}
        row = dataclasses.replace(event, actor=Actor.SURVIVAL, parsed={
            **parsed, "survival": {"pass_id": self.pass_id, **facts}})
        with self.store.atomic():
            self.store.append_ledger(self.run_id, [row], run_id=self.run_id)
        return row.event_id

    def record_plain(self, event: LedgerEvent) -> str:
        """Chain ``event`` as it is (narration: no ``parsed``, not admissible); its id."""
        with self.store.atomic():
            self.store.append_ledger(self.run_id, [event], run_id=self.run_id)
        return event.event_id

    def close(self) -> None:
        """Remove the pass's folders, and the store's work folder where nothing else is left
        in it (never raises)."""
        discard_folder(self.root)
        with contextlib.suppress(OSError):  # not empty, or gone: it stays as it is
            self.store.work_folder.rmdir()
