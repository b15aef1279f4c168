"""The static adversarial checks of a survival pass: the candidate's commit against its base's,
read from the store's repository, never run.

:func:`static_findings` compares the two commits' trees and reads only the files whose entry
differs (and the base's evaluator files, to follow its imports), at most
:data:`~dreamrsi.survival._pair.MAX_FILE_BYTES` of each. It reports, as
:class:`~dreamrsi.survival.findings.Finding` objects:

- :attr:`Check.TESTS`: tests deleted, assertions removed or weakened, new skips and expected
  failures (:mod:`~dreamrsi.survival._tests_diff`); assertions rebound at run time, in any
  changed Python file (:mod:`~dreamrsi.survival._patches`);
- :attr:`Check.CHANGES`: the evaluator or its data changed, dependencies changed, test or
  tool configuration changed, files added that change how every Python process starts
  (:mod:`~dreamrsi.survival._changes`).

Nothing the candidate wrote can make it raise: a file that does not parse is compared as
text or named as untested, a file too large to read is named as untested.
"""

from __future__ import annotations

from dreamrsi.survival._changes import change_findings
from dreamrsi.survival._pair import TreePair
from dreamrsi.survival._patches import patch_findings
from dreamrsi.survival._tests_diff import test_findings
from dreamrsi.survival.findings import Check, Finding, Reason
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import WorkspaceRepo

__all__ = ["static_findings"]


def static_findings(repo: WorkspaceRepo, base: str, candidate: str, task: Task) -> list[Finding]:
    """The static adversarial findings of ``candidate`` against ``base``.

    Args:
        repo: The store's repository holding both commits.
        base: The commit the candidate is measured against.
        candidate: The candidate's commit.
        task: The task (protected paths, evaluator command, ``[survival] allow_changes``).

    Returns:
        The findings, failing ones and named risks, in a stable order (the check, then the
        paths); none when nothing suspicious changed.

    Raises:
        GitFailed: ``base`` or ``candidate`` is not a commit of ``repo``, or git failed.
    """
    pair = TreePair.read(repo, base, candidate)
    changed = pair.changed()
    if not changed:
        return []
    findings = [*change_findings(task, pair, changed), *test_findings(pair, changed),
                *patch_findings(pair, changed)]
    reported = {p for f in findings if f.reason is Reason.UNTESTED for p in f.paths}
    findings += [Finding(Check.CHANGES, Reason.UNTESTED,
                         f"{path}: {size} bytes, too large to analyse", False, (path,))
                 for path, size in sorted(pair.too_large.items()) if path not in reported]
    return sorted(findings, key=lambda f: (f.check != Check.CHANGES, f.paths, f.reason))
