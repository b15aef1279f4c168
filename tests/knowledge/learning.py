"""What the learning tests share: the rule-obeying model on loopback, a store with the
golden set of the test agent, and the state of a config repository's checkout."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dreamrsi.knowledge.goldens import add_goldens, golden_from
from dreamrsi.knowledge.proposal import ConfigEdit, Proposal
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.knowledge_agent import GOLDENS, ISO_RULE, obey
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen

MODELS = ("fake-small", "fake-large", "fake-same")
"""``fake-large`` writes ISO dates without being told; ``fake-same`` behaves as the small."""


def _distilled(messages: list[dict[str, str]]) -> Reply:
    """The distiller's answer: the ISO rule when a failed session's feedback wanted an ISO
    date, else nothing."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    wanted = re.search(r"expected '\d{4}-\d{2}-\d{2}'", text)
    rules = [{"rule": ISO_RULE, "edit": None}] if wanted else []
    return Reply.text(json.dumps({"proposals": rules}))


def _reply(seen: Seen) -> Reply:
    body = seen.body or {}
    messages = body.get("messages", [])
    if messages and str(messages[0].get("content", "")).startswith("You improve an AI agent"):
        return _distilled(messages)
    if any("CRASH" in str(m.get("content", "")) for m in messages):
        return Reply.error(400, "the model refuses")
    native = (ISO_RULE,) if body.get("model") == "fake-large" else ()
    return Reply.text(obey(messages, native))


@contextmanager
def rule_model() -> Iterator[FakeOpenAI]:
    """The loopback model that obeys the rules of its system prompt."""
    with FakeOpenAI(models=MODELS, responder=_reply) as server:
        yield server


def goldens_store(path: Path) -> SqliteRunStore:
    """A writable store holding the test agent's goldens."""
    store = SqliteRunStore.open(path, writer=True)
    add_goldens(store, [golden_from(g, f"golden {n}") for n, g in enumerate(GOLDENS)])
    return store


def rule(text: str, edit: ConfigEdit | None = None) -> Proposal:
    """A proposal as a distiller makes it."""
    return Proposal(text, "dates", ("t-one", "t-two"), "statistical", "g1", edit)


def git(repo: Path, *args: str) -> str:
    """git's stdout in ``repo``."""
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-C",
                           str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def checkout_state(repo: Path) -> tuple[str, str, str, str]:
    """The checked-out branch, HEAD, the status and the working tree's digest of files."""
    files = sorted(p for p in repo.rglob("*") if ".git" not in p.relative_to(repo).parts)
    tree = hashlib.sha256(b"".join(str(p).encode() + (p.read_bytes() if p.is_file() else b"")
                                   for p in files)).hexdigest()
    return (git(repo, "symbolic-ref", "-q", "HEAD"), git(repo, "rev-parse", "HEAD"),
            git(repo, "status", "--porcelain=v1", "--untracked-files=all"), tree)
