"""``dreamrsi task check`` asks a model proposer's endpoint (unless --offline) and lets the
model propose once."""

from __future__ import annotations

import pytest

from tests.agents.conftest import KEY, LlmTaskFactory, improve
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.engine.test_check import check


@pytest.mark.usefixtures("key_env")
def test_the_endpoint_is_asked_and_the_model_proposes_once(llm_task: LlmTaskFactory) -> None:
    with FakeOpenAI(responder=improve) as server:
        task = str(llm_task(server.base_url))
        code, out, err = check(task)
        assert code == 0, err
        text = " ".join(out.split())
        assert f"model endpoint works: {server.base_url} answers and lists fake-small" in text
        assert "proposer works: child ok, valid True, score 2" in text
        headers = {k.lower(): v for k, v in server.chats[0].headers.items()}
        assert len(server.chats) == 1 and headers["authorization"] == f"Bearer {KEY}"
        before = len(server.requests)
        code, out, err = check(task, "--offline")
        assert code == 0, err
        assert len(server.requests) == before  # nothing asked
        assert "not checked: the model endpoint (offline); the proposer (a model's, and " \
            "offline)" in " ".join(out.split())


@pytest.mark.usefixtures("key_env")
def test_a_refused_key_fails_the_check(llm_task: LlmTaskFactory) -> None:
    with FakeOpenAI() as server:
        server.models_error = Reply.error(401, "Incorrect API key provided")
        code, _, err = check(str(llm_task(server.base_url)))
        assert code == 1
        assert "GET /v1/models failed: HTTP 401: Incorrect API key provided (check the key in " \
            "$OPENAI_API_KEY)" in " ".join(err.split())
        assert not server.chats  # the proposer is not run against a refusing endpoint


@pytest.mark.usefixtures("key_env")
def test_an_endpoint_that_serves_no_model_fails_the_check(llm_task: LlmTaskFactory) -> None:
    with FakeOpenAI(models=()) as server:
        code, _, err = check(str(llm_task(server.base_url)))
    assert code == 1 and "GET /v1/models lists none" in err


@pytest.mark.usefixtures("key_env")
def test_an_endpoint_without_a_models_listing_gets_one_small_call(
        llm_task: LlmTaskFactory) -> None:
    with FakeOpenAI(responder=improve) as server:
        server.models_error = Reply.error(404, "no such route")
        code, out, err = check(str(llm_task(server.base_url)), "--no-propose")
        assert code == 0, err
        assert "answers a small call to 'fake-small'" in " ".join(out.split())
        assert len(server.chats) == 1 and server.chats[0].body["max_tokens"] == 8  # type: ignore[index]
