"""Where the engine meets peers' tasks: the adapter in the trusted copy, their verdicts read.

A peer task's evaluator is dreamrsi's adapter (``dreamrsi.tasks.peers``). It must be visible in
the sandbox, which shows the Python installation but not dreamrsi's sources when installed
editable, so it is written into the trusted copy of the task's files, where ``PYTHONPATH``
finds it and the candidate's checkout cannot shadow it. What the peer's evaluator leaves is
read here without following links (``read_left_file``) and translated into dreamrsi's verdict.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dreamrsi.engine.evaluation import MAX_RESULT_FILE_BYTES, ResultFile, read_result_file
from dreamrsi.sandbox import LeftFileError, read_left_file
from dreamrsi.tasks.peers import ADAPTER_FILE, PeerResultError, adapter_source, translate
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.trusted import copy_trusted

__all__ = ["PEER_FOLDER", "prepare_trusted", "read_verdict"]

PEER_FOLDER = "peer"
"""The folder beside ``$DREAM_RESULT`` where the adapter leaves the peer's raw result."""


def prepare_trusted(task: Task, dest: Path) -> None:
    """Make the trusted copy of ``task``'s protected files in the new folder ``dest``; for a
    peer task, with the adapter beside them."""
    copy_trusted(task.seed_dir, task.constraints.protected_paths, dest)
    if task.peer is not None:
        adapter = dest / ADAPTER_FILE
        adapter.write_bytes(adapter_source())
        os.chmod(adapter, 0o644)


def read_verdict(task: Task, result_file: Path) -> ResultFile:
    """What the evaluator left: ``$DREAM_RESULT`` itself, or for a peer task the verdict
    translated from the files in ``peer/`` beside it (each kept in ``raw``)."""
    if task.peer is None:
        return read_result_file(result_file)
    folder = result_file.parent / PEER_FOLDER
    files: dict[str, bytes | None] = {}
    for name in task.peer.result_files:
        try:
            files[name] = read_left_file(folder / name, MAX_RESULT_FILE_BYTES)
        except LeftFileError as exc:
            return ResultFile(problem=f"{name} refused: {exc}")
    raw = tuple((f"{PEER_FOLDER}/{name}", data) for name, data in files.items() if data)
    try:
        verdict = translate(task.peer.style, files)
        return ResultFile(json.dumps(verdict, allow_nan=False).encode(), raw=raw)
    except PeerResultError as exc:
        return ResultFile(problem=str(exc), raw=raw)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # JSON the peer's format cannot hold (nested 50,000 deep, integers of 5,000 digits)
        return ResultFile(problem=f"the peer's result cannot be read: {type(exc).__name__}: "
                          f"{str(exc)[:300]}", raw=raw)
