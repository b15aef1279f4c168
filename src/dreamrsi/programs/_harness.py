"""The worker's own code, run inside the sandbox next to the candidate program.

Started as ``python -I -S dreamrsi-policy-worker.py`` in a read-only folder that holds this
file (under that name), a copy of the pure core (``dreamrsi/core/{model,view,policy}.py``)
and ``candidate.py``. It moves the
channel off file descriptor 1 (so whatever the program prints lands on stderr, which the
trusted side never parses), lowers its own limits, loads the program, then answers one request
a line: it reveals the nodes it is sent in a real ``TreeView``, asks the program for a batch
and writes the batch back as plain JSON. Everything here is as untrusted as the program: the
trusted side checks every reply (:mod:`dreamrsi.programs.wire`).
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import traceback
from typing import IO, Any


def _channel() -> IO[str]:
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.setrecursionlimit(2000)


def _node(record: list[Any], Node: Any, NodeStatus: Any, Cost: Any) -> Any:  # noqa: N803
    (node_id, parent, seq, rnd, status, valid, score, raw, plan, wall, cpu, t_in, t_out,
     money) = record
    return Node(node_id, "", parent, seq, rnd, None, NodeStatus(status), valid, score, raw,
                "", plan=plan, cost=Cost(wall, cpu, t_in, t_out, money or 0.0))


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    out = _channel()
    _limits()
    from dreamrsi.core.model import Cost, Node, NodeStatus
    from dreamrsi.core.policy import Budget, PolicyContext
    from dreamrsi.core.view import TreeView

    def reply(data: Any) -> None:
        out.write(json.dumps(data) + "\n")

    def failure(exc: BaseException) -> None:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        reply({"error": text[-2000:]})

    try:
        with open(os.path.join(here, "candidate.py"), encoding="utf-8") as handle:
            source = handle.read()
        namespace: dict[str, Any] = {"__name__": "candidate"}
        exec(compile(source, "policy.py", "exec"), namespace)
        program = namespace["ExplorationPolicy"]
        program()
    except BaseException as exc:  # the program's own failure, reported and final
        failure(exc)
        return
    reply({"ready": True})
    # slot -> (policy, view): each episode has a fresh instance of its own
    slots: dict[int, tuple[Any, Any]] = {}
    for line in sys.stdin:
        try:
            batches = []
            for slot, episode, nodes, rounds, budget in json.loads(line)["entries"]:
                if episode is not None:
                    view = TreeView(_node(episode["root"], Node, NodeStatus, Cost))
                    policy = program()
                    policy.reset(PolicyContext(
                        episode["task"], episode["workers"], random.Random(episode["seed"]),
                        episode["attempt_budget"], episode["round_budget"], None))
                    slots[slot] = (policy, view)
                policy, view = slots[slot]
                view.reveal_all([_node(r, Node, NodeStatus, Cost) for r in nodes])
                while view.rounds < rounds:
                    view.complete_round()
                batches.append(list(policy.select(view, Budget(*budget))))
            reply({"select": batches})
        except BaseException as exc:
            failure(exc)


if __name__ == "__main__":
    main()
