"""Trace import: every format normalised, credentials redacted before anything is stored,
each trace stored once and staged, bad files refused whole, sizes bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.knowledge.check import load_outputs
from dreamrsi.knowledge.traces import Limits, import_files, import_run, judge, load_trajectory
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_node, make_run
from dreamrsi.testing.store_state import store_state

from . import samples


@pytest.fixture
def store(tmp_path: Path) -> SqliteRunStore:
    handle = SqliteRunStore.open(tmp_path / "store", writer=True, holder="test")
    yield handle
    handle.close()


def test_a_generic_trace_is_normalised_and_staged(store: SqliteRunStore,
                                                  tmp_path: Path) -> None:
    [done] = import_files(store, [samples.generic(tmp_path / "t.jsonl")], now=5.0)
    r = done.record
    assert done.new and r.status == "staged" and r.source_format == "jsonl"
    assert (r.task, r.session_id, r.outcome, r.steps, r.tool_calls) == (
        "refunds", "s-1", "failure", 4, 1)
    assert r.cost_usd == pytest.approx(0.01) and r.imported_at == 5.0
    assert dict(r.feedback)["thumbs_down"] == 1 and dict(r.feedback)["evals_failed"] == 1
    record, t = load_trajectory(store, r.trace_id[:10])
    assert record == r
    call = t.steps[2].tool_calls[0]
    assert (call.name, call.call_id, call.result) == ("refund", "c1", "refunded")
    assert [f.step for f in t.feedback] == [2, None]  # message 3 is the tool's answer to step 2
    assert t.steps[1].t is not None


def test_claude_code_codex_and_otel_sessions(store: SqliteRunStore, tmp_path: Path) -> None:
    done = import_files(store, [samples.claude_code(tmp_path / "cc.jsonl"),
                                samples.codex(tmp_path / "rollout-1.jsonl"),
                                samples.otel(tmp_path / "spans.json")])
    cc, cx, ot1, ot2 = (load_trajectory(store, i.record.trace_id)[1] for i in done)
    assert (cc.source_format, cc.session_id, cc.task) == ("claude-code", "cc-7", "shop")
    assert [s.role for s in cc.steps] == ["user", "assistant", "assistant"]
    assert cc.steps[2].text == "Still running." and cc.steps[2].tokens_in == 0  # counted once
    [bash] = cc.steps[1].tool_calls
    assert (bash.name, bash.result, bash.error) == ("Bash", "1 failed", True)
    assert json.loads(bash.arguments) == {"command": "pytest -q"}
    assert (cc.steps[1].tokens_in, cc.steps[1].tokens_out) == (100, 7)
    assert (cx.source_format, cx.session_id, cx.meta["model"]) == ("codex", "cx-9",
                                                                   "gpt-5-codex")
    assert [s.role for s in cx.steps] == ["user", "assistant", "assistant"]
    assert cx.steps[1].tool_calls[0].name == "shell" and "a.py" in str(
        cx.steps[1].tool_calls[0].result)
    assert cx.steps[1].tokens_in == 100 and cx.steps[1].text == "Let me look."
    assert ot1.session_id == "conv-1" and [(s.role, s.text) for s in ot1.steps] == [
        ("user", "weather in Paris?"), ("assistant", ""), ("user", "and tomorrow?"),
        ("assistant", "It rains.")]
    assert ot1.steps[1].tool_calls[0].result == "rain" and ot1.steps[1].tokens_in == 20
    assert ot1.feedback[0].passed is True and ot1.feedback[0].step == 3
    assert ot1.outcome == "success" and ot2.meta["trace_id"] == "t2"
    assert [i.record.source for i in done][2:] == [f"{tmp_path / 'spans.json'}#1",
                                                   f"{tmp_path / 'spans.json'}#2"]


def test_a_trace_holding_an_api_key_is_stored_redacted(tmp_path: Path) -> None:
    root = tmp_path / "store"
    path = samples.generic(tmp_path / "t.jsonl")
    with path.open("a") as f:
        f.write(json.dumps({"role": "user", "content": f"Authorization: Bearer {samples.API_KEY}"
                            " and AKIAIOSFODNN7EXAMPLE, mail ann@example.com"}) + "\n")
    with SqliteRunStore.open(root, writer=True, holder="test") as store:
        [done] = import_files(store, [path], emails=True)
        _, t = load_trajectory(store, done.record.trace_id)
        assert "redacted:" in done.record.note
    text = json.dumps([s._asdict() for s in t.steps])
    assert "[REDACTED:" in text and "ann@example.com" not in text
    for secret in (samples.API_KEY, "AKIAIOSFODNN7EXAMPLE", "A1b2C3d4E5f6G7h8"):
        for f in root.rglob("*"):
            if f.is_file():
                assert secret.encode() not in f.read_bytes(), f


def test_the_same_trace_is_never_imported_twice(store: SqliteRunStore, tmp_path: Path) -> None:
    first = samples.generic(tmp_path / "a.jsonl")
    [one] = import_files(store, [first])
    again = import_files(store, [first, samples.generic(tmp_path / "b.jsonl", thumb="up")])
    assert [i.new for i in again] == [False, True]
    assert again[0].record == one.record
    assert len(store.list_traces()) == 2


@pytest.mark.parametrize(("text", "message"), [
    ('{"role": "user", "content": "hi"}\n{"role": "user", "content": \n', "b.jsonl:2: not JSON"),
    ('{"role": "user", "content": "hi"}\n[1, 2]\n', "b.jsonl:2: a JSON list, not an object"),
    ('{"role": "robot", "content": "hi"}\n', "b.jsonl:1: a message's role"),
    ('{"role": "user", "content": 5}\n', "b.jsonl:1: content is neither text"),
    ('{"role": "user", "content": "x"}\n{"type": "feedback", "thumb": "meh"}\n',
     "b.jsonl:2: thumb is neither"),
    ('{"role": "user", "content": "x"}\n{"type": "feedback", "step": 4, "thumb": "up"}\n',
     "b.jsonl:2: feedback on message 4"),
    ('{"role": "user", "tokens_in": "many"}\n', "b.jsonl:1: tokens_in is not a whole number"),
    ("", "no records"),
    ("\xff", None),
])
def test_a_malformed_file_imports_nothing(store: SqliteRunStore, tmp_path: Path, text: str,
                                          message: str | None) -> None:
    good = samples.generic(tmp_path / "a.jsonl")
    bad = tmp_path / "b.jsonl"
    if message is None:
        bad.write_bytes(b'{"role": "user", "content": "x"}\n\xff\n')
        message = "b.jsonl:2: not UTF-8"
    else:
        bad.write_text(text)
    before = store_state(store)
    with pytest.raises(ConfigError, match=message):
        import_files(store, [good, bad], fmt="jsonl")
    assert store_state(store) == before


def test_formats_are_checked(store: SqliteRunStore, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown trace format 'yaml'"):
        import_files(store, [samples.generic(tmp_path / "a.jsonl")], fmt="yaml")
    with pytest.raises(ConfigError, match="a.jsonl:1: not an OTLP JSON export"):
        import_files(store, [tmp_path / "a.jsonl"], fmt="otel")
    with pytest.raises(ConfigError, match="a.jsonl:1: not a Codex record"):
        import_files(store, [tmp_path / "a.jsonl"], fmt="codex")
    with pytest.raises(ConfigError, match="cannot read it"):
        import_files(store, [tmp_path / "missing.jsonl"])


def test_sizes_are_bounded(store: SqliteRunStore, tmp_path: Path) -> None:
    path = samples.write_lines(tmp_path / "long.jsonl", [
        {"role": "user", "content": f"step {k} " + "x" * 50} for k in range(30)])
    with pytest.raises(ConfigError, match="over the limit of 100 bytes for a trace file"):
        import_files(store, [path], limits=Limits(max_file_bytes=100))
    with pytest.raises(ConfigError, match="long.jsonl:1: a line over the limit of 40 bytes"):
        import_files(store, [path], limits=Limits(max_line_bytes=40))
    with pytest.raises(ConfigError, match="long.jsonl:11: more than 10 records in one file"):
        import_files(store, [path], limits=Limits(max_records=10))
    [done] = import_files(store, [path], limits=Limits(max_steps=10, max_text_chars=20))
    _, t = load_trajectory(store, done.record.trace_id)
    assert len(t.steps) == 10 and t.steps[0].text.endswith("[... 37 characters dropped]")
    assert "kept the first 10 of 30 steps" in done.record.note
    assert "truncated: 10 texts over their limit (20 characters" in done.record.note


def test_a_device_a_fifo_or_a_folder_is_refused(store: SqliteRunStore, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), fifo):
        with pytest.raises(ConfigError, match="not a regular file"):
            import_files(store, [path])
    with pytest.raises(ConfigError, match="cannot read it .Is a directory"):
        import_files(store, [tmp_path])
    with pytest.raises(ConfigError, match="not a regular file"):
        load_outputs(Path("/dev/zero"))


@pytest.mark.parametrize(("record", "message"), [
    ({"role": "user", "tokens_in": 1e400}, "tokens_in is not a whole number"),
    ({"role": "user", "tokens_in": 2**70}, "tokens_in is negative or too large"),
    ({"role": "user", "cost_usd": -1}, "cost_usd is negative"),
    ({"role": "user", "cost_usd": "NaN"}, "cost_usd is not a finite number"),
    ({"role": "user", "cost_usd": 1e300}, "cost_usd is not a finite number .of at most"),
])
def test_numbers_out_of_range_are_refused(store: SqliteRunStore, tmp_path: Path,
                                          record: dict[str, object], message: str) -> None:
    path = samples.write_lines(tmp_path / "n.jsonl", [record])
    with pytest.raises(ConfigError, match=f"n.jsonl:1: {message}"):
        import_files(store, [path])


def test_lone_surrogates_are_stored_as_utf8(store: SqliteRunStore, tmp_path: Path) -> None:
    path = tmp_path / "s\udcff.jsonl"
    path.write_text('{"role": "user", "content": "a \\ud800 b"}\n', errors="surrogateescape")
    [done] = import_files(store, [path])
    assert done.record.source.endswith("s?.jsonl")
    assert load_trajectory(store, done.record.trace_id)[1].steps[0].text == "a ? b"


def test_odd_times_are_left_out(store: SqliteRunStore, tmp_path: Path) -> None:
    path = samples.write_lines(tmp_path / "t.jsonl", [{"role": "user", "t": 1e400},
                                                      {"role": "user", "t": "99999-01-01"}])
    [done] = import_files(store, [path])
    assert [s.t for s in load_trajectory(store, done.record.trace_id)[1].steps] == [None, None]


def test_names_and_feedback_are_bounded(store: SqliteRunStore, tmp_path: Path) -> None:
    path = samples.write_lines(tmp_path / "w.jsonl", [
        {"type": "meta", "task": "t" * 5000, "session_id": "s" * 5000},
        {"role": "user", "content": "hi"},
        {"type": "feedback", "thumb": "down", "name": "n" * 5000, "text": "x" * 100}])
    [done] = import_files(store, [path], limits=Limits(max_text_chars=50))
    assert len(done.record.task) < 300 and len(done.record.session_id) < 300
    _, t = load_trajectory(store, done.record.trace_id)
    assert len(t.feedback[0].name) < 300 and t.feedback[0].text.startswith("x" * 50 + "\n[...")
    assert "truncated: 4 texts" in done.record.note


def test_accept_and_reject_are_events(store: SqliteRunStore, tmp_path: Path) -> None:
    [done] = import_files(store, [samples.generic(tmp_path / "a.jsonl")])
    tid = done.record.trace_id
    assert judge(store, tid[:8], "accepted", now=3.0).status == "accepted"
    with pytest.raises(ConfigError, match="already accepted"):
        judge(store, tid, "accepted")
    with pytest.raises(ConfigError, match="accepted or rejected, not 'trusted'"):
        judge(store, tid, "trusted")
    judge(store, tid, "rejected", reason="leaks")
    assert store.get_trace(tid).status == "rejected"
    events = store.knowledge_events(subject=tid)
    assert [(e.kind, e.payload["from"]) for e in events] == [("trace.accepted", "staged"),
                                                              ("trace.rejected", "accepted")]
    with pytest.raises(NotFound):
        judge(store, "ffff", "accepted")


def test_an_otel_file_without_genai_spans_is_refused(store: SqliteRunStore,
                                                     tmp_path: Path) -> None:
    path = tmp_path / "http.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t", "spanId": "s", "name": "GET", "attributes": []}]}]}]}))
    with pytest.raises(ConfigError, match="http.json:1: no gen_ai inference or tool spans"):
        import_files(store, [path])


def test_a_run_branches_become_trajectories(store: SqliteRunStore) -> None:
    run = make_run()
    store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest, {}))
    store.create_run(run)
    store.add_nodes([make_node(run.run_id, 0, None), make_node(run.run_id, 1, 0),
                     make_node(run.run_id, 2, 1), make_node(run.run_id, 3, 0)])
    done = import_run(store, run.run_id)
    assert sorted(i.record.steps for i in done) == [2, 3]
    _, t = load_trajectory(store, done[0].record.trace_id)
    assert t.source_format == "run" and t.task == run.task_name
    assert t.steps[0].role == "user" and t.feedback[0].name == "evaluator"
    assert t.steps[1].tool_calls[0].name == "evaluate"
    assert [i.new for i in import_run(store, run.run_id[:6])] == [False, False]
    with pytest.raises(NotFound):
        import_run(store, "nope")


@pytest.mark.usefixtures("bwrap")
def test_a_dream_runs_dreams_become_trajectories(tmp_path: Path) -> None:
    from dreamrsi.repo_runs import verbs
    from dreamrsi.repo_runs.opening import OpenRequest
    from dreamrsi.repo_runs.session import Session
    from tests.repo_runs.repos import FIXED, make_repo

    repo = make_repo(tmp_path / "repo")
    with SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        state = verbs.open_run(store, OpenRequest(repo, "make add() add", "python3 check.py",
                                                  verdict="json", protect=("check.py",)))
        s = Session(store, state.run_id)
        verbs.checkpoint(s, "d1", "try nothing")
        (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
        verbs.checkpoint(s, "d1", "fix add")
        d2 = verbs.fork(s, "d1", at=s.state().root_node)
        verbs.checkpoint(s, d2.dream_id, "a second look")
        done = import_run(store, state.run_id)
        trajectories = [load_trajectory(store, i.record.trace_id)[1] for i in done]
    by_steps = sorted(trajectories, key=lambda t: len(t.steps))
    assert [len(t.steps) for t in by_steps] == [2, 3]  # the root, then each dream's checkpoints
    d1 = by_steps[1]
    assert [(f.value, f.passed, f.step) for f in d1.feedback] == [(0.0, True, 1), (1.0, True, 2)]
    assert [f.text for f in d1.feedback] == ["add(2, 3) is not 5", "add works"]
    assert d1.steps[2].text == "fix add" and d1.steps[2].tool_calls[0].result == "add works"
