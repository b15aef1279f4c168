"""The model client against a real loopback server: retries, deadlines, model choice, costs."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator
from types import MappingProxyType

import pytest

from dreamrsi.agents.client import MAX_ANSWER_CHARS, ModelClient
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice, Price
from tests.agents.conftest import KEY
from tests.agents.fake_openai import FakeOpenAI, Reply

HI = [{"role": "user", "content": "hi"}]
PRICES = MappingProxyType({"fake-small": Price(1.0, 2.0)})


def client(server: FakeOpenAI, **kwargs: object) -> ModelClient:
    values: dict[str, object] = {"models": (ModelChoice("fake-small"),),
                                 "base_url": server.base_url, "call_timeout_s": 1.0,
                                 "max_retries": 2, "prices": PRICES}
    values.update(kwargs)
    return ModelClient(LlmSettings(**values),  # type: ignore[arg-type]
                       environ={"OPENAI_API_KEY": KEY}, backoff_s=0.05)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def ask(c: ModelClient, seconds: float = 30.0, seed: int = 1,
        cancel: threading.Event | None = None):  # type: ignore[no-untyped-def]
    return c.chat(HI, random.Random(seed), deadline=time.monotonic() + seconds, cancel=cancel)


def test_an_answer_with_its_tokens_price_and_latency(fake: FakeOpenAI) -> None:
    fake.script = [Reply.text("hello", tokens_in=1000, tokens_out=500)]
    result = ask(client(fake))
    assert result.answer == "hello" and result.error is None and result.model == "fake-small"
    (call,) = result.calls
    assert (call.tokens_in, call.tokens_out, call.priced, call.status) == (1000, 500, True, 200)
    assert call.money_usd == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert call.latency_ms >= 0 and b'"hi"' in call.request and KEY.encode() not in call.request
    seen = fake.chats[0]
    assert seen.body and seen.body["model"] == "fake-small" and seen.body["max_tokens"] == 4096
    auth = {k.lower(): v for k, v in seen.headers.items()}["authorization"]
    assert auth == f"Bearer {KEY}"  # the key goes to the endpoint, and only there


def test_429_then_success_is_retried_after_backoff(fake: FakeOpenAI) -> None:
    fake.script = [Reply.error(429, "slow down", [("Retry-After", "0")]), Reply.text("ok")]
    result = ask(client(fake))
    assert result.answer == "ok"
    assert [(c.status, c.try_no) for c in result.calls] == [(429, 1), (200, 2)]
    assert result.calls[0].retryable and "HTTP 429: slow down" in (result.calls[0].error or "")


def test_500_forever_gives_up_after_max_retries(fake: FakeOpenAI) -> None:
    fake.script = [Reply.error(500, "boom")]
    result = ask(client(fake, max_retries=3))
    assert result.answer is None and not result.timed_out
    assert len(result.calls) == 4 and len(fake.chats) == 4
    assert result.error == "the model call failed after 4 tries: HTTP 500: boom"


PROXY_PAGE = ("<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad "
              "Gateway</h1></center>\n</body>\n</html>\n")


@pytest.mark.parametrize(("reply", "said"), [
    (Reply.raw(PROXY_PAGE, status=502), "HTTP 502: Bad Gateway; body: <html> <head><title>502 "
     "Bad Gateway</title></head> <body> <center><h1>502"),
    (Reply.raw("", status=503), "HTTP 503: Service Unavailable"),
    (Reply.error(500, "line one\n  line two"), "HTTP 500: line one line two"),
    (Reply.raw(f"upstream said {KEY}", status=500), "HTTP 500: Internal Server Error; body: "
     "upstream said [api key removed]"),
])
def test_an_error_answer_is_said_on_one_line_with_its_status(fake: FakeOpenAI, reply: Reply,
                                                             said: str) -> None:
    """The status and what the answer says, one line, the key scrubbed (the SDK's own message
    for a body that is not OpenAI's error JSON is only "Error code: N")."""
    fake.script = [reply]
    (call,) = ask(client(fake, max_retries=0)).calls
    assert call.error is not None and call.error.startswith(said) and "\n" not in call.error
    assert call.status == reply.status and KEY not in call.error


def test_a_stalled_endpoint_is_given_up_at_the_call_deadline(fake: FakeOpenAI) -> None:
    fake.script = [Reply.stall(), Reply.text("late but fine")]
    started = time.monotonic()
    result = ask(client(fake, call_timeout_s=0.5))
    assert result.answer == "late but fine"
    assert time.monotonic() - started < 5
    assert "no answer within 0.5 s" in (result.calls[0].error or "")


def test_a_stalled_endpoint_never_outlives_the_attempt(fake: FakeOpenAI) -> None:
    fake.script = [Reply.stall()]
    started = time.monotonic()
    result = ask(client(fake, call_timeout_s=30, max_retries=5), seconds=1.0)
    assert time.monotonic() - started < 3
    assert result.timed_out and result.answer is None
    assert "time ran out" in (result.error or "")


def test_a_cancel_ends_the_wait_at_once(fake: FakeOpenAI) -> None:
    fake.script = [Reply.stall()]
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    result = ask(client(fake, call_timeout_s=30), cancel=cancel)
    assert result.cancelled and time.monotonic() - started < 2


def test_resets_and_garbage_are_diagnosed(fake: FakeOpenAI) -> None:
    fake.script = [Reply.reset(), Reply.text("after the reset")]
    result = ask(client(fake))
    assert result.answer == "after the reset"
    assert "connection failed" in (result.calls[0].error or "")
    fake.script, fake._calls = [Reply.raw("<html>not json</html>")], 0
    result = ask(client(fake, max_retries=0))
    assert result.answer is None and result.error


def test_a_huge_answer_is_refused_but_charged(fake: FakeOpenAI) -> None:
    fake.script = [Reply.text("x" * 2_000_000, tokens_in=10, tokens_out=500_000)]
    result = ask(client(fake))
    assert result.answer is None and len(result.calls) == 1
    call = result.calls[0]
    assert f"more than the {MAX_ANSWER_CHARS} accepted" in (call.error or "")
    assert call.answer_chars == 2_000_000 and len(call.answer or "") == MAX_ANSWER_CHARS
    assert call.tokens_out == 500_000 and call.money_usd > 0


def test_an_empty_answer_and_missing_usage(fake: FakeOpenAI) -> None:
    fake.script = [Reply.text("", tokens_in=None, tokens_out=None)]
    result = ask(client(fake, max_retries=0))
    assert result.error and "holds no text" in result.error
    fake.script, fake._calls = [Reply.text("four", tokens_in=None, tokens_out=None)], 0
    call = ask(client(fake)).calls[0]
    assert call.usage_estimated and call.tokens_in > 0 and call.tokens_out == 1


def test_a_wrong_model_name_is_a_404_not_retried(fake: FakeOpenAI) -> None:
    result = ask(client(fake, models=(ModelChoice("gpt-nope"),)))
    assert len(result.calls) == 1 and result.calls[0].status == 404
    assert "gpt-nope" in (result.error or "") and "check `models`" in (result.error or "")


def test_the_model_is_found_through_v1_models_when_none_is_pinned() -> None:
    with FakeOpenAI([Reply.text("ok")], models=("served-a", "served-b")) as fake:
        c = client(fake, models=())
        first, second = ask(c), ask(c)
        assert first.model == second.model == "served-a"
        assert [call.kind for call in first.calls] == ["models", "chat"]
        assert [call.kind for call in second.calls] == ["chat"]  # asked once
    with FakeOpenAI(models=()) as fake:
        result = ask(client(fake, models=()))
        assert result.answer is None and "GET /v1/models lists none" in (result.error or "")


def test_weighted_models_are_drawn_from_the_attempts_seed() -> None:
    models = (ModelChoice("a", 3.0), ModelChoice("b", 1.0))
    with FakeOpenAI([Reply.text("ok")], models=("a", "b")) as fake:
        c = client(fake, models=models)
        draws = [ask(c, seed=s).model for s in range(40)]
        assert draws == [ask(c, seed=s).model for s in range(40)]
        assert 20 <= draws.count("a") <= 38 and "b" in draws


def test_the_key_is_scrubbed_from_what_the_endpoint_sends_back(
        fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.script = [Reply.error(401, f"bad key {KEY}"), Reply.text(f"your key is {KEY}")]
    c = client(fake, max_retries=0)
    failed, echoed = ask(c), ask(c)
    assert KEY not in (failed.error or "") and "[api key removed]" in (failed.error or "")
    assert "check the key in $OPENAI_API_KEY" in (failed.error or "")
    assert echoed.answer == "your key is [api key removed]"
    assert KEY not in repr(c) and KEY not in caplog.text


def test_lone_surrogates_become_replacement_characters(fake: FakeOpenAI) -> None:
    """JSON may carry a lone surrogate; UTF-8 (the store, git, blobs) cannot."""
    body = ('{"object": "chat.completion", "model": "fake-small", "choices": [{"index": 0, '
            '"finish_reason": "stop", "message": {"role": "assistant", '
            '"content": "PLAN: \\ud800 half"}}]}')
    fake.script = [Reply.raw(body), Reply.error(400, "bad \ud83d")]
    c = client(fake, max_retries=0)
    answered, failed = ask(c), ask(c)
    assert answered.answer == "PLAN: \ufffd half"
    assert answered.answer.encode() and (failed.error or "").encode()
    assert "bad \ufffd" in (failed.error or "")


def test_an_answer_that_is_not_a_chat_completion_says_so(fake: FakeOpenAI) -> None:
    for body in ("<html>not json</html>", "[1, 2, 3]"):
        fake.script, fake._calls = [Reply.raw(body)], 0
        result = ask(client(fake, max_retries=0))
        assert result.answer is None
        assert "the endpoint's answer is not a chat completion" in (result.error or "")


def test_a_stalled_call_holds_up_no_other(fake: FakeOpenAI) -> None:
    c = client(fake, call_timeout_s=3.0)
    fake.script = [Reply.stall(), Reply.text("second")]
    stalled = threading.Thread(target=ask, args=(c,))
    stalled.start()
    while not fake.chats:
        time.sleep(0.01)
    started = time.monotonic()
    assert ask(c).answer == "second"
    assert time.monotonic() - started < 2.0
    stalled.join()
