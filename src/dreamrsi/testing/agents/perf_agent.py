"""Scripted agent for the performance-target task: speed up dedupe.unique.

Its moves: bind ``out.append`` to a local (ineffective: the membership test stays quadratic),
sort a set (fast, but it loses first-seen order and fails the tests), and a dict's keys (the
real fix). In a Dream Run it makes them in that order (the ineffective edit first, then the
real one; it never sorts); on an engine attempt, in an order drawn from its seed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _agent import Step, read, say, write  # noqa: E402

HEAD = '"""Remove repeated items from a sequence."""\n\n\ndef unique(items):\n' \
       '    """The items in first-seen order, each once."""\n'
BODIES = {
    "local": "    out = []\n    append = out.append\n    for item in items:\n"
             "        if item not in out:\n            append(item)\n    return out\n",
    "sort": "    return sorted(set(items), key=str)\n",
    "dict": "    return list(dict.fromkeys(items))\n",
}
PLANS = {
    "local": "bind out.append to a local name to save attribute look-ups",
    "sort": "deduplicate through a set and sort the result",
    "dict": "keep first-seen order with a dict's keys: one hash look-up per item",
}


def main():
    step = Step()
    current = read("dedupe.py") if os.path.exists("dedupe.py") else ""
    done = [m for m, body in BODIES.items() if current == HEAD + body]
    if done and step.is_dream:  # moves come in order: the ones before it were made
        step.tried.update(list(BODIES)[: list(BODIES).index(done[0]) + 1])
    step.tried.update(done)
    moves = ["local", "dict"] if step.is_dream else ["local", "sort", "dict"]
    move = step.next_move(moves, fixed=step.is_dream) or "dict"
    write("dedupe.py", HEAD + BODIES[move])
    say("HYPOTHESIS", f"{PLANS[move]} makes unique() fast enough [move:{move}]")
    say("PLAN", f"{PLANS[move]} [move:{move}]")
    say("RUN", "python3 bench.py")
    if move == "dict":
        say("DONE")


if __name__ == "__main__":
    main()
