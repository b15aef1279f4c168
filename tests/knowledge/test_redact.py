"""Redaction: each kind of credential replaced wherever it sits in a trajectory; ordinary
text left alone."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from dreamrsi.knowledge.redact import redact_text, redact_trajectory
from dreamrsi.knowledge.trajectory import Feedback, Step, ToolCall, Trajectory

SECRETS = {
    "openai-key": ("key sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2 ok", "A1b2C3d4E5f6G7h8I9j0"),
    "anthropic-key": ("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4", "Zx9Yw8Vu7Ts6Rq5Po4"),
    "aws-access-key": ("id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "aws-secret-key": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                       "wJalrXUtnFEMI"),
    "github-token": ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij"),
    "google-key": ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA123"),
    "google-oauth": ("ya29.a0AfH6SMBx1234567890abcdefg", "ya29.a0AfH6"),
    "slack-token": ("xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
    "slack-webhook": ("https://hooks.slack.com/services/T000/B000/XXXX", "T000/B000"),
    "bearer": ("Authorization: Bearer abc.DEF-123_xyz~9", "abc.DEF-123"),
    "basic-auth": ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpw"),
    "private-key": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH "
                    "PRIVATE KEY-----", "b3BlbnNzaC1rZXk"),
    "stripe-key": ("sk_live_51Habcdefghijklmnop", "51Habcdefghijklmnop"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
            "dozjgNryP4J3"),
    "url-credentials": ("postgres://app:Pa55word@db/x", "Pa55word"),
    "assigned-secret": ('{"client_secret": "q8ZrT4vLp2XmN7wK"}', "q8ZrT4vLp2XmN7wK"),
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_redacted(kind: str) -> None:
    text, secret = SECRETS[kind]
    counts: Counter[str] = Counter()
    out = redact_text(text, counts)
    assert secret not in out and f"[REDACTED:{kind}]" in out
    assert counts[kind] == 1


@pytest.mark.parametrize("text", [
    "max_tokens=4096", "token: the user asked", "tokens_in: 1234", "the secret is out",
    "password: ********", "see key=value", "bob@example.com",
])
def test_ordinary_text_is_kept(text: str) -> None:
    counts: Counter[str] = Counter()
    assert redact_text(text, counts) == text and not +counts


def test_passwords_and_emails() -> None:
    counts: Counter[str] = Counter()
    assert redact_text("PASSWORD=hunter2", counts) == "PASSWORD=[REDACTED:assigned-secret]"
    assert redact_text("mail bob@example.com", counts, emails=True) == "mail [REDACTED:email]"


def test_every_field_of_a_trajectory_is_redacted() -> None:
    key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    t = Trajectory("jsonl", f"s {key}", f"task {key}", "unknown", (
        Step("user", key, (ToolCall(key, f'{{"k": "{key}"}}', key, key),)),),
        (Feedback("eval", 0.0, None, False, key, key),), {"who": key})
    redacted, counts = redact_trajectory(t)
    assert key not in repr(redacted) and counts["github-token"] == 10


@pytest.mark.parametrize("text", ["a" * 2**20, "a." * 2**19, "a@" * 2**19, "x=a " * 2**18,
                                  "token" * 2**18, "a@b." * 2**18, "://a:" * 2**18])
def test_a_long_line_is_redacted_in_linear_time(text: str) -> None:
    start = time.monotonic()
    redact_text(text, Counter(), emails=True)
    assert time.monotonic() - start < 10  # a quadratic scan of a MiB takes hours
