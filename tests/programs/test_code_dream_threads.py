"""A program's worker lives as long as the dream that scores it, whichever thread started it.

bubblewrap's ``--die-with-parent`` follows the thread that forked it; the worker used to start
on whichever episode thread asked first and was SIGKILLed when that thread's episode ended, so
benign programs came back as "crash: killed by signal 9" (past 32 trees, every one of them).
"""

from __future__ import annotations

import random

import pytest

from dreamrsi.agents.client import ModelClient
from dreamrsi.agents.policy_author import PolicyAuthor
from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, ReplaySettings
from dreamrsi.dreaming.code import CodeDreaming, CodeSettings, starter_program
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice
from dreamrsi.testing.builders import grid_nodes
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.programs.programs import FRUGAL, answer

pytestmark = [pytest.mark.usefixtures("bwrap"), pytest.mark.slow]
KEY = "sk-code-dream-threads-0123456789"
INCUMBENT = PolicySpec("fixed", {"branches": 2, "refine": 3})


def test_a_dream_over_40_trees_scores_the_starter_and_an_early_stopper_20_times_in_a_row(
        store: SqliteRunStore) -> None:
    rng = random.Random(5)
    trees = [RecordedTree.from_nodes(f"r{i:03d}", grid_nodes(f"r{i:03d}", rng, 3, 4))
             for i in range(40)]
    starter = starter_program(INCUMBENT, 2)
    # the CLI's default: no attempt budget, so K2 is each tree's size
    config = DreamConfig(families=("fixed",), trials=1, keep=1, pool_branches=False,
                         replay=ReplaySettings(workers=2), code=CodeSettings(revisions=2))
    assert config.code is not None
    for attempt in range(20):
        script = [Reply.text(answer(starter)), Reply.text(answer(FRUGAL))]
        with FakeOpenAI(script) as server:
            settings = LlmSettings(models=(ModelChoice("fake-small"),), call_timeout_s=5,
                                   max_retries=0, base_url=server.base_url)
            client = ModelClient(settings, environ={"OPENAI_API_KEY": KEY})
            code = CodeDreaming(config.code, PolicyAuthor(client, store.blobs))
            choice = choose(trees, trees, INCUMBENT, config, QualityScale.of(trees), code=code)
        assert choice.code is not None
        fates = [(r.status, r.kind, r.reason) for r in choice.code.revisions]
        assert [f[0] for f in fates] == ["scored", "scored"], (attempt, fates)
        scored = choice.code.candidates
        assert [len(c.train) for c in scored] == [40, 40]
        # the starter is fixed refinement 2 x 4, the early stopper one branch of three
        assert [s.revealed for s in scored[0].train] == [8.0] * 40
        assert [s.revealed for s in scored[1].train] == [3.0] * 40

