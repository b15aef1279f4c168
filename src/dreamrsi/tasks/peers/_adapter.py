"""dreamrsi's adapter for OpenEvolve- and ShinkaEvolve-style evaluators; runs in the sandbox.

dreamrsi writes this file into the trusted copy of a peer task's files (as
``_dreamrsi_peer.py``) and runs it as the task's evaluator, in a read-only checkout of the
candidate, exactly as it runs its own evaluators::

    python3 -m _dreamrsi_peer openevolve PROGRAM [--cascade T1,T2] [--kwargs JSON]
    python3 -m _dreamrsi_peer shinka PROGRAM

It copies the candidate's PROGRAM into a fresh temporary folder (the peers also hand their
evaluators a copy), runs the peer's evaluator from the trusted copy (this file's folder) and
prints the raw result as the last line of its own stdout, ``{"dreamrsi_peer_report": {name:
text}}``: ``openevolve.json`` (the metrics and artifacts ``evaluate()`` returned), or
ShinkaEvolve's own ``metrics.json`` and ``correct.json``. What the peer's evaluator and the
program print goes to stderr. dreamrsi judges the report outside the sandbox, and takes it only
from this process (see docs/sandbox.md), never from a program it runs. Both peers' evaluators
usually import the program into their own process, where nothing can keep it from their result
(docs/sandbox.md says so). This module uses only the standard library: the sandbox shows the
Python installation, not dreamrsi's sources.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
FRAMEWORKS = {"openevolve": "openevolve", "shinka": "shinka-evolve"}
"""Top-level module -> the PyPI package that provides it."""
REPORT_KEY = "dreamrsi_peer_report"
"""The key of the report line (``verdicts.REPORT_KEY``)."""
_MAX_RESULT_BYTES = 10_000_000

Metrics = dict[str, Any]


class Broken(Exception):
    """The evaluator broke its contract; the message says how (printed, exit status 1)."""


def main(argv: list[str] | None = None) -> int:
    """Run the peer evaluator named on the command line; return the exit status."""
    parser = argparse.ArgumentParser(prog="_dreamrsi_peer")
    parser.add_argument("style", choices=("openevolve", "shinka"))
    parser.add_argument("program")
    parser.add_argument("--cascade", default=None)
    parser.add_argument("--kwargs", default="{}")
    args = parser.parse_args(argv)
    report = os.dup(1)  # the report's channel; all else printed goes to stderr
    os.dup2(2, 1)
    work = Path(tempfile.mkdtemp(prefix="dreamrsi-program-"))
    try:
        program = _copy_program(Path(args.program), work)
        if args.style == "shinka":
            out = work / "results"
            out.mkdir()
            code = _shinka(program, out)
            files = {name: _read_text(out / name) for name in ("metrics.json", "correct.json")}
        else:
            cascade = (None if args.cascade is None
                       else [float(t) for t in args.cascade.split(",") if t])
            code, files = 0, {"openevolve.json": _openevolve(program, cascade,
                                                             json.loads(args.kwargs))}
        if code == 0:
            _report(report, files)
        return code
    except Broken as exc:
        return _say(str(exc))
    except ModuleNotFoundError as exc:
        traceback.print_exc()
        return _say(_missing_module(exc.name or "", "evaluator.py"))
    except Exception as exc:  # the evaluator crashed: say where, then how
        traceback.print_exc()
        return _say(f"the evaluator raised {type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _say(message: str) -> int:
    print(f"dreamrsi: {message}", file=sys.stderr, flush=True)
    return 1


def _report(fd: int, files: Mapping[str, str | None]) -> None:
    """Write the report line to the report's channel, whole."""
    sys.stdout.flush()
    data = memoryview((json.dumps({REPORT_KEY: files}) + "\n").encode())
    while data:
        data = data[os.write(fd, data):]


def _read_text(path: Path) -> str | None:
    """A result file's text (None when absent); never a link, a FIFO or more than 10 MB."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        kind = " (a link)" if os.path.islink(path) else f": {exc.strerror}"
        raise Broken(f"{path.name} is not a regular file{kind}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            kind = " (a FIFO)" if stat.S_ISFIFO(os.fstat(fh.fileno()).st_mode) else ""
            raise Broken(f"{path.name} is not a regular file{kind}")
        data = fh.read(_MAX_RESULT_BYTES + 1)
    if len(data) > _MAX_RESULT_BYTES:
        raise Broken(f"{path.name} is larger than {_MAX_RESULT_BYTES} bytes")
    return data.decode("utf-8", "replace")


def _copy_program(relative: Path, work: Path) -> Path:
    source = Path.cwd() / relative
    if not source.is_file():
        raise Broken(f"the candidate's workspace has no file {relative}")
    target = work / relative.name
    target.write_bytes(source.read_bytes())
    return target


def _missing_module(name: str, evaluator: str) -> str:
    top = name.split(".")[0]
    where = f"the Python that runs dreamrsi ({sys.executable})"
    if top in FRAMEWORKS:
        return (f"{evaluator} imports {top}, which is not installed in {where}: install it "
                f"there with pip install 'dreamrsi[peers]' (or pip install {FRAMEWORKS[top]})")
    return (f"{evaluator} (or the program it runs) needs the module {name}, which {where} "
            "does not have: install it there")


# -- OpenEvolve ------------------------------------------------------------------------------


def _openevolve(program: Path, cascade: list[float] | None, kwargs: Mapping[str, Any]) -> str:
    """Run OpenEvolve's evaluate() (or its cascade); return its result as JSON text."""
    module = _load(HERE / "evaluator.py")
    path = str(program)
    stage1 = getattr(module, "evaluate_stage1", None)
    if cascade is not None and callable(stage1):
        metrics, artifacts = _cascade(module, path, cascade)
    else:
        evaluate = getattr(module, "evaluate", None)
        if not callable(evaluate):
            raise Broken("evaluator.py defines no evaluate(program_path) function")
        metrics, artifacts = _split("evaluate()", evaluate(path, **kwargs))
    return json.dumps({"metrics": _plain(metrics), "artifacts": _plain(artifacts)})


