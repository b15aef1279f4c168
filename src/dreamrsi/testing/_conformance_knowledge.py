"""Conformance tests of the knowledge tables: imported traces and the knowledge event log."""

from __future__ import annotations

import pytest

from dreamrsi.errors import AlreadyRecorded, ConfigError, NotFound
from dreamrsi.store.base import RunStore
from dreamrsi.store.knowledge import TraceRecord
from dreamrsi.testing.store_state import store_state


def _trace(trace_id: str, at: float, status: str = "staged") -> TraceRecord:
    return TraceRecord(trace_id, "jsonl", "a.jsonl", at, status, "d" * 64, "triage", "s1",
                       "failure", 0.25, 3, 1, {"thumbs_down": 1}, "")


class KnowledgeTableTests:
    """Traces are stored once and only change status; the knowledge log only grows, in
    order."""

    def test_traces(self, empty: RunStore) -> None:
        empty.put_trace(_trace("ab12", 2.0))
        empty.put_trace(_trace("ab34", 1.0))
        with pytest.raises(AlreadyRecorded):
            empty.put_trace(_trace("ab12", 3.0, "accepted"))
        assert empty.get_trace("ab12") == _trace("ab12", 2.0)
        assert [t.trace_id for t in empty.list_traces()] == ["ab34", "ab12"]
        empty.set_trace_status("ab34", "accepted")
        assert empty.get_trace("ab3").status == "accepted"
        assert [t.trace_id for t in empty.list_traces("staged")] == ["ab12"]
        with pytest.raises(NotFound):
            empty.set_trace_status("zz", "accepted")
        with pytest.raises(ConfigError):
            empty.set_trace_status("ab12", "trusted")
        with pytest.raises(ConfigError):
            empty.put_trace(_trace("cd", 1.0, "trusted"))
        with pytest.raises(ConfigError):
            empty.get_trace("ab")
        with pytest.raises(NotFound):
            empty.get_trace("ef")

    def test_knowledge_events_are_ordered_and_filtered(self, empty: RunStore) -> None:
        first = empty.append_knowledge("pool.ADD", "i1", {"text": "check ids"}, 5.0)
        empty.append_knowledge("lifecycle", "lesson:i1", {"to": "CANDIDATE"}, 1.0)
        empty.append_knowledge("pool.UPVOTE", "i1", {}, 6)
        assert first.seq == 1 and dict(first.payload) == {"text": "check ids"}
        events = empty.knowledge_events()
        assert [(e.seq, e.kind) for e in events] == [(1, "pool.ADD"), (2, "lifecycle"),
                                                     (3, "pool.UPVOTE")]
        assert events[2].t == 6.0 and isinstance(events[2].t, float)
        assert [e.seq for e in empty.knowledge_events(subject="i1")] == [1, 3]
        assert [e.seq for e in empty.knowledge_events(kind_prefix="pool.")] == [1, 3]
        assert empty.knowledge_events(subject="i1", kind_prefix="life") == []

    def test_knowledge_tables_roll_back(self, empty: RunStore) -> None:
        empty.put_trace(_trace("ab12", 2.0))
        empty.append_knowledge("pool.ADD", "i1", {}, 1.0)
        before = store_state(empty)
        with pytest.raises(RuntimeError), empty.atomic():
            empty.set_trace_status("ab12", "rejected")
            empty.put_trace(_trace("cd", 3.0))
            empty.append_knowledge("pool.EDIT", "i1", {"text": "x"}, 2.0)
            raise RuntimeError("undo")
        assert store_state(empty) == before
        assert empty.append_knowledge("pool.EDIT", "i1", {}, 3.0).seq == 2
