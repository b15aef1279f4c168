"""Scripted agent for the flaky-test task: find why test_retry fails now and then, fix it.

Its moves: blame hash order (it reruns the tests under several PYTHONHASHSEED values and edits
nothing), seed the random module at import (hides the flake in one process; a test run that
seeds its own runs still fails), and cap the delay after the jitter (the fix, with the
diagnosis as its ANSWER). In a Dream Run it blames hash order first; on an engine attempt the
order is drawn from its seed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _agent import Step, read, say, write  # noqa: E402

CAUSE = ("random jitter is applied after the cap in retry.delay, so a delay can exceed CAP "
         "by up to 12.5% (test_delay_never_exceeds_cap fails when the jitter draws above 1)")


def main():
    step = Step()
    if "PYTHONHASHSEED" in step.evidence_text():  # the hash-seed reruns were made
        step.tried.add("hash-order")
    if os.path.exists("retry.py") and "random.seed(1234)" in read("retry.py"):
        step.tried.add("seed-at-import")
    moves = ["hash-order", "seed-at-import", "cap-after-jitter"]
    if step.is_dream:
        moves.remove("seed-at-import")
    move = step.next_move(moves, fixed=step.is_dream) or "cap-after-jitter"
    if move == "hash-order":
        say("HYPOTHESIS", "the tests depend on set or dict order, which PYTHONHASHSEED changes "
            "[move:hash-order]")
        say("PLAN", "rerun the tests under several hash seeds [move:hash-order]")
        say("RUN", "for s in 1 2 3 4 5; do PYTHONHASHSEED=$s python3 run_tests.py "
            "tests/test_retry.py; done")
        return
    text = read("retry.py")
    if move == "seed-at-import":
        write("retry.py", text.replace("import random\n", "import random\n\nrandom.seed(1234)"
                                       "  # reproducible delays\n", 1))
        say("HYPOTHESIS", "unseeded randomness makes the delays differ between runs "
            "[move:seed-at-import]")
        say("PLAN", "seed the random module when retry is imported [move:seed-at-import]")
    else:
        lines = text.splitlines(keepends=True)
        start = next((i for i, line in enumerate(lines) if line.startswith("    d = min(CAP")),
                     None)
        if start is not None:  # not fixed yet
            lines[start:start + 2] = ["    return min(CAP, BASE * 2 ** attempt * "
                                      "random.uniform(*JITTER))\n"]
        write("retry.py", "".join(lines))
        say("HYPOTHESIS", CAUSE + " [move:cap-after-jitter]")
        say("ANSWER", "cause: " + CAUSE)
        say("PLAN", "apply the cap after the jitter [move:cap-after-jitter]")
    say("RUN", "python3 eval_flaky.py")
    if move == "cap-after-jitter":
        say("DONE")


if __name__ == "__main__":
    main()