def _load(path: Path) -> ModuleType:
    """Import the evaluator module by path, as OpenEvolve does."""
    spec = importlib.util.spec_from_file_location("evaluation_module", path)
    if spec is None or spec.loader is None:
        raise Broken(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluation_module"] = module
    spec.loader.exec_module(module)
    return module


def _split(what: str, result: Any) -> tuple[Metrics, Metrics]:
    """Metrics and artifacts of a dict or of an ``EvaluationResult`` (or anything shaped so)."""
    if isinstance(result, dict):
        return dict(result), {}
    metrics = getattr(result, "metrics", None)
    if isinstance(metrics, dict):
        artifacts = getattr(result, "artifacts", None) or {}
        return dict(metrics), dict(artifacts) if isinstance(artifacts, dict) else {}
    raise Broken(f"{what} returned {type(result).__name__}; expected a dict of metrics or an "
                 "EvaluationResult")


def _cascade(module: ModuleType, path: str, thresholds: list[float]) -> tuple[Metrics, Metrics]:
    """OpenEvolve's cascade: stage 1, then stage N+1 while the merged metrics pass threshold N.

    A later stage that raises keeps the earlier stages' metrics and marks ``stageN_passed`` 0,
    with its traceback among the artifacts; an exception in stage 1 is a crash.
    """
    metrics, artifacts = _split("evaluate_stage1()", module.evaluate_stage1(path))
    for stage, threshold in zip((2, 3), thresholds, strict=False):
        run: Callable[[str], Any] | None = getattr(module, f"evaluate_stage{stage}", None)
        if not _passes(metrics, threshold) or not callable(run):
            break
        try:
            more, extra = _split(f"evaluate_stage{stage}()", run(path))
        except Broken:
            raise
        except Exception as exc:
            metrics[f"stage{stage}_passed"] = 0.0
            artifacts.update({f"stage{stage}_stderr": str(exc), "failure_stage": f"stage{stage}",
                              f"stage{stage}_traceback": traceback.format_exc()})
            break
        metrics = {**_numbers(metrics), **_numbers(more)}
        artifacts = {**artifacts, **extra}
    return metrics, artifacts


def _numbers(metrics: Metrics) -> Metrics:
    return {k: v for k, v in metrics.items()
            if isinstance(v, int | float) and k != "error"}


def _passes(metrics: Metrics, threshold: float) -> bool:
    """OpenEvolve's rule: ``combined_score`` if numeric, else the mean of numeric metrics."""
    score = metrics.get("combined_score")
    if isinstance(score, int | float):
        return float(score) >= threshold
    values = [float(v) for k, v in metrics.items()
              if k != "error" and isinstance(v, int | float) and not isinstance(v, bool)]
    return bool(values) and sum(values) / len(values) >= threshold


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: numpy scalars as numbers, bytes as their size, the rest as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if depth > 20:
        return str(value)[:1000]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    for name in ("item", "tolist"):  # numpy scalars and arrays
        convert = getattr(value, name, None)
        if callable(convert):
            try:
                return _plain(convert(), depth + 1)
            except (TypeError, ValueError):
                break
    return str(value)[:1000]


# -- ShinkaEvolve ----------------------------------------------------------------------------


def _shinka(program: Path, out: Path) -> int:
    """Run ``python evaluate.py --program_path P --results_dir R``, as ShinkaEvolve does."""
    script = HERE / "evaluate.py"
    argv = [sys.executable, str(script), "--program_path", str(program),
            "--results_dir", str(out)]
    code = subprocess.call(argv, stdout=sys.stderr)
    if code < 0:
        return _say(f"evaluate.py was killed by signal {-code}")
    if code != 0:
        for name in _missing_frameworks(script):
            _say(_missing_module(name, "evaluate.py"))
    return code


def _missing_frameworks(script: Path) -> list[str]:
    """The peer frameworks ``script`` imports that this Python lacks."""
    try:
        tree = ast.parse(script.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names & set(FRAMEWORKS) if importlib.util.find_spec(n) is None)


if __name__ == "__main__":
    sys.exit(main())
