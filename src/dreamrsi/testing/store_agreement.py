"""A Hypothesis state machine: random operations on two store backends, which must agree.

Every step applies one operation (or a transaction of several, nested, that may be rolled
back) to both stores; each must return the same thing or raise the same kind of error, and
afterwards both must hold the same thing (:func:`~dreamrsi.testing.store_state.store_state`,
every chain verified). Ids come from small pools so that operations collide: duplicate nodes,
runs of unrecorded tasks, ambiguous prefixes, events reusing an id.

Run it from a test module::

    TestAgreement = StoreAgreement.TestCase

and compare another pair of backends by overriding :meth:`StoreAgreement.make_stores`.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from dreamrsi.core.model import Artifact, Cost, Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.store.base import InFlight, RunRecord, RunStatus, RunStore, TaskRecord
from dreamrsi.store.dreams import DreamRecord, LoopRecord, LoopRound, PolicyScore, PolicyVersion
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.testing.store_conformance import STORE_KINDS, make_store
from dreamrsi.testing.store_state import outcome, store_state

TASKS = ("t1", "t2", "t3")
RUNS = ("ra1", "ra2", "rb1")
NODES = ("n0", "n1", "n2", "n3", "n4")
EVENTS = ("e1", "e2", "e3")
POLICIES = ("p1", "p2", "q1")
DREAMS = ("d1", "d2")
LOOPS = ("l1", "l2", "m1")
CHAINS = (*RUNS, *DREAMS)
RUN_OF = st.sampled_from(("ra1", "ra1", "ra1", "ra2", "rb1", "rz"))  # ra1 is recorded
BLOBS = (b"", b"stdout\n", b"\x00\xff")
BLOB_DIGESTS = tuple(hashlib.sha256(b).hexdigest() for b in BLOBS)
PREFIXES = ("", "r", "ra", "ra1", "rb", "rz", "p", "q1", "l", "m1", "lz")
DIGESTS = (*BLOB_DIGESTS[1:], "e" * 64)  # blobs that may be stored, and one never stored

text = st.text(max_size=4)
_scalars = (st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
            | st.floats(allow_nan=False, allow_infinity=False))
json_value = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=2)
                          | st.dictionaries(text, inner, max_size=2), max_leaves=3)
json_dict = st.dictionaries(text, json_value, max_size=2)
maybe_nan_dict = st.one_of(*[json_dict] * 5, st.just({"x": float("nan")}))  # NaN: refused
number = st.floats() | st.integers(-5, 5)  # NaN and infinities included
int64 = st.integers(-(2**63), 2**63 - 1)
stamp = st.floats(0, 2e9)


@dataclass(frozen=True)
class Op:
    """One store method called with fixed arguments (shown by name when a test fails)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __call__(self, store: RunStore) -> Any:
        return getattr(store, self.name)(*self.args, **dict(self.kwargs))


class _RolledBack(Exception):
    """Raised to roll a transaction back."""


@dataclass(frozen=True)
class Block:
    """Operations inside ``store.atomic()``, then rolled back when ``fail``."""

    ops: tuple[Op | Block, ...]
    fail: bool

    def __call__(self, store: RunStore) -> list[Any]:
        results: list[Any] = []
        try:
            with store.atomic():
                results += [outcome(partial(op, store), comparable=True) for op in self.ops]
                if self.fail:
                    raise _RolledBack
        except _RolledBack:
            results.append("rolled back")
        return results


def _op(name: str, *args: st.SearchStrategy[Any], **kwargs: st.SearchStrategy[Any]
        ) -> st.SearchStrategy[Op]:
    keys = sorted(kwargs)
    return st.builds(lambda a, k: Op(name, tuple(a), tuple(zip(keys, k, strict=True))),
                     st.tuples(*args), st.tuples(*(kwargs[k] for k in keys)))


def _fixed_time(ids: Sequence[str]) -> Callable[[str], float]:
    return lambda key: 1_700_000_000.0 + ids.index(key)  # no ties in "oldest first"


tasks = st.builds(TaskRecord, st.sampled_from(TASKS), text, text, json_dict, st.floats(1, 2e9))


