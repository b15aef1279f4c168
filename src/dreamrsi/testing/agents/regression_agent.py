"""Scripted agent for the seeded-regression task: find the commit that broke quoting, fix it.

In a git working copy (a Dream Run) it first states a misleading hypothesis (the header row)
and asks for the check's evidence, then asks the controller to bisect, then answers with the
first bad commit (read from the bisect's output in the brief, or found by bisecting itself
without writing the repository) and reverts that commit's hunk. A shadow only answers. On
plain files (an engine attempt) it tries the header, the field formatting and the quoting
rule in an order drawn from its seed, one per step.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _agent import Step, has_git, read, say, write  # noqa: E402

FIRST_BAD = re.compile(r"\b([0-9a-f]{40}) is the first bad commit")
QUOTING = re.compile(r"(def _needs_quotes\(text\):\n(?:    \"\"\".*\"\"\"\n)?)    return .*\n")


def fix_quoting():
    """Quote fields holding the separator again, whatever else the rule says."""
    text = read("export.py")
    fixed = QUOTING.sub(lambda m: m.group(1) + '    return SEPARATOR in text or QUOTE in text '
                        'or "\\n" in text\n', text, count=1)
    write("export.py", fixed)
    return fixed != text


def git(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=120)
    return done.stdout.strip() if done.returncode == 0 else None


def passes(commit):
    """Whether check.py passes on ``commit``'s files (extracted to a temporary folder, so the
    repository is only read)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", commit], capture_output=True, timeout=120)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        done = subprocess.run([sys.executable, "check.py"], cwd=tmp, capture_output=True,
                              timeout=120)
    return done.returncode == 0


def bisect_myself():
    """The first commit on the first-parent line from the root to HEAD where check.py fails."""
    commits = (git("rev-list", "--reverse", "--first-parent", "HEAD") or "").split()
    low, high = 0, len(commits) - 1  # commits[low] passes (assumed), commits[high] fails
    if not commits or passes(commits[high]):
        return None
    while high - low > 1:
        mid = (low + high) // 2
        if passes(commits[mid]):
            low = mid
        else:
            high = mid
    return commits[high]


def answer_and_fix(step):
    found = FIRST_BAD.findall(step.evidence_text())
    bad = found[-1] if found else bisect_myself()
    if bad is None:
        say("ANSWER", "no commit of this history fails check.py")
        return
    subject = git("log", "-1", "--format=%s", bad) or ""
    say("ANSWER", f"first bad commit {bad} ({subject}) [move:answer]")
    say("HYPOTHESIS", f"commit {bad[:12]} narrowed the quoting rule, so fields holding a "
        "comma are no longer quoted")
    if step.is_shadow:
        say("DONE")
        return
    diff = git("diff", f"{bad}~1", bad, "--", "export.py")
    reverted = diff is not None and subprocess.run(
        ["git", "apply", "-R"], input=diff + "\n", text=True, capture_output=True).returncode == 0
    if not reverted:
        fix_quoting()
    say("PLAN", f"revert the quoting hunk of {bad[:12]} [move:answer]")
    say("RUN", "python3 check.py")
    say("DONE")


def dream_step(step):
    evidence = step.evidence_text()
    if "git bisect" in evidence:  # the controller ran the bisect asked for
        step.tried.add("bisect")
    if "python3 check.py" in evidence:  # the check ran: the header hypothesis was tested
        step.tried.add("header")
    moves = ["bisect", "answer"] if step.is_shadow else ["header", "bisect", "answer"]
    move = step.next_move(moves, fixed=True)
    if move == "header":
        say("HYPOTHESIS", "the header row change broke the export's quoting [move:header]")
        say("PLAN", "check the header row against the failing output [move:header]")
        say("RUN", "python3 check.py")
    elif move == "bisect":
        first = git("rev-list", "--max-parents=0", "HEAD") or "HEAD~1"
        say("PLAN", "bisect the history with the check [move:bisect]")
        say("RUN", f"git bisect start HEAD {first.split()[0]} && git bisect run python3 "
            "check.py; git bisect reset")
    else:
        answer_and_fix(step)


def engine_step(step):
    move = step.next_move(["header", "format", "quoting"])
    if move == "header":
        text = read("export.py")
        write("export.py", text.replace("quote(c) for c in columns", "quote(c.strip()) for c in "
                                        "columns", 1))
        say("PLAN", "strip the header's column names: the header row looks malformed "
            "[move:header]")
    elif move == "format":
        text = read("export.py")
        write("export.py", text.replace("    return str(value)\n",
                                        "    return str(value).strip()\n", 1))
        say("PLAN", "strip formatted fields: stray spaces split the columns [move:format]")
    else:
        fix_quoting()
        say("PLAN", "quote fields that hold the separator again [move:quoting]")
    say("RUN", "python3 check.py")


def main():
    step = Step()
    if (step.is_dream or step.is_shadow) and has_git():
        dream_step(step)
    else:
        engine_step(step)


if __name__ == "__main__":
    main()
