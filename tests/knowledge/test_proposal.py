"""The one check of a distilled edit's path: a file inside what learning may edit."""

from __future__ import annotations

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.proposal import ConfigEdit, check_edit

ALLOWED = ("prompts/", "LESSONS.md")


@pytest.mark.parametrize(("path", "norm"), [
    ("prompts/system.md", "prompts/system.md"), ("prompts/sub/b.md", "prompts/sub/b.md"),
    ("LESSONS.md", "LESSONS.md"), ("./prompts/a.md", "prompts/a.md")])
def test_a_file_inside_what_may_be_edited_passes_normalised(path: str, norm: str) -> None:
    assert check_edit(ConfigEdit(path, "", "x"), ALLOWED) == norm


@pytest.mark.parametrize(("path", "why"), [
    ("prompts/", "names a folder"), ("prompts", "outside the files"),
    ("LESSONS.md/x", "outside the files"), ("promptsX/a.md", "outside the files"),
    ("../prompts/a.md", "not a relative path"), ("prompts/../../x", "not a relative path"),
    ("/etc/passwd", "not a relative path"), ("~/x", "not a relative path"),
    ("", "not a relative path"), ("prompts/.git/hooks/pre-commit", "git's own files"),
    (".gitmodules", "git's own files"), ("src/app.py", "outside the files")])
def test_every_other_path_is_refused_with_its_reason(path: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        check_edit(ConfigEdit(path, "", "x"), ALLOWED)
