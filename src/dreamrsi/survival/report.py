"""The report of a survival pass, as JSON (stored with the pass and written as ``report.json``)
and as Markdown (``report.md``): verdict, findings, the diff against the base, each claim with
its ledger rows, every measurement in the order run, and what was assumed or left untested."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamrsi.store.values import SurvivalPass
from dreamrsi.survival.findings import Finding, Reason, Verdict
from dreamrsi.workspace.git import GitFailed

__all__ = ["DIFF_BYTES", "build_report", "render_markdown", "write_report"]

DIFF_BYTES = 200_000
"""At most this much of the diff against the base goes into a report."""


def _finding(f: Finding) -> dict[str, Any]:
    return {"check": f.check.value, "reason": f.reason.value, "message": f.message,
            "fails": f.fails, "paths": list(f.paths), "rows": list(f.rows),
            "admissible": f.admissible}


def _git_version() -> str:
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, text=True, timeout=10,
                             check=False)
        return out.stdout.strip()
    except OSError:
        return "unknown"


def build_report(work: Any, record: SurvivalPass, findings: Sequence[Finding],
                 verdict: Verdict) -> dict[str, Any]:
    """The report of a finished pass (``work`` is the service's pass state)."""
    task, node = work.task, work.node
    try:
        diff, cut = work.bench.store.workspaces.diff(work.base_commit, work.candidate.commit,
                                                     DIFF_BYTES)
    except GitFailed as exc:
        diff, cut = f"(no diff: {exc})", False
    ms = work.measurements
    evaluate = [m for m in ms if m.kind == "evaluate"]
    cand = [m for m in evaluate if m.role == "candidate"]
    claims: dict[str, Any] = {
        "recorded_score": {"value": node.raw_score, "rows": [work.recorded_row]
                           if work.recorded_row else []},
        "reproduced_score": {"values": [m.raw_score for m in cand],
                             "rows": [m.row for m in cand]},
        "delta": None if work.delta is None else {
            **work.delta.as_dict(), "rows": [m.row for m in evaluate]},
        "fresh_delta": None if work.fresh_delta is None else {
            **work.fresh_delta.as_dict(),
            "rows": [m.row for m in ms if m.kind == "fresh"]},
        "protected_paths": {"paths": list(task.constraints.protected_paths),
                            "unchanged": not any(f.reason is Reason.PROTECTED_CHANGED
                                                 for f in findings),
                            "rows": [work.protected_row] if work.protected_row else []},
        "commands": work.commands,
    }
    untested = [f.message for f in findings if f.reason is Reason.UNTESTED]
    risks = [*untested, *work.notes]
    if work.repeats < 2:
        risks.append("one repeat: the spread of the scores was not measured")
    if not task.survival.commands:
        risks.append("the task names no [survival] commands: no build or test was run")
    if cut:
        risks.append(f"the diff is cut at {DIFF_BYTES} bytes")
    return {
        "pass_id": record.pass_id, "run_id": record.run_id, "node_id": record.node_id,
        "commit": record.commit, "base": record.config.get("base"),
        "base_node": work.base_node.node_id if work.base_node is not None else None,
        "base_commit": record.base_commit, "task": task.name, "verdict": verdict.value,
        "failing": [_finding(f) for f in findings if f.fails and f.admissible],
        "findings": [_finding(f) for f in findings],
        "claims": claims,
        "measurements": [m.as_dict() for m in ms],
        "repeats": work.repeats, "tolerance": task.survival.tolerance,
        "relative_tolerance": task.survival.relative_tolerance,
        "environment": {
            "isolation": work.mode.value, "isolated": work.isolated, "network": False,
            "python": platform.python_version(), "executable": sys.executable,
            "git": _git_version(), "task_digest": task.digest,
            "evaluator_digest": task.evaluator_digest,
        },
        "risks": risks,
        "diff": diff, "diff_cut": cut,
    }


def render_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown, for a person."""
    lines = [f"# Survival pass {report['pass_id']}: {report['verdict']}", "",
             f"Run {report['run_id']}, node {report['node_id']} (commit {report['commit']}), "
             f"against base {report['base']} (commit {report['base_commit']}); task "
             f"{report['task']}; {report['repeats']} repeat(s), tolerance "
             f"{report['tolerance']} (relative {report['relative_tolerance']}).", "",
             "## Findings", ""]
    for f in report["findings"] or []:
        mark = "FAILS" if f["fails"] else ("note" if not f["admissible"] else "risk")
        rows = f" (rows {', '.join(f['rows'])})" if f["rows"] else ""
        lines.append(f"- **{f['reason']}** [{f['check']}, {mark}]: {f['message']}{rows}")
    if not report["findings"]:
        lines.append("- none")
    claims = report["claims"]
    lines += ["", "## Claims", "",
              f"- recorded score: {claims['recorded_score']['value']} "
              f"(rows {', '.join(claims['recorded_score']['rows']) or 'none'})"]
    for name in ("delta", "fresh_delta"):
        d = claims[name]
        if d is not None:
            lines.append(f"- {name}: mean {d['mean']:.6g}, 95 % interval [{d['low']:.6g}, "
                         f"{d['high']:.6g}] (rows {', '.join(d['rows'])})")
    pp = claims["protected_paths"]
    lines.append(f"- protected paths {', '.join(pp['paths']) or '(none)'}: "
                 f"{'unchanged' if pp['unchanged'] else 'CHANGED'} "
                 f"(rows {', '.join(pp['rows']) or 'none'})")
    for c in claims["commands"]:
        lines.append(f"- `{c['command']}`: exit {c['exit']} "
                     f"({'passed' if c['passed'] else 'FAILED'}; rows {', '.join(c['rows'])})")
    lines += ["", "## Measurements (in the order run)", "",
              "| # | check | role | repeat | status | raw score | row |",
              "|---|---|---|---|---|---|---|"]
    for i, m in enumerate(report["measurements"], 1):
        lines.append(f"| {i} | {m['kind']} | {m['role']} | {m['repeat'] + 1} | {m['status']} "
                     f"| {m['raw_score']} | {m['row']} |")
    env = report["environment"]
    lines += ["", "## Environment", ""] + [f"- {k}: {v}" for k, v in env.items()]
    lines += ["", "## Untested paths and remaining risks", ""]
    lines += [f"- {r}" for r in report["risks"]] or ["- none named"]
    fence = "~~~~"
    lines += ["", "## Diff against the base" + (" (cut)" if report["diff_cut"] else ""), "",
              f"{fence}diff", report["diff"], fence, ""]
    return "\n".join(lines)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(report: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``out`` (created if needed; each file
    replaced whole)."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "report.json", out / "report.md"
    _atomic_write(json_path, json.dumps(report, indent=2, allow_nan=False) + "\n")
    _atomic_write(md_path, render_markdown(report))
    return json_path, md_path
