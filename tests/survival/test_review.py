"""A reviewer's notes are attached, never admissible, and never change a verdict."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival import Reason, Verdict
from dreamrsi.survival.service import survive
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.survival.helpers import run_task

pytestmark = pytest.mark.usefixtures("bwrap")


def _review(out: object) -> list[object]:
    return [f for f in out.findings if f.reason is Reason.REVIEW_NOTE]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("command", "note"), [
    ("cat value.txt; echo ' looks fine'", "1.0 looks fine"),
    ("echo 'reviewer crashed' >&2; exit 9", "exited 9"),
    ("sleep 30", "timed out"),
])
def test_a_reviewer_command_only_annotates(store: SqliteRunStore, tmp_path: Path,
                                           command: str, note: str) -> None:
    toml = f"""
    [survival]
    timeout_s = 2
    [survival.review]
    command = "{command}"
    """
    run_id = run_task(store, tmp_path / "task", extra_toml=textwrap.dedent(toml), budget=1)
    out = survive(store, run_id, repeats=1, out=tmp_path / "r")
    assert out.verdict is Verdict.SURVIVED
    [found] = _review(out)
    assert note in found.message and not found.fails and not found.admissible
    assert store.verify(run_id).ok


@pytest.mark.slow
def test_a_reviewer_model_sees_the_diff_and_never_gates(store: SqliteRunStore, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    toml = """
    [survival.review]
    model = "fake-small"
    """
    run_id = run_task(store, tmp_path / "task", extra_toml=textwrap.dedent(toml), budget=1)
    root = store.nodes(run_id)[0].node_id
    with FakeOpenAI([Reply.text("REJECT: this looks hard-coded")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        good = survive(store, run_id, repeats=1, out=tmp_path / "good")
        bad = survive(store, run_id, root, repeats=1, out=tmp_path / "bad")
        asked = server.chats[0].user_text()
    assert "value.txt" in asked and "delta" in asked
    assert good.verdict is Verdict.SURVIVED and bad.verdict is Verdict.FAILED
    assert {f.reason for f in bad.findings if f.fails} == {Reason.NO_IMPROVEMENT}
    [note] = _review(good)
    assert "hard-coded" in note.message and not note.admissible
    rows = {r.event.event_id: r.event for r in store.ledger(run_id)}
    assert all(rows[r].actor is Actor.SURVIVAL for r in note.rows)
    narration = [e for e in rows.values() if e.cmd == "review narration"]
    assert narration and not any(e.admissible for e in narration)
    with FakeOpenAI([Reply.error(500)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        failing = survive(store, run_id, repeats=1, out=tmp_path / "failing")
    assert failing.verdict is Verdict.SURVIVED
    assert "no review" in _review(failing)[0].message
