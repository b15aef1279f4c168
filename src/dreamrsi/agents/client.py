"""A chat-completions client on the official ``openai`` SDK: retries, a hard deadline, costs.

One :class:`ModelClient` per run, shared by the worker threads. :meth:`ModelClient.chat` never
raises for what an endpoint does: a refused, failed, stalled or oversized call is a
:class:`ChatResult` with ``error`` set, and every HTTP call made is in ``calls`` with what it
cost, so the caller can record and charge it.

- **Where**: ``base_url`` from the task, else ``$OPENAI_BASE_URL``, else the SDK's default.
  The key is read once from the variable the task names (``api_key_env``, default
  ``OPENAI_API_KEY``); it is sent to the endpoint and nowhere else, and
  :meth:`ModelClient.scrub` removes it from any text the endpoint sends back.
- **Which model**: drawn from the task's weighted ``models`` with the attempt's seeded
  ``random.Random`` (so a run with the same seed asks the same models); with none pinned, the
  first id ``GET /v1/models`` lists (asked once per client).
- **Retries**: on 429, 5xx, connection errors and time-outs, at most ``max_retries`` times,
  after ``backoff_s * 2**n`` seconds scaled by a random factor in [0.5, 1) (capped at
  ``backoff_cap_s``; a ``Retry-After`` header, when smaller than the cap, wins). 4xx answers
  other than 429 are not retried.
- **Deadlines**: each call ends after ``call_timeout_s`` (and never after the attempt's own
  deadline) whatever the endpoint does: the SDK's time-out covers a silent socket, and a
  watchdog gives up on a call that trickles bytes past it. A cancel ends the wait at once.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import openai

from dreamrsi.errors import ConfigError
from dreamrsi.tasks.proposers import LlmSettings

__all__ = ["MAX_ANSWER_CHARS", "ChatResult", "ModelCall", "ModelClient"]

MAX_ANSWER_CHARS = 256 * 1024
"""Longest answer accepted; a longer one is an error (its first part is kept as evidence)."""
_REDACTED = "[api key removed]"
_MIN_SECRET = 8
_BODY_SHOWN = 300
"""Characters of an error answer's body (when it is not an OpenAI-style error) in its error."""
_SURROGATE = re.compile("[\ud800-\udfff]")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One HTTP call to the endpoint, as the ledger records it.

    Attributes:
        kind: ``"chat"`` or ``"models"`` (the ``GET /v1/models`` look-up).
        model: The model asked (empty for a look-up).
        try_no: 1 for the first try of a request, 2 for its first retry, ...
        request: The request body as sent (JSON bytes; no key, no headers).
        answer: The answer's text (the model ids for a look-up), scrubbed and capped.
        answer_chars: Its length before the cap.
        tokens_in: Prompt tokens (the endpoint's count, else an estimate).
        tokens_out: Answer tokens (likewise).
        usage_estimated: True when the endpoint reported no usage (4 characters a token).
        money_usd: What the tokens cost at the task's price for the model (0 without one).
        priced: Whether the task has a price for the model.
        latency_ms: Wall time of the call.
        status: The HTTP status, None when no answer came.
        error: What went wrong, None for a usable answer.
        retryable: Whether the error was worth another try.
    """

    kind: str
    model: str
    try_no: int
    request: bytes
    answer: str | None = None
    answer_chars: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usage_estimated: bool = False
    money_usd: float = 0.0
    priced: bool = False
    latency_ms: int = 0
    status: int | None = None
    error: str | None = None
    retryable: bool = False

    @property
    def unreachable(self) -> bool:
        """Whether the call failed for the endpoint's sake, whatever was asked: no connection,
        no answer or no HTTP answer at all, a key refused (401, 403), a model or route it does
        not serve (404), too many requests (429), a server error (5xx), a failed model
        look-up. An answer that came but is unusable (no text, too long, not a completion) or
        a request the endpoint rejected (400, 413, 422) is not."""
        if self.error is None:
            return False
        status = self.status
        return self.kind == "models" or status is None or status in _UNREACHABLE \
            or status >= 500


_UNREACHABLE = frozenset({401, 403, 404, 408, 429})


@dataclass(frozen=True, slots=True)
class ChatResult:
    """The outcome of one request, retries included.

    Attributes:
        model: The model asked (None when none could be found).
        answer: The text of the answer (None on error).
        calls: Every HTTP call made, in order.
        error: Why there is no usable answer, else None.
        timed_out: The attempt's deadline ended before an answer came.
        cancelled: The caller's cancel event was set.
    """

    model: str | None
    answer: str | None
    calls: tuple[ModelCall, ...]
    error: str | None = None
    timed_out: bool = False
    cancelled: bool = False

    @property
    def infrastructure(self) -> bool:
        """Whether there is no answer because the endpoint failed (every call was
        :attr:`ModelCall.unreachable`), not because of what was asked or answered: what
        ends a run after a few attempts in a row (a cancel is not such a failure)."""
        return (self.answer is None and not self.cancelled and bool(self.calls)
                and all(call.unreachable for call in self.calls))


class _Stop(Exception):
    """A bounded call ended without a value: ``reason`` is ``deadline`` (the attempt's),
    ``call`` (the call's own time-out) or ``cancelled``."""

    def __init__(self, reason: str, waited_ms: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.waited_ms = waited_ms


class ModelClient:
    """Calls one OpenAI-compatible endpoint for one run; safe to share between threads.

    Args:
        settings: The task's ``[proposer]`` model settings.
        environ: Where the key and ``OPENAI_BASE_URL`` are read (default ``os.environ``).
        backoff_s: First retry delay.
        backoff_cap_s: Longest retry delay.

    Raises:
        ConfigError: The endpoint's URL is unusable.
    """

    def __init__(self, settings: LlmSettings, *, environ: Mapping[str, str] | None = None,
                 backoff_s: float = 0.5, backoff_cap_s: float = 8.0) -> None:
        env = os.environ if environ is None else environ
        secret = env.get(settings.api_key_env) or ""
        self.settings = settings
        self.backoff_s = backoff_s
        self.backoff_cap_s = backoff_cap_s
        self._secret = secret if len(secret) >= _MIN_SECRET else ""
        base_url = settings.base_url or env.get("OPENAI_BASE_URL") or None
        try:
            self._sdk = openai.OpenAI(api_key=secret or "not-set", base_url=base_url,
                                      max_retries=0, timeout=settings.call_timeout_s)
        except Exception as exc:  # the SDK's URL parser raises its own types
            raise ConfigError(f"cannot use the endpoint {base_url!r} ({type(exc).__name__})",
                              key="proposer.base_url",
                              expected="an http(s) URL such as http://127.0.0.1:8000/v1"
                              ) from None
        self.endpoint = _public_url(str(self._sdk.base_url))
        self._lock = threading.Lock()
        self._discovered: str | None = None

    def __repr__(self) -> str:
        return f"ModelClient({self.endpoint!r})"

    def close(self) -> None:
        """Close the connections (a call still waiting on a stalled endpoint then ends)."""
        self._sdk.close()

    def scrub(self, text: str) -> str:
        """``text`` without the key (an endpoint could echo it back) and without lone
        surrogates (JSON can carry them, UTF-8 cannot: each becomes U+FFFD)."""
        text = _SURROGATE.sub("\ufffd", text)
        return text.replace(self._secret, _REDACTED) if self._secret else text

    def probe(self) -> tuple[str | None, str]:
        """Ask the endpoint once, without retries, whether it serves this task's models.

        ``GET /v1/models`` first: it must answer and list every model the task pins (none
        pinned: at least one). Where the look-up is not served (404, 405, 501) and a model is
        pinned, one small chat call (a few tokens) to the first pinned model instead.

        Returns:
            ``(problem, detail)``: ``problem`` is None when the endpoint answered as needed;
            ``detail`` says what it answered (or the problem again).
        """
        deadline = time.monotonic() + self.settings.call_timeout_s + 1
        cancel = threading.Event()
        pinned = [m.name for m in self.settings.models]
        try:
            listed = self._bounded(self._list_models, deadline, cancel)
        except _Stop:
            listed = ModelCall("models", "", 1, b"", error="GET /v1/models gave no answer "
                               f"within {self.settings.call_timeout_s:g} s")
        if listed.error is None and listed.answer is not None:
            ids = listed.answer.split("\n")
            missing = [m for m in pinned if m not in ids]
            shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
            if missing:
                problem = (f"{self.endpoint} does not list the model "
                           f"{', '.join(repr(m) for m in missing)} (it lists {shown})")
                return problem, problem
            return None, f"{self.endpoint} answers and lists {shown}"
        if not pinned or listed.status not in (404, 405, 501):
            problem = f"{self.endpoint}: {_without_pin_note(listed.error or 'no answer')}"
            return problem, problem
        body = {"model": pinned[0], "temperature": 0.0, "max_tokens": 8,
                "messages": [{"role": "user", "content": "Answer with the word OK."}]}
        request = json.dumps(body).encode()
        try:
            call = self._bounded(functools.partial(self._chat_once, body, request, 1),
                                 deadline, cancel)
        except _Stop:
            call = ModelCall("chat", pinned[0], 1, request, error="no answer within "
                             f"{self.settings.call_timeout_s:g} s")
        if call.status != 200:  # an answer without text still shows the model is served
            problem = f"{self.endpoint}: {call.error}"
            return problem, problem
        return None, f"{self.endpoint} answers a small call to {pinned[0]!r}"

    # -- one request -----------------------------------------------------------------------

    def chat(self, messages: Sequence[Mapping[str, str]], rng: random.Random, *,
             deadline: float, cancel: threading.Event | None = None) -> ChatResult:
        """Ask a model for an answer to ``messages``, retrying what is worth retrying.

        Args:
            messages: Chat messages (``role``, ``content``).
            rng: The attempt's seeded generator (draws the model).
            deadline: ``time.monotonic()`` value after which no call is made or waited on.
            cancel: Set to give up at once.

        Returns:
            The answer or the reason there is none, with every call made.
        """
        cancel = cancel or threading.Event()
        calls: list[ModelCall] = []
        try:
            model = self._choose(rng, deadline, cancel, calls)
        except _Stop as stop:
            return _stopped(None, calls, stop)
        if model is None:
            return ChatResult(None, None, tuple(calls), calls[-1].error if calls else
                              "no model to ask")
        body = {"model": model, "messages": [dict(m) for m in messages],
                "temperature": self.settings.temperature,
                "max_tokens": self.settings.max_tokens}
        request = json.dumps(body, ensure_ascii=False, sort_keys=True).encode()
        jitter = random.Random()
        for try_no in range(1, self.settings.max_retries + 2):
            try:
                call = self._bounded(functools.partial(self._chat_once, body, request,
                                                       try_no), deadline, cancel)
            except _Stop as stop:
                if stop.reason != "call":
                    return _stopped(model, calls, stop)
                call = ModelCall("chat", model, try_no, request, latency_ms=stop.waited_ms,
                                 error=f"no answer within {self.settings.call_timeout_s:g} s "
                                 "(the endpoint kept the call open)", retryable=True)
            calls.append(call)
            if call.error is None:
                return ChatResult(model, call.answer, tuple(calls))
            if not call.retryable or try_no > self.settings.max_retries:
                break
            delay = min(self.backoff_cap_s, self.backoff_s * 2 ** (try_no - 1))
            delay *= 0.5 + jitter.random() / 2
            if time.monotonic() + delay >= deadline:
                return _stopped(model, calls, _Stop("deadline"))
            if cancel.wait(delay):
                return _stopped(model, calls, _Stop("cancelled"))
        return ChatResult(model, None, tuple(calls), _gave_up(calls))

    def _choose(self, rng: random.Random, deadline: float, cancel: threading.Event,
                calls: list[ModelCall]) -> str | None:
        """The model of this request: drawn from the pinned ones, else the endpoint's first."""
        models = self.settings.models
        if models:
            return rng.choices([m.name for m in models], [m.weight for m in models])[0]
        with self._lock:
            if self._discovered is None:
                try:
                    call = self._bounded(self._list_models, deadline, cancel)
                except _Stop as stop:
                    if stop.reason != "call":
                        raise
                    call = ModelCall("models", "", 1, b"", latency_ms=stop.waited_ms,
                                     error="no model is pinned and GET /v1/models gave no "
                                     f"answer within {self.settings.call_timeout_s:g} s")
                calls.append(call)
                if call.error is None and call.answer:
                    self._discovered = call.answer.split("\n")[0]
            return self._discovered

    def _bounded(self, call: Callable[[float], T], deadline: float,
                 cancel: threading.Event) -> T:
        """Run ``call(timeout)`` on a watchdog: it gets at most ``call_timeout_s`` (and no more
        than is left before ``deadline``); raises :class:`_Stop` when that or a cancel ends
        the wait first."""
        started = time.monotonic()
        limit = min(self.settings.call_timeout_s, deadline - started)
        if limit <= 0:
            raise _Stop("deadline")
        if cancel.is_set():
            raise _Stop("cancelled")
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["value"] = call(limit)
            except BaseException as exc:  # handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=target, name="model-call", daemon=True).start()
        end = started + limit + 0.25  # the SDK's own time-out normally comes first
        while not done.wait(max(0.0, min(0.05, end - time.monotonic()))):
            if cancel.is_set():
                raise _Stop("cancelled")
            if time.monotonic() >= end:
                bound = "deadline" if deadline - started <= self.settings.call_timeout_s \
                    else "call"
                raise _Stop(bound, _ms(started))
        if "error" in box:
            raise box["error"]
        return box["value"]  # type: ignore[no-any-return]

    def _chat_once(self, body: Mapping[str, Any], request: bytes, try_no: int,
                   timeout: float) -> ModelCall:
        model = str(body["model"])
        started = time.monotonic()
        try:
            response = self._sdk.chat.completions.create(
                model=model, messages=body["messages"], temperature=body["temperature"],
                max_tokens=body["max_tokens"], timeout=timeout)
        except openai.OpenAIError as exc:
            return self._failed("chat", model, try_no, request, started, exc, timeout)
        return self._answered(model, try_no, request, started, response)

    def _answered(self, model: str, try_no: int, request: bytes, started: float,
                  response: Any) -> ModelCall:
        latency = _ms(started)
        listed = getattr(response, "choices", None)
        choices = listed if isinstance(listed, list) else []
        message = getattr(choices[0], "message", None) if choices else None
        content = getattr(message, "content", None)
        text = self.scrub(content) if isinstance(content, str) else ""
        usage = getattr(response, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", None)
        tokens_out = getattr(usage, "completion_tokens", None)
        estimated = not isinstance(tokens_in, int) or not isinstance(tokens_out, int)
        if estimated:
            tokens_in, tokens_out = math.ceil(len(request) / 4), math.ceil(len(text) / 4)
        assert isinstance(tokens_in, int) and isinstance(tokens_out, int)
        price = self.settings.prices.get(model)
        money = price.cost(tokens_in, tokens_out) if price else 0.0
        error = None
        if not isinstance(listed, list):
            error = ("the endpoint's answer is not a chat completion (a "
                     f"{type(response).__name__} without a list of choices)")
        elif not isinstance(content, str) or not content.strip():
            reason = getattr(choices[0], "finish_reason", None) if choices else None
            error = f"the answer holds no text (finish_reason {reason!r})"
        elif len(text) > MAX_ANSWER_CHARS:
            error = (f"the answer holds {len(text)} characters, more than the "
                     f"{MAX_ANSWER_CHARS} accepted")
        return ModelCall("chat", model, try_no, request, text[:MAX_ANSWER_CHARS], len(text),
                         max(0, tokens_in), max(0, tokens_out), estimated, money,
                         price is not None, latency, 200, error)

    def _list_models(self, timeout: float) -> ModelCall:
        started = time.monotonic()
        try:
            page = self._sdk.models.list(timeout=timeout)
            ids = [str(m.id) for m in page.data]
        except openai.OpenAIError as exc:
            call = self._failed("models", "", 1, b"", started, exc, timeout)
            error = f"no model is pinned and GET /v1/models failed: {call.error}"
            return ModelCall("models", "", 1, b"", status=call.status, error=error,
                             latency_ms=call.latency_ms)
        if not ids:
            return ModelCall("models", "", 1, b"", latency_ms=_ms(started), status=200,
                             error="no model is pinned and GET /v1/models lists none")
        text = self.scrub("\n".join(ids))
        return ModelCall("models", "", 1, b"", text, len(text), latency_ms=_ms(started),
                         status=200)

    def _failed(self, kind: str, model: str, try_no: int, request: bytes, started: float,
                exc: openai.OpenAIError, timeout: float) -> ModelCall:
        status, retryable = None, True
        if isinstance(exc, openai.APITimeoutError):
            error = f"no answer within {timeout:.3g} s"
        elif isinstance(exc, openai.APIConnectionError):
            error = f"connection failed ({_cause(exc)})"
        elif isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            retryable = status == 429 or status >= 500
            error = f"HTTP {status}: {self.scrub(_status_message(exc))[:500]}"
            if status == 404 and model:
                error += f" (is '{model}' a model this endpoint serves? check `models`)"
            if status in (401, 403):
                error += f" (check the key in ${self.settings.api_key_env})"
        else:
            retryable = False
            error = f"unusable answer ({type(exc).__name__}: {self.scrub(str(exc))[:300]})"
        return ModelCall(kind, model, try_no, request, latency_ms=_ms(started), status=status,
                         error=error, retryable=retryable)


def _stopped(model: str | None, calls: list[ModelCall], stop: _Stop) -> ChatResult:
    if stop.reason == "cancelled":
        return ChatResult(model, None, tuple(calls), "the call was cancelled", cancelled=True)
    return ChatResult(model, None, tuple(calls),
                      "the attempt's time ran out waiting for the model"
                      + (f" ({_gave_up(calls)})" if calls else ""), timed_out=True)


def _without_pin_note(error: str) -> str:
    return error.removeprefix("no model is pinned and ")


def _gave_up(calls: Sequence[ModelCall]) -> str:
    tries = sum(c.kind == "chat" for c in calls)
    last = calls[-1].error if calls else "no call made"
    return f"the model call failed after {tries} {'try' if tries == 1 else 'tries'}: {last}"


def _status_message(exc: openai.APIStatusError) -> str:
    """What an error answer says, on one line: the ``error.message`` of an OpenAI-style body,
    else the status's reason phrase and the start of the body (a proxy's HTML page, say),
    where the SDK's own message would say only "Error code: N"."""
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return " ".join(str(inner["message"]).split())
    try:
        phrase = exc.response.reason_phrase
        text = exc.response.text
    except Exception:  # a body that cannot be read or decoded: the SDK's message only
        return " ".join(str(exc.message).split())
    start = " ".join(text[:_BODY_SHOWN].split())
    said = "; ".join(part for part in (phrase, start and f"body: {start}") if part)
    return said or " ".join(str(exc.message).split())


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause else str(exc)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _public_url(url: str) -> str:
    """``url`` without a user, password or query, which could hold a secret."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))
