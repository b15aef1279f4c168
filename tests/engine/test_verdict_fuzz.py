"""Fuzz: any bytes an evaluator prints become a verdict the store keeps and gives back.

Arbitrary JSON values (huge integers, infinities, lone surrogates, deep nesting) and arbitrary
bytes go through the engine's own path, in-process: ``parse_evaluation`` (what the engine calls
on the evaluator's output), the node and ledger row built as the attempt runner builds them,
``record_outcome`` (what the run loop calls) into a real SQLite store, and back out. Nothing may
raise; what was recorded must read back equal; the verdict must be the parser's, never the
run loop's fallback; and the ledger must verify at the end.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Direction, Node, NodeStatus, node_id_for
from dreamrsi.core.policy import PolicySpec
from dreamrsi.engine.attempt import AttemptOutcome
from dreamrsi.engine.evaluation import ResultFile, parse_evaluation
from dreamrsi.engine.recording import record_outcome
from dreamrsi.engine.sane import MAX_ABS_SCORE, MAX_METRICS_BYTES
from dreamrsi.sandbox import CommandResult
from dreamrsi.store.base import RunRecord, RunStatus, TaskRecord
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.sqlite import SqliteRunStore

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])

# text with every code point, lone surrogates included
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=30)
HUGE_INT_TEXT = st.integers(1, 6000).map(lambda n: "9" * n)
NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers().map(str), HUGE_INT_TEXT, st.sampled_from(
        ["1e999", "-1e999", "1e100", "1.0000001e100", "-0.0", "NaN", "Infinity", "-Infinity",
         "1e-400", "4e-324"]))


def _json_text(depth: int = 0) -> st.SearchStrategy[str]:
    """JSON text (not values: some numbers are what no Python value would print)."""
    scalar = st.one_of(st.sampled_from(["null", "true", "false"]), NUMBER_TEXT,
                       ANY_TEXT.map(json.dumps))
    if depth >= 3:
        return scalar
    inner = _json_text(depth + 1)
    return st.one_of(
        scalar, scalar,
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(ANY_TEXT, inner), max_size=4).map(
            lambda kv: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in kv) + "}"),
        st.integers(0, 60_000).map(lambda n: "[" * n + "]" * n))


JSON_TEXT = _json_text()
VERDICT_TEXT = st.builds(
    lambda score, valid, feedback, metrics, hash_, extra: "{" + ",".join(
        part for part in (score, valid, feedback, metrics, hash_, extra) if part) + "}",
    st.one_of(st.just(""), NUMBER_TEXT.map(lambda v: f'"score":{v}'),
              JSON_TEXT.map(lambda v: f'"score":{v}')),
    st.sampled_from(['"valid":true', '"valid":false', '', '"valid":1', '"valid":null']),
    st.one_of(st.just(""), ANY_TEXT.map(lambda t: f'"feedback":{json.dumps(t)}'),
              JSON_TEXT.map(lambda v: f'"feedback":{v}')),
    st.one_of(st.just(""), JSON_TEXT.map(lambda v: f'"metrics":{v}')),
    st.one_of(st.just(""), JSON_TEXT.map(lambda v: f'"candidate_hash":{v}')),
    st.one_of(st.just(""), JSON_TEXT.map(lambda v: f'"other":{v}')))
VERDICT_BYTES = st.one_of(
    VERDICT_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
    JSON_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=300),
    st.tuples(VERDICT_TEXT, st.binary(max_size=8), st.integers(0, 400)).map(
        lambda v: (v[0].encode("utf-8", "surrogatepass")[:v[2]] + v[1]
                   + v[0].encode("utf-8", "surrogatepass")[v[2]:])))


class _Recording:
    """One run in a real store, recording each fuzzed verdict as a new child of its root."""

    def __init__(self, store: SqliteRunStore) -> None:
        self.store = store
        self.run_id = "rfuzz0001"
        self.seq = itertools.count(1)
        now = time.time()
        with store.atomic():
            store.put_task(TaskRecord("sha256:" + "0" * 64, "fuzz", "sha256:" + "1" * 64,
                                      {"name": "fuzz"}))
            store.create_run(RunRecord(self.run_id, "sha256:" + "0" * 64, "fuzz",
                                       PolicySpec("greedy", {}), {}, 0, RunStatus.RUNNING, now))
        self.root = Node(node_id_for(self.run_id, 0), self.run_id, None, 0, 0, None,
                         NodeStatus.OK, True, 0.0, 0.0, created_at=now)
        record_outcome(store, self.run_id, AttemptOutcome(self.root, ()))

    def record(self, stdout: str, left: ResultFile) -> tuple[Node, dict[str, Any], Any]:
        """Parse and record as the engine does; return the recorded node, the ledger row's
        ``parsed`` as built, and the evaluation."""
        result = CommandResult("python3 evaluate.py", 0, None, False, None, stdout, "",
                               len(stdout), 0, False, 5, 5, True, "sha256:0")
        evaluation = parse_evaluation(result, left, Direction.MINIMIZE, 10)
        seq = next(self.seq)
        parsed = {"timed_out": False, **evaluation.parsed()}
        event = LedgerEvent(Actor.EVAL, result.command, exit=0, parsed=parsed,
                            node_id=node_id_for(self.run_id, seq))
        node = Node(node_id_for(self.run_id, seq), self.run_id, self.root.node_id, seq, 1,
                    None, evaluation.status, evaluation.valid, evaluation.score,
                    evaluation.raw_score, evaluation.feedback, evaluation.metrics,
                    candidate_hash=evaluation.candidate_hash, evidence=(event.event_id,),
                    created_at=time.time())
        recorded = record_outcome(self.store, self.run_id, AttemptOutcome(node, (event,)))
        return recorded.node, parsed, evaluation


def _check(recording: _Recording, stdout: str, left: ResultFile) -> None:
    node, parsed, evaluation = recording.record(stdout, left)
    # the parser's verdict was kept as it is: the run loop's last line was not needed
    assert node.status is evaluation.status, node.feedback
    assert node.feedback == evaluation.feedback
    node.feedback.encode("utf-8")
    if evaluation.status in (NodeStatus.OK, NodeStatus.INVALID):
        if node.raw_score is not None:
            assert math.isfinite(node.raw_score) and abs(node.raw_score) <= MAX_ABS_SCORE
        encoded = json.dumps(dict(node.metrics), ensure_ascii=False, allow_nan=False)
        assert len(encoded.encode()) <= MAX_METRICS_BYTES
    else:
        assert evaluation.status is NodeStatus.ERROR and node.score is None
        assert node.feedback.startswith("evaluator result rejected: ")
    assert recording.store.get_node(node.node_id) == node
    rows = [r for r in recording.store.ledger(recording.run_id)
            if r.event.node_id == node.node_id and r.event.actor is Actor.EVAL]
    assert len(rows) == 1
    assert rows[0].event.parsed == json.loads(json.dumps(parsed))


def test_any_printed_verdict_is_recorded_and_read_back(tmp_path: Path) -> None:
    store = SqliteRunStore.open(tmp_path / "store", writer=True, holder="fuzz")
    recording = _Recording(store)

    @FUZZ
    @given(VERDICT_BYTES, st.booleans())
    def check(data: bytes, as_file: bool) -> None:
        if as_file:
            _check(recording, "", ResultFile(data))
        else:  # stdout reaches the parser decoded as the sandbox decodes it
            _check(recording, data.decode("utf-8", "replace"), ResultFile())

    try:
        check()
        assert store.verify(recording.run_id).ok
    finally:
        store.close()


def test_peer_style_result_files_never_crash(tmp_path: Path) -> None:
    """A peer evaluator's files (OpenEvolve's, ShinkaEvolve's), as the adapter reports them on
    its stdout, go through their own translation first; whatever they hold, and whatever the
    report's line holds instead, the verdict is recorded."""
    from dreamrsi.engine.peers import read_verdict
    from dreamrsi.tasks.peers.verdicts import REPORT_KEY, RESULT_FILES

    store = SqliteRunStore.open(tmp_path / "store", writer=True, holder="fuzz")
    recording = _Recording(store)

    class _Peer:
        def __init__(self, style: str) -> None:
            self.style = style
            self.result_files = RESULT_FILES[style]

    class _Task:
        def __init__(self, style: str) -> None:
            self.peer = _Peer(style)

    @FUZZ
    @given(st.sampled_from(sorted(RESULT_FILES)), st.lists(VERDICT_BYTES, min_size=2,
                                                            max_size=2), st.booleans())
    def check(style: str, contents: list[bytes], as_report: bool) -> None:
        if as_report:  # files as the adapter reports them (lone surrogates kept)
            files = {name: data.decode("utf-8", "surrogateescape")
                     for name, data in zip(RESULT_FILES[style], contents, strict=False)}
            stdout = json.dumps({REPORT_KEY: files}) + "\n"
        else:  # a last line that is no report at all
            stdout = contents[0].decode("utf-8", "replace")
        result = CommandResult("python3 -m _dreamrsi_peer", 0, None, False, None, stdout, "",
                               len(stdout), 0, False, 5, 5, True, "sha256:0")
        _check(recording, stdout, read_verdict(_Task(style), result))  # type: ignore[arg-type]

    try:
        check()
        assert store.verify(recording.run_id).ok
    finally:
        store.close()