def _run(run_id: str, task_digest: str, task_name: str, policy: PolicySpec,
         config: dict[str, Any], seed: int, stop_reason: str | None, finished_at: float | None,
         heartbeat_at: float | None, pid: int | None, elapsed_s: float) -> RunRecord:
    return RunRecord(run_id, task_digest, task_name, policy, config, seed, RunStatus.RUNNING,
                     _fixed_time(RUNS)(run_id), stop_reason, finished_at, heartbeat_at, pid,
                     elapsed_s)


runs = st.builds(
    _run, st.sampled_from(RUNS), st.sampled_from(TASKS), text,
    st.builds(PolicySpec, text, json_dict), maybe_nan_dict, int64,
    st.none() | text, st.none() | stamp, st.none() | stamp, st.none() | int64, stamp)
artifacts = st.lists(st.builds(Artifact, text, st.sampled_from(DIGESTS)), max_size=2).map(tuple)
nodes = st.builds(
    Node, st.sampled_from(NODES), RUN_OF,
    st.none() | st.sampled_from(NODES), st.integers(0, 4), st.integers(0, 3),
    st.sampled_from((None, None, None, "0" * 40)), st.sampled_from(NodeStatus), st.booleans(),
    st.none() | number, st.none() | number, text, maybe_nan_dict, st.none() | text,
    st.builds(Cost, st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10),
              st.integers(0, 10), st.floats(0, 10) | st.integers(0, 3)),
    st.none() | text, artifacts, st.lists(text, max_size=2).map(tuple), stamp | st.integers(0, 9),
    st.none() | st.lists(text, max_size=2).map(tuple))
in_flight = st.builds(lambda node_id, *rest: InFlight(node_id, rest[0], rest[1],
                                                      NODES.index(node_id), *rest[2:]),
                      st.sampled_from(NODES), RUN_OF, text,
                      st.integers(0, 3), st.none() | text, stamp)
events = st.builds(
    LedgerEvent, st.sampled_from(Actor), text, st.lists(text, max_size=2).map(tuple),
    st.none() | st.integers(-1, 255), st.none() | text, artifacts,
    st.none() | maybe_nan_dict, text, st.integers(0, 10**6), st.booleans(),
    st.lists(json_dict, max_size=2).map(tuple), st.none() | st.sampled_from(NODES),
    st.sampled_from(EVENTS) | st.uuids().map(str), st.just("2024-01-01T00:00:00.000Z"))
run_changes = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(RunStatus), "stop_reason": st.none() | text,
    "finished_at": st.none() | number, "heartbeat_at": st.none() | stamp,
    "pid": st.none() | int64, "elapsed_s": number}).filter(bool)
policies = st.builds(PolicyVersion, st.sampled_from(POLICIES), st.builds(PolicySpec, text,
                     json_dict), st.sampled_from(TASKS), st.none() | st.sampled_from(POLICIES),
                     st.none() | st.sampled_from(DREAMS), st.none() | text, stamp)


def _dream(dream_id: str, task_digest: str, evaluator_digest: str, objective: dict[str, Any],
           config: dict[str, Any], incumbent: str) -> DreamRecord:
    return DreamRecord(dream_id, task_digest, evaluator_digest, objective, config, incumbent,
                       _fixed_time(DREAMS)(dream_id))


dreams = st.builds(_dream, st.sampled_from(DREAMS), st.sampled_from(TASKS), text, json_dict,
                   maybe_nan_dict, st.sampled_from(POLICIES))
finite = st.floats(allow_nan=False) | st.integers(-5, 5)
scores = st.builds(PolicyScore, st.sampled_from(("d1", "d1", "d1", "d2", "dz")),
                   st.sampled_from(("p1", "p1", "p1", "p2", "q1")),
                   st.sampled_from(("tr1", "tr2")), st.sampled_from(("train", "holdout")),
                   st.one_of(finite, finite, number), finite, finite, finite, finite, finite)


def _loop(loop_id: str, task_digest: str, arm: str, config: dict[str, Any],
          status: str) -> LoopRecord:
    return LoopRecord(loop_id, task_digest, arm, config, status, _fixed_time(LOOPS)(loop_id))


loops = st.builds(_loop, st.sampled_from(LOOPS), st.sampled_from(TASKS), text, json_dict, text)
loop_rounds = st.builds(LoopRound, st.sampled_from((*LOOPS, "lz")), st.integers(0, 3), text,
                        text, st.none() | text)

