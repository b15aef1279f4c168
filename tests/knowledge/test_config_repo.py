"""The config repository's contract: dreamrsi.toml read strictly, held-out parts rotated,
edits applied only inside what learning may edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.config_repo import (
    apply_proposal,
    editable_files,
    heldout_part,
    load_config,
)
from dreamrsi.knowledge.goldens import Golden
from dreamrsi.knowledge.proposal import ConfigEdit, Proposal

GOOD = '[agent]\ncommand = "python3 agent.py"\n'


@pytest.mark.parametrize(("text", "words"), [
    ("", "the agent's command is missing"),
    ('[agent]\ncommand = "x"\ncolour = 1\n', "key 'agent.colour': unknown key"),
    (GOOD + "[learn]\nheldout_rotation = 0\n", "key 'learn.heldout_rotation'"),
    (GOOD + "[learn]\nheldout_rotation = true\n", "key 'learn.heldout_rotation'"),
    (GOOD + '[learn]\neditable = ["../up"]\n', "not a relative path"),
    (GOOD + '[learn]\nlessons = "objective.toml"\n', "the gate's own files"),
    (GOOD + "[learn]\nmin_gain = -1\n", "key 'learn.min_gain'"),
    (GOOD + "[agent.x]\n", "key 'agent.x'"),
    ('[agnet]\ncommand = "x"\n', "unknown tables agnet"),
    ("[agent\n", "cannot read it"),
])
def test_a_bad_config_names_its_file_and_key(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "dreamrsi.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert "dreamrsi.toml" in str(caught.value) and words in str(caught.value)


def test_no_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path)


def test_held_out_parts_are_disjoint_rotate_and_leave_out_canaries() -> None:
    goldens = [Golden(f"h{n}", "q", "a", split="heldout") for n in range(7)]
    goldens += [Golden("c", "q", "a", split="heldout", canary=True), Golden("t", "q", "a")]
    parts = [heldout_part(goldens, night, 3) for night in range(3)]
    ids = [g.golden_id for part in parts for g in part]
    assert sorted(ids) == [f"h{n}" for n in range(7)] and [len(p) for p in parts] == [3, 2, 2]
    assert heldout_part(goldens, 4, 3) == parts[1]
    with pytest.raises(ConfigError, match="holds no golden"):
        heldout_part(goldens[:1], 1, 2)


def test_a_rule_is_one_row_and_an_edit_applies_once(tmp_path: Path) -> None:
    (tmp_path / "dreamrsi.toml").write_text(GOOD)
    cfg = load_config(tmp_path)
    (tmp_path / "LESSONS.md").write_text("- first")
    assert apply_proposal(tmp_path, Proposal("second\n- injected row", "", (), "t"),
                          cfg) == "LESSONS.md"
    assert (tmp_path / "LESSONS.md").read_text() == "- first\n- second - injected row\n"
    edit = ConfigEdit("prompts/new/skill.md", "", "Do it.\n")
    assert apply_proposal(tmp_path, Proposal("r", "", (), "t", edit=edit), cfg) == (
        "prompts/new/skill.md")
    twice = ConfigEdit("prompts/new/skill.md", "", "Do it.\n")
    apply_proposal(tmp_path, Proposal("r", "", (), "t", edit=twice), cfg)
    with pytest.raises(ConfigError, match="occurs 2 times"):
        apply_proposal(tmp_path, Proposal("r", "", (), "t", edit=twice._replace(
            old="Do it.", new="x")), cfg)


@pytest.mark.parametrize("proposal", [
    Proposal("ring the bell\x07", "", (), "t"),
    Proposal("r", "", (), "t", edit=ConfigEdit("prompts/a.md", "", "nul\x00")),
    Proposal("x" * 2001, "", (), "t"),
    Proposal("r", "", (), "t", edit=ConfigEdit("a.md", "same", "same")),
])
def test_a_rule_or_edit_that_is_not_text_or_changes_nothing_is_refused(tmp_path: Path,
                                                         proposal: Proposal) -> None:
    (tmp_path / "dreamrsi.toml").write_text(GOOD + '[learn]\neditable = ["prompts/", "a.md"]\n')
    (tmp_path / "a.md").write_text("the same\n")
    with pytest.raises(ConfigError):
        apply_proposal(tmp_path, proposal, load_config(tmp_path))
    assert not (tmp_path / "LESSONS.md").exists() and not (tmp_path / "prompts").exists()
    assert (tmp_path / "a.md").read_text() == "the same\n"


def test_the_distiller_is_shown_the_editable_files_through_no_link(tmp_path: Path) -> None:
    (tmp_path / "dreamrsi.toml").write_text(GOOD + '[learn]\neditable = ["prompts/", "a.md"]\n')
    (tmp_path / "prompts" / "deep").mkdir(parents=True)
    (tmp_path / "prompts" / "deep" / "x.md").write_text("deep\n")
    (tmp_path / "prompts" / "blob.bin").write_bytes(b"\xff\xfe")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text("sk-not-for-you\n")
    (tmp_path / "prompts" / "link").symlink_to(tmp_path / "secret")
    (tmp_path / "prompts" / "file-link.md").symlink_to(tmp_path / "secret" / "key.txt")
    (tmp_path / "a.md").write_text("a\n")
    (tmp_path / "LESSONS.md").write_text("- one\n")
    files = editable_files(tmp_path, load_config(tmp_path))
    assert files == {"LESSONS.md": "- one\n", "prompts/deep/x.md": "deep\n", "a.md": "a\n"}
    assert list(files)[0] == "LESSONS.md"
