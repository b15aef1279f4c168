"""The headline table of BENCHMARKS.md: what it reads from sections, what it moves out."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("headline", ROOT / "benchmarks" / "headline.py")
assert spec and spec.loader
headline = importlib.util.module_from_spec(spec)
sys.modules.setdefault("headline", headline)  # dataclasses look their module up
spec.loader.exec_module(headline)

HEADER = "# Benchmarks\n\nIntro.\n"


def block(name: str, body: str, commit: str = "abc1234") -> str:
    return (f"<!-- bench:{name} -->\n## Title of {name}\n\nCommand: `python benchmarks/x.py`  \n"
            f"Measured: 2026-12-01 10:00 UTC, commit {commit}, Python 3.11.7\n\n{body}\n"
            f"<!-- /bench:{name} -->")


def current(_section) -> str:
    return "current"


def test_targets_are_read_as_the_sections_print_them() -> None:
    text = HEADER + "\n".join([
        block("over", "Target: ratio <= 1.3 for every row. Worst ratio 1.42: FAIL. More text."),
        block("table", "| measurement | result | target |\n|---|---|---|\n"
                       "| bulk append | 22,162 rows/s | PASS (>= 20,000 rows/s) |\n"
                       "| no target here | 3 s | (no target) |"),
        block("pays", "(a) Ratio of attempts, fixed over dream: **2.31** (bootstrap 95% interval "
                      "over seeds [1.20, 3.00]). Target: >= 2 with the lower bound above 1."),
        block("pays-low", "(a) Ratio of attempts, fixed over dream: **2.50** (bootstrap 95% "
                          "interval over seeds [0.90, 3.00]). Target: >= 2 with the lower bound "
                          "above 1."),
        block("rho", "Spearman correlation, replay score vs online best: **0.26** (bootstrap 95% "
                     "interval over policies [-0.25, 0.70]; 20 policies)"),
        block("before", "Cost per tree, 20 to 500 trees: x0.41. Target: at most linear: PASS."),
        block("inline", "Target: at most 5 % more: +30.8 % at worst, FAIL. One run of 2000."),
        block("met", "Programs scored per minute (W = 2): **132 per minute** (target >= 60: met; "
                     "30 programs)."),
        block("ceiling", "Seed-by-seed oracle (for each seed, the best): ratio **1.17** "
                         "[0.56, 2.64]; attempts"),
    ])
    found = {s.name: headline.targets(s) for s in headline.sections(text)}
    assert found["over"] == [headline.Target("ratio <= 1.3 for every row", "Worst ratio 1.42",
                                             "FAIL")]
    assert found["table"] == [headline.Target("bulk append (>= 20,000 rows/s)", "22,162 rows/s",
                                              "PASS")]
    assert [t.verdict for t in found["pays"]] == ["PASS"]
    assert [t.verdict for t in found["pays-low"]] == ["MISS"]  # lower bound not above 1
    assert found["rho"] == [headline.Target("replay predicts online: Spearman ρ >= 0.6",
                                            "0.26 [-0.25, 0.70]", "MISS")]
    assert found["before"] == [headline.Target("at most linear",
                                               "Cost per tree, 20 to 500 trees: x0.41", "PASS")]
    assert found["inline"] == [headline.Target("at most 5 % more", "+30.8 % at worst", "FAIL")]
    assert found["met"] == [headline.Target("Programs scored per minute (W = 2) (>= 60)",
                                            "132 per minute", "PASS")]
    assert found["ceiling"][0].verdict == "< 2: cannot show 2x"


def test_rebuild_opens_with_the_table_archives_superseded_and_is_stable(monkeypatch) -> None:
    monkeypatch.setattr(headline, "SUPERSEDED", {"old": "superseded by new"})
    text = HEADER + "\n" + block("old", "Target: x. Worst 9: FAIL.") + "\n\n" + \
        block("new", "Target: y. Worst 1: PASS.") + "\n"
    states = {"new": "stale: 3 file(s) of src changed since abc1234"}
    out, archive = headline.rebuild(text, headline.ARCHIVE_HEADER,
                                    state_of=lambda s: states.get(s.name, "current"))
    assert out.startswith(HEADER)
    assert out.index("<!-- headline -->") < out.index("<!-- bench:new -->")
    assert "bench:old" not in out and "Worst 9" not in out
    assert "<!-- bench:old -->" in archive and "Moved here: superseded by new." in archive
    table = headline.HEADLINE.search(out).group(0)
    assert "| y | Worst 1 | PASS | Title of new | abc1234 (stale) |" in table
    assert "> **stale: 3 file(s) of src changed since abc1234**" in out
    again, archive2 = headline.rebuild(out, archive, state_of=lambda s: states.get(s.name,
                                                                                   "current"))
    assert (again, archive2) == (out, archive)
    states.clear()  # the section was re-measured: its stale line goes
    fresh, _ = headline.rebuild(out, archive, state_of=current)
    assert "stale" not in fresh


def test_benchmarks_md_headline_lists_every_kept_sections_targets() -> None:
    """Whoever adds or re-runs a section also rebuilds the headline (write_section does)."""
    text = (ROOT / "BENCHMARKS.md").read_text()
    table = headline.HEADLINE.search(text)
    assert table, "BENCHMARKS.md has no headline table: run python benchmarks/headline.py"
    kept = headline.sections(text)
    assert not [s.name for s in kept if s.name in headline.SUPERSEDED]
    for section in kept:
        for target in headline.targets(section):
            assert f"| {target.label} | {target.figure} | {target.verdict} | {section.title} |" \
                in table.group(0), (section.name, target)