operations: st.SearchStrategy[Op] = st.one_of(
    _op("put_task", tasks), _op("create_run", runs), _op("add_node", nodes),
    _op("add_nodes", st.lists(nodes, max_size=3)),
    _op("start_attempts", st.lists(in_flight, max_size=3)),
    _op("finish_attempt", st.sampled_from(NODES)),
    st.builds(lambda run_id, changes: Op("update_run", (run_id,), tuple(changes.items())),
              RUN_OF, run_changes),
    _op("append_ledger", st.sampled_from(CHAINS), st.lists(events, max_size=3),
        run_id=st.none() | st.sampled_from(RUNS), dream_id=st.none() | st.sampled_from(DREAMS)),
    _op("put_blob", st.sampled_from(BLOBS)), _op("put_policy", policies),
    _op("create_dream", dreams), _op("add_scores", st.lists(scores, max_size=3)),
    _op("finish_dream", st.sampled_from((*DREAMS, "dz")), selected=text,
        promoted=st.booleans(), report=maybe_nan_dict, finished_at=number),
    _op("create_loop", loops), _op("set_loop_status", st.sampled_from(LOOPS), text),
    _op("add_loop_round", loop_rounds),
)
steps: st.SearchStrategy[Op | Block] = operations | st.recursive(
    operations, lambda inner: st.builds(Block, st.lists(inner, max_size=4).map(tuple),
                                        st.sampled_from((False, False, True))), max_leaves=5)


class StoreAgreement(RuleBasedStateMachine):
    """Two stores given the same operations hold the same thing (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="dreamrsi-agreement-"))
        self.stores = self.make_stores(self.folder)

    def make_stores(self, folder: Path) -> list[RunStore]:
        """The stores to compare (the in-memory and the SQLite backends)."""
        return [make_store(kind, folder / kind) for kind in STORE_KINDS]

    def teardown(self) -> None:
        for store in self.stores:
            store.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @initialize()
    def start_with_records(self) -> None:
        """Record a few things first, so that operations naming them can succeed."""
        for step in (
                Op("put_task", (TaskRecord("t1", "one", "e1", {}, 1.0),)),
                Op("put_task", (TaskRecord("t2", "two", "e2", {"k": [1]}, 2.0),)),
                Op("create_run", (_run("ra1", "t1", "one", PolicySpec("fixed"), {}, 7, None,
                                       None, None, None, 0.0),)),
                Op("put_policy", (PolicyVersion("p1", PolicySpec("fixed"), "t1"),)),
                Op("create_dream", (_dream("d1", "t1", "e1", {}, {}, "p1"),)),
                Op("create_loop", (_loop("l1", "t1", "dream", {}, "running"),))):
            self.apply(step)

    @rule(step=steps)
    def apply(self, step: Op | Block) -> None:
        results = [outcome(partial(step, store), comparable=True) for store in self.stores]
        assert all(r == results[0] for r in results), results

    @rule(node=nodes, events=st.lists(events, max_size=2), launch=in_flight)
    def record_attempt(self, node: Node, events: list[LedgerEvent], launch: InFlight) -> None:
        """What the engine does: launch an attempt, then record it in one transaction."""
        self.apply(Op("start_attempts", ([launch],)))
        self.apply(Block((Op("append_ledger", (node.run_id, events), (("run_id", node.run_id),)),
                          Op("add_node", (node,)), Op("finish_attempt", (launch.node_id,))),
                         fail=False))

    @invariant()
    def hold_the_same(self) -> None:
        states = [self._state(store) for store in self.stores]
        for key in states[0]:
            assert all(s[key] == states[0][key] for s in states), (key, [s[key] for s in states])

    def _state(self, store: RunStore) -> dict[str, Any]:
        state = store_state(store, tasks=TASKS, chains=(*CHAINS, "rz"), verify=True,
                            comparable=True)
        lookups = {"runs": store.get_run, "policies": store.get_policy,
                   "loops": store.get_loop, "dreams": store.get_dream}
        for name, get in lookups.items():
            state[f"{name} by prefix"] = [outcome(partial(get, p)) for p in PREFIXES]
        state["nodes by id"] = [outcome(partial(store.get_node, n)) for n in NODES]
        state["blobs"] = [outcome(partial(store.get_blob, b)) for b in (*BLOB_DIGESTS, "e" * 64)]
        return state
