"""dreamrsi's own model client as a Dream Run's agent (``--agent llm``), against an
OpenAI-compatible server on loopback: the brief is its prompt, its edits land in the working
copy, its directives are read, and what it cost is charged to the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.controller import work
from dreamrsi.repo_runs.journal import load_state
from dreamrsi.repo_runs.opening import OpenRequest
from dreamrsi.store.sqlite import SqliteRunStore
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.repo_runs.repos import make_repo

ANSWER = """PLAN: make add() add
HYPOTHESIS: add subtracts || TEST: grep -q 'a - b' lib.py || PREDICTS: pass

lib.py
<<<<<<< SEARCH
    return a - b
=======
    return a + b
>>>>>>> REPLACE
"""


def test_the_model_client_works_a_step(tmp_path: Path, bwrap: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    repo = make_repo(tmp_path / "repo")
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    with FakeOpenAI([Reply.text(ANSWER, tokens_in=300, tokens_out=40)]) as server:
        state = verbs.open_run(store, OpenRequest(
            repo, "make add() add", "python3 check.py", verdict="json", protect=("check.py",),
            constraints=("never touch check.py",), agent="llm", model="fake-small",
            base_url=server.base_url, files=("lib.py",)))
        summary = work(store, state.run_id, steps=1)
        prompt = server.chats[0].user_text()
    (step,) = summary.actions
    assert step["outcome"]["status"] == "ok" and summary.best["score"] == 1.0
    assert "make add() add" in prompt and "never touch check.py" in prompt
    assert "return a - b" in prompt  # the file it may edit, as it was
    hypotheses = list(load_state(store, state.run_id).hypotheses.values())
    assert [h.text for h in hypotheses] == ["add subtracts"]
    rows = list(store.ledger(state.run_id))
    assert any(r.event.cmd.startswith("model chat fake-small") for r in rows)
    charged = [r for r in rows if r.event.cmd == "model step"]
    assert charged[0].event.parsed["tokens_in"] == 300
    store.close()


def test_llm_needs_its_model_and_the_model_options_need_llm(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    with pytest.raises(ConfigError, match="--model"):
        verbs.open_run(store, OpenRequest(repo, "o", "true", verdict="json", agent="llm"))
    with pytest.raises(ConfigError, match="for --agent llm"):
        verbs.open_run(store, OpenRequest(repo, "o", "true", verdict="json", agent="x",
                                          model="m"))
    assert store.list_runs() == []
    store.close()
