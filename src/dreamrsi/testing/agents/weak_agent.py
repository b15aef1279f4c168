"""A weak scripted agent for any repository task: one random small edit per step.

It picks a Python file that is not a test, check, benchmark or vendored library, and changes
one thing at random (a number, a comparison, a line dropped or a comment added), drawn from
its seed. It rarely helps, and often breaks something: the floor the other arms should beat.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _agent import Step, read, say, write  # noqa: E402

SKIP_DIRS = {".git", "tests", "vendor", "__pycache__"}
SKIP_FILES = {"check.py", "bench.py", "run_tests.py"}


def candidates():
    found = []
    for root, dirs, names in os.walk("."):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            if name.endswith(".py") and name not in SKIP_FILES and not name.startswith("eval"):
                found.append(os.path.normpath(os.path.join(root, name)))
    return found


def mutate(lines, rng):
    """One random small change to ``lines`` (in place); what it did."""
    body = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(
        ("def ", "class ", "import ", "from ", '"""', "#"))]
    if not body:
        lines.append("# TODO: revisit\n")
        return "added a note"
    i = rng.choice(body)
    kind = rng.choice(["number", "compare", "drop", "comment"])
    if kind == "number" and re.search(r"\b\d+\b", lines[i]):
        lines[i] = re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) + rng.choice([-1, 1])),
                          lines[i], count=1)
        return f"nudged a number on line {i + 1}"
    if kind == "compare" and ("<" in lines[i] or ">" in lines[i]):
        lines[i] = lines[i].replace("<", ">", 1) if "<" in lines[i] else \
            lines[i].replace(">", "<", 1)
        return f"flipped a comparison on line {i + 1}"
    if kind == "drop" and not lines[i].rstrip().endswith(":"):
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + "pass\n"
        return f"dropped line {i + 1}"
    lines.insert(i, lines[i][: len(lines[i]) - len(lines[i].lstrip())] + "# checked\n")
    return f"added a comment at line {i + 1}"


def main():
    step = Step()
    files = candidates()
    if not files:
        say("PLAN", "nothing to edit [move:weak]")
        say("DONE")
        return
    path = step.rng.choice(files)
    lines = read(path).splitlines(keepends=True)
    what = mutate(lines, step.rng)
    write(path, "".join(lines))
    say("HYPOTHESIS", f"a small change to {path} might help [move:weak]")
    say("PLAN", f"{path}: {what} [move:weak]")


if __name__ == "__main__":
    main()
