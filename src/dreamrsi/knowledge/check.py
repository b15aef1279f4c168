"""A reward that speaks: goldens checked against an agent's outputs, each giving a score and
the text that says why, folded into named metrics, their weighted sum (the objective) and a
CI floor (a minimum per metric) that passes or fails.

Scoring: ``exact`` (after trimming white space), ``contains`` and ``regex`` (a search) give 1
or 0; a ``command`` runs in the sandbox (bubblewrap, no network, only its own folder
writable; the config repository, when given, is its working directory) with
``$DREAM_GOLDEN`` naming a JSON file of the golden and the output, and prints as its last line
``{"score": S, "feedback": "...", "passed": B, "metrics": {...}}`` (or a bare number), ``S``
from 0 to 1; a command that fails, times out or prints anything else scores 0, with why.
A ``rubric`` is judged by a model (:mod:`dreamrsi.knowledge.judge`) when a judge is given:
its score, ``passed`` and feedback are the judge's; an output the judge could not judge (its
answer unreadable, its call failed) is unscored with the reason, as is every rubric golden
without a judge, and unscored goldens are left out of the metrics (a floored metric that no
golden then scores fails the floor). A golden passes at a score of 1 (a command or the judge
may say otherwise with ``passed``). A golden with no output scores 0.

Weights and floor come from ``objective.toml`` at the root of the config repository
(``[weights]`` and ``[floor]``, metric names to numbers); without one every metric met weighs
1 and there is no floor.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
import threading
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.goldens import Golden

if TYPE_CHECKING:
    from dreamrsi.knowledge.judge import RubricJudge

__all__ = ["OBJECTIVE_FILE", "CheckReport", "GoldenResult", "Objective", "check_goldens",
           "load_objective", "load_outputs",
           "parse_outputs"]

OBJECTIVE_FILE = "objective.toml"
COMMAND_TIMEOUT_S = 60.0
MAX_OUTPUTS_BYTES = 64 * 2**20


class GoldenResult(NamedTuple):
    """How one golden scored: ``score`` None when it could not be scored (a rubric without a
    judge, or that the judge could not judge)."""

    golden_id: str
    metric: str
    score: float | None
    passed: bool | None
    feedback: str
    split: str
    canary: bool
    metrics: Mapping[str, float] = {}


class Objective(NamedTuple):
    """Weights of named metrics and the floor (minimum) of some."""

    weights: Mapping[str, float]
    floor: Mapping[str, float]


class CheckReport(NamedTuple):
    """The results, the mean of each metric, the objective and the floor's verdict."""

    results: tuple[GoldenResult, ...]
    metrics: Mapping[str, float]
    objective: float
    weights: Mapping[str, float]
    floor: Mapping[str, float]
    floor_failures: tuple[str, ...]
    judged: bool = False
    judge_tokens: tuple[int, int] = (0, 0)

    @property
    def unscored(self) -> tuple[str, ...]:
        """The ids of the goldens left unscored (out of the metrics)."""
        return tuple(r.golden_id for r in self.results if r.score is None)

    @property
    def floor_passed(self) -> bool:
        """Whether every metric is at or above its floor."""
        return not self.floor_failures

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON data."""
        return {"objective": self.objective, "metrics": dict(self.metrics),
                "weights": dict(self.weights), "floor": dict(self.floor),
                "floor_passed": self.floor_passed, "floor_failures": list(self.floor_failures),
                "judged": self.judged, "unscored": list(self.unscored),
                "judge_tokens_in": self.judge_tokens[0],
                "judge_tokens_out": self.judge_tokens[1],
                "results": [{**r._asdict(), "metrics": dict(r.metrics)} for r in self.results]}


def _numbers(table: Any, where: str) -> dict[str, float]:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} is not a table of metric names to numbers")
    out = {}
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value) or value < 0:
            raise ConfigError(f"{where}.{name} is not a number of 0 or more")
        out[name] = float(value)
    return out


def load_objective(repo: Path | None) -> Objective | None:
    """The objective of the config repository ``repo`` (None without one).

    Raises:
        ConfigError: The repository has no objective file, or it is not as documented.
    """
    if repo is None:
        return None
    path = repo / OBJECTIVE_FILE
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no objective file in the config repository "
                          "([weights] and [floor] of metric names)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc})") from None
    unknown = set(data) - {"weights", "floor"}
    if unknown:
        raise ConfigError(f"{path}: unknown tables {', '.join(sorted(unknown))}; known: "
                          "weights, floor")
    weights = _numbers(data.get("weights", {}), f"{path}: weights")
    if not weights:
        raise ConfigError(f"{path}: [weights] names no metric")
    floor = _numbers(data.get("floor", {}), f"{path}: floor")
    return Objective(weights, floor)


def load_outputs(path: Path) -> dict[str, str]:
    """The agent's outputs by golden id: a JSON object of id to output (with no key ``id``
    or ``output``), or JSON lines ``{"id": ..., "output": ...}``.

    Raises:
        ConfigError: The file cannot be read, or is neither shape (named by file:line).
    """
    from dreamrsi.knowledge.formats._records import read_bounded

    try:
        text = read_bounded(path, MAX_OUTPUTS_BYTES, "the outputs").decode()
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the outputs are not UTF-8 text") from None
    return parse_outputs(text, str(path))


def parse_outputs(text: str, where: str) -> dict[str, str]:
    """The outputs of :func:`load_outputs` from the file's text; ``where`` names it in errors.

    Raises:
        ConfigError: Neither shape (named by ``where``:line).
    """
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict) and not {"id", "output"} & set(whole):
        if not all(isinstance(v, str) for v in whole.values()):
            raise ConfigError(f"{where}: an output is not text")
        return dict(whole)
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
            raise ConfigError(f"{where}:{n}: not JSON ({msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(
                obj.get("output"), str):
            raise ConfigError(f"{where}:{n}: not an object with text 'id' and 'output'")
        if obj["id"] in out:
            raise ConfigError(f"{where}:{n}: a second output for golden '{obj['id']}'")
        out[obj["id"]] = obj["output"]
    return out


def _short(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _matched(g: Golden, output: str) -> tuple[float, str]:
    expected = g.expected or ""
    if g.match == "exact":
        ok = output.strip() == expected.strip()
        why = "the output is the expected answer" if ok else (
            f"expected {_short(expected)!r}, got {_short(output)!r}")
    elif g.match == "contains":
        ok = expected in output
        why = (f"the output contains {_short(expected)!r}" if ok else
               f"the output does not contain {_short(expected)!r}")
    else:
        ok = re.search(expected, output) is not None
        why = (f"the output matches /{_short(expected)}/" if ok else
               f"the output does not match /{_short(expected)}/")
    return (1.0 if ok else 0.0), why


def _scored(g: Golden, score: float, why: str, passed: bool | None = None,
            metrics: Mapping[str, float] | None = None) -> GoldenResult:
    return GoldenResult(g.golden_id, g.metric, score, score >= 1.0 if passed is None else passed,
                        why, g.split, g.canary, {g.metric: score, **(metrics or {})})


def _command_verdict(stdout: str) -> tuple[float, str, bool | None, dict[str, float]]:
    lines = [x for x in stdout.splitlines() if x.strip()]
    if not lines:
        raise ValueError("printed nothing")
    last = json.loads(lines[-1])
    if isinstance(last, bool) or not isinstance(last, int | float | dict):
        raise ValueError("its last line is neither a number nor an object")
    data = last if isinstance(last, dict) else {"score": last}
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ValueError(f"its score {score!r} is not a number from 0 to 1")
    passed = data.get("passed")
    metrics = data.get("metrics", {})
    if not isinstance(metrics, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1
            for v in metrics.values()):
        raise ValueError("its metrics are not names to numbers from 0 to 1")
    return (float(score), str(data.get("feedback", "")),
            passed if isinstance(passed, bool) else None,
            {str(k): float(v) for k, v in metrics.items()})


def _by_command(g: Golden, output: str, cwd: Path | None, isolation: str) -> GoldenResult:
    from dreamrsi.engine.commands import bounded_command, stderr_tail
    from dreamrsi.sandbox import Isolation, IsolationMode
    from dreamrsi.tasks.spec import Constraints

    with tempfile.TemporaryDirectory(prefix="dreamrsi-golden-") as folder:
        io = Path(folder)
        (io / "golden.json").write_text(json.dumps({**g.as_dict(), "output": output}))
        path = os.pathsep.join((os.path.dirname(sys.executable), "/usr/local/bin:/usr/bin:/bin"))
        env = {"PATH": path, "HOME": str(io), "LANG": "C.UTF-8",
               "DREAM_GOLDEN": str(io / "golden.json")}
        constraints = Constraints()
        result = bounded_command(g.command, COMMAND_TIMEOUT_S, cwd or io,
                                 Isolation(mode=IsolationMode(isolation), writable=(io,)), env,
                                 constraints, deadline=None, cancel=threading.Event())
    if result is None or result.timed_out:
        return _scored(g, 0.0, f"the scoring command timed out after {COMMAND_TIMEOUT_S:g} s")
    if result.exit_code != 0:
        return _scored(g, 0.0, f"the scoring command failed (exit {result.exit_code}): "
                       f"{_short(stderr_tail(result))}")
    try:
        score, why, passed, metrics = _command_verdict(result.stdout)
    except (ValueError, RecursionError) as exc:
        return _scored(g, 0.0, f"the scoring command's output is not a verdict: {exc}")
    return _scored(g, score, why or f"the scoring command gave {score:g}", passed, metrics)


def _by_judge(g: Golden, output: str, judge: RubricJudge | None) -> GoldenResult:
    if judge is None:
        return GoldenResult(g.golden_id, g.metric, None, None, "unscored: a rubric is judged "
                            "by a model, and no judge model was given", g.split, g.canary)
    verdict = judge.judge(g, output)
    if verdict.score is None:
        return GoldenResult(g.golden_id, g.metric, None, None, f"unscored: {verdict.feedback}",
                            g.split, g.canary)
    return _scored(g, verdict.score, verdict.feedback, verdict.passed)


def _one(g: Golden, outputs: Mapping[str, str], cwd: Path | None, isolation: str,
         judge: RubricJudge | None) -> GoldenResult:
    output = outputs.get(g.golden_id)
    if output is None:
        return _scored(g, 0.0, "no output was given for this golden")
    if g.match == "rubric":
        return _by_judge(g, output, judge)
    if g.match == "command":
        return _by_command(g, output, cwd, isolation)
    score, why = _matched(g, output)
    return _scored(g, score, why)


def check_goldens(goldens: Sequence[Golden], outputs: Mapping[str, str], *,
                  objective: Objective | None = None, config_repo: Path | None = None,
                  isolation: str = "required", judge: RubricJudge | None = None
                  ) -> CheckReport:
    """Score each golden against its output and fold the scores (see the module docstring);
    ``judge`` judges the rubric goldens (without one they are unscored).

    Raises:
        ConfigError: No goldens to check.
    """
    if not goldens:
        raise ConfigError("no goldens to check; add some with `dreamrsi goldens add`")
    spent = (judge.tokens_in, judge.tokens_out) if judge else (0, 0)
    results = tuple(_one(g, outputs, config_repo, isolation, judge) for g in goldens)
    sums: dict[str, list[float]] = {}
    for r in results:
        if r.score is not None:
            for name, value in r.metrics.items():
                sums.setdefault(name, []).append(value)
    metrics = {name: sum(v) / len(v) for name, v in sorted(sums.items())}
    weights = dict(objective.weights) if objective else {m: 1.0 for m in metrics}
    floor = dict(objective.floor) if objective else {}
    total = sum(w * metrics.get(m, 0.0) for m, w in weights.items())
    failures = tuple(f"{m}: {metrics[m]:.4g} below the floor {f:g}" if m in metrics else
                     f"{m}: no golden scores it (floor {f:g})"
                     for m, f in sorted(floor.items()) if metrics.get(m, -1.0) < f)
    tokens = ((judge.tokens_in - spent[0], judge.tokens_out - spent[1]) if judge else (0, 0))
    return CheckReport(results, metrics, total, weights, floor, failures, judge is not None,
                       tokens)
