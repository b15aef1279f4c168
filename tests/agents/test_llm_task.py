"""An ``llm`` task file: its paths and the key's variable are checked when it loads."""

from __future__ import annotations

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.tasks import load_task
from tests.agents.conftest import LlmTaskFactory

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(("proposer", "constraints", "key", "why"), [
    ('files = ["evaluate.py"]\n', "", "proposer.files", "is a protected path"),
    ('files = ["../task.toml"]\n', "", "proposer.files", "must be relative"),
    ('files = ["missing.py"]\n', "", "proposer.files", "is not a file of the seed"),
    ('files = ["lib/x.py"]\n', "", "proposer.files", "goes through the symbolic link"),
    ('prompt_dir = "../elsewhere"\n', "", "proposer.prompt_dir", "not a folder of the task"),
    ("", 'pass_env = ["OPENAI_API_KEY"]', "constraints.pass_env", "the model's key"),
    ('api_key_env = "MY_KEY"\n', 'pass_env = ["MY_KEY"]', "constraints.pass_env", r"\$MY_KEY"),
    ('edit_format = "udiff"\n', "", "proposer.edit_format", "invalid value"),
])
def test_bad_settings_name_the_key(llm_task: LlmTaskFactory, proposer: str, constraints: str,
                                   key: str, why: str) -> None:
    task = llm_task(URL, proposer=proposer, constraints=constraints)
    (task / "seed" / "lib").symlink_to(task / "seed")
    with pytest.raises(ConfigError, match=why) as caught:
        load_task(task)
    assert caught.value.key == key


@pytest.mark.parametrize("name", ["system.md", "user.md"])
def test_a_prompt_template_linked_outside_the_task_is_refused(
        llm_task: LlmTaskFactory, tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    """A template that is a link to a file elsewhere would put that file into every prompt."""
    secret = tmp_path_factory.mktemp("outside") / "secret.txt"
    secret.write_text("not the task's")
    task = llm_task(URL, proposer='prompt_dir = "prompts"\n')
    (task / "prompts").mkdir()
    (task / "prompts" / name).symlink_to(secret)
    with pytest.raises(ConfigError, match=f"prompt template prompts/{name} is a symbolic link "
                       "to .*secret.txt, outside the task directory") as caught:
        load_task(task)
    assert caught.value.key == "proposer.prompt_dir"


def test_a_base_url_must_be_http(llm_task: LlmTaskFactory) -> None:
    with pytest.raises(ConfigError, match="proposer.base_url"):
        load_task(llm_task("ftp://127.0.0.1/v1"))


def test_the_prompts_are_part_of_the_digest(llm_task: LlmTaskFactory) -> None:
    task = llm_task(URL, proposer='prompt_dir = "prompts"\nfiles = ["initial_program.py"]\n')
    (task / "prompts").mkdir()
    (task / "prompts" / "user.md").write_text("{{files}}")
    first = load_task(task)
    assert first.proposer.llm and first.proposer.llm.files == ("initial_program.py",)
    (task / "prompts" / "user.md").write_text("{{files}}\n{{history}}")
    assert load_task(task).digest != first.digest
    assert load_task(task).evaluator_digest == first.evaluator_digest
