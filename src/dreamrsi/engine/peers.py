"""Where the engine meets peers' tasks: the adapter in the trusted copy, their verdicts read.

A peer task's evaluator is dreamrsi's adapter (``dreamrsi.tasks.peers``). It must be visible in
the sandbox, which shows the Python installation but not dreamrsi's sources when installed
editable, so it is written into the trusted copy of the task's files, where ``PYTHONPATH``
finds it and the candidate's checkout cannot shadow it. The adapter prints what the peer's
evaluator left as the last line of its own stdout (the channel only the eval command's own
processes reach); it is translated here into dreamrsi's verdict.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dreamrsi.engine.evaluation import ResultFile
from dreamrsi.sandbox import CommandResult
from dreamrsi.tasks.peers import (
    ADAPTER_FILE,
    REPORT_KEY,
    PeerResultError,
    adapter_source,
    translate,
)
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.trusted import copy_trusted

__all__ = ["PEER_FOLDER", "SITE_FOLDER", "prepare_trusted", "read_verdict"]

PEER_FOLDER = "peer"
"""The name the peer's raw result files are kept under in the evidence (``peer/<file>``)."""

SITE_FOLDER = "_dreamrsi_site"
"""The folder of the trusted copy, first on the evaluator's ``PYTHONPATH``, that holds
dreamrsi's ``sitecustomize``: it puts the candidate's folder last on ``sys.path``."""

_SITECUSTOMIZE = b'''\
"""dreamrsi: the candidate's folder ($DREAM_CANDIDATE) goes last on sys.path, after the
standard library and site-packages, so the evaluator imports the candidate's own modules
and a candidate's json/ or sitecustomize never shadows anything. Then the sitecustomize this
one hides, if the installation has one, runs as it would have."""
import os
import sys


def _dreamrsi_site():
    here = os.path.dirname(os.path.abspath(__file__))
    candidate = os.environ.get("DREAM_CANDIDATE")
    if candidate and candidate not in sys.path:
        sys.path.append(candidate)
    skip = {here, os.path.abspath(candidate) if candidate else None}
    path = [p for p in sys.path if p and os.path.abspath(p) not in skip]
    # a few stats where the import system would look; its machinery only when one is there
    # (importing importlib.util costs every Python start in the sandbox milliseconds)
    if not any(os.path.exists(os.path.join(p, name)) for p in path
               for name in ("sitecustomize.py", "sitecustomize")):
        return
    import importlib.machinery
    import importlib.util
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_dreamrsi_site()
del _dreamrsi_site
'''


def prepare_trusted(task: Task, dest: Path) -> None:
    """Make the trusted copy of ``task``'s protected files in the new folder ``dest``, with
    dreamrsi's ``sitecustomize`` in :data:`SITE_FOLDER`; for a peer task, with the adapter."""
    copy_trusted(task.seed_dir, task.constraints.protected_paths, dest)
    site = dest / SITE_FOLDER
    site.mkdir(mode=0o755, exist_ok=True)
    _write_readable(site / "sitecustomize.py", _SITECUSTOMIZE)
    if task.peer is not None:
        _write_readable(dest / ADAPTER_FILE, adapter_source())


def _write_readable(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o644)


def read_verdict(task: Task, result: CommandResult) -> ResultFile:
    """Nothing for a dreamrsi task (its stdout holds the verdict); for a peer task, the verdict
    translated from the adapter's report, the last line of its own stdout (each file the
    peer's evaluator left is kept in ``raw``)."""
    if task.peer is None:
        return ResultFile()
    files = _report(result.stdout, task.peer.result_files)
    if isinstance(files, str):
        return ResultFile(problem=files)
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


def _report(stdout: str, names: tuple[str, ...]) -> dict[str, bytes | None] | str:
    """The files of the adapter's report by name (each None when the report is missing: the
    peer's evaluator ended the process before it returned), or what is wrong with it."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        report: Any = json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError):  # not the adapter's report
        report = None
    files = report.get(REPORT_KEY) if isinstance(report, dict) else None
    if not isinstance(files, dict):
        return dict.fromkeys(names)
    found: dict[str, bytes | None] = {}
    for name in names:
        text = files.get(name)
        if text is not None and not isinstance(text, str):
            return f"the adapter's report holds {name} as {type(text).__name__}, not text"
        found[name] = None if text is None else text.encode("utf-8", "surrogatepass")
    return found
