"""The llm task and key fixtures of the agents' tests, for the code-dreaming tests."""

from tests.agents.conftest import key_env, llm_task  # noqa: F401
