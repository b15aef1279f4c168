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
    assert not [s.name for s in kept if s.name in headline.superseded(kept)]
    reported = [target for section in kept for target in headline.targets(
        section, paired_seeds=headline.paired_seeds(kept))]
    for target in reported:  # each target named once, however many sections report it
        assert table.group(0).count(f"| {target.label} |") == 1, target
    for section, target, _ in headline.rows([(section, "current") for section in kept]):
        assert f"| {target.label} | {target.figure} | {target.verdict} | {section.title}" \
            in table.group(0), (section.name, target)
    assert table.group(0).count("| Replay on any tree shape") == 1  # one target, one row


def test_sections_reporting_one_target_are_one_row_naming_the_worst() -> None:
    """Three tasks measured against one bar: one row, the worst figure (a miss before a pass,
    then the lowest), and how many sections report it; other targets keep their rows."""
    def paired(name: str, e: str, lo: str, verdict: str) -> str:
        return block(name, PAIRED_LINE.format(x=e, lo=lo, verdict=verdict))

    text = (HEADER + paired("paired-a-120x20", "1.40", "0.90", "MISS")
            + paired("paired-b-120x20", "2.60", "1.20", "PASS")
            + paired("paired-c-120x20", "1.10", "0.70", "MISS"))
    found = headline.rows([(section, "current") for section in headline.sections(text)])
    assert len(found) == 1
    section, target, _ = found[0]
    assert (section.name, target.figure, target.verdict, target.others) == \
        ("paired-c-120x20", "e = 1.10 [0.70, 1.92]", "MISS", 2)
    assert target.passing == 1  # paired-b passes: a target met on one task shows in the row
    table = headline.headline(found)
    assert "(the worst of 3 sections; 1 of them passes)" in table
    assert table.count("| dreaming pays:") == 1
    # a pass is the worst only where every section passes
    text = HEADER + paired("paired-b-120x20", "2.60", "1.20", "PASS") + paired(
        "paired-d-120x20", "2.20", "1.10", "PASS")
    section, target, _ = headline.rows(
        [(section, "current") for section in headline.sections(text)])[0]
    assert (section.name, target.others, target.passing) == ("paired-d-120x20", 1, 2)
    assert "(the worst of 2 sections; 2 of them pass)" in headline.headline(
        [(section, target, "current")])
    # sections whose verdicts are no pass or fail (a simulation's) get no pass count
    simulated = [(headline.Section(f"power-{k}", "## Power\n"),
                  headline.Target("power at 30 seeds", f"e = 2: {k}0%", "simulated (no target)"),
                  "current") for k in (1, 2)]
    (_, target, _), = headline.one_per_target(simulated)
    assert (target.others, target.passing) == (1, None)
    assert "(the worst of 2 sections) |" in headline.headline(headline.one_per_target(simulated))


# One headline row per target (issue 33): a table's rows that share a bound are one target.

SHAPES = ("| family | W | tree | 200 nodes | 2,000 nodes | exponent | target |\n"
          "|---|---:|---|---:|---:|---:|---|\n"
          "| fixed | 1 | chains | 5,790 k (5,226 k) | 6,302 k (6,062 k) | 1.19 (1.26) | {a} |\n"
          "| fixed | 10 | bushy-60 | 1,010 k (1,079 k) | {low} (884 k) | 1.12 (0.95) | {b} |\n"
          "| ucb | 1 | chains | 1,157 k (1,030 k) | 1,307 k (967 k) | 1.09 (1.07) | PASS |\n"
          "| ucb | 10 | bushy-60 | 519 k (524 k) | 471 k (550 k) | 0.90 (1.00) | PASS |\n\n"
          "Reveals per CPU second. Target: >= 300,000 reveals/s in every cell. Reference loop.")


def only(body: str, **context) -> list:
    return headline.targets(headline.sections(HEADER + block("s", body))[0], **context)


def test_a_grid_of_cells_against_one_target_is_one_row_naming_its_worst_cell() -> None:
    passing = only(SHAPES.format(a="PASS", b="PASS", low="908 k"))
    assert passing == [headline.Target(
        ">= 300,000 reveals/s in every cell (family × W × tree)",
        "worst: ucb, W=10, bushy-60, 2,000 nodes: 471 k", "PASS (4/4)")]
    failing = only(SHAPES.format(a="PASS", b="FAIL", low="208 k"))
    assert failing == [headline.Target(
        ">= 300,000 reveals/s in every cell (family × W × tree)",
        "worst: fixed, W=10, bushy-60, 2,000 nodes: 208 k", "FAIL (3/4 pass)")]


def test_rows_whose_bounds_differ_only_in_number_are_one_target_worst_by_margin() -> None:
    body = ("| attempts | isolation | baseline ms | ratio | CPU ratio | target |\n"
            "|---:|---|---:|---:|---:|---|\n"
            "| 50 (x2) | bubblewrap | 44.6 | 1.35 | 2.98 | <= 1.3: FAIL |\n"
            "| 1000 (x1) | bubblewrap | 42.3 | 1.25 | 2.02 | <= 1.1: FAIL |\n"
            "| 5000 (x1) | bubblewrap | 40.0 | 1.05 | 1.90 | <= 1.1: PASS |")
    # 1.25 against 1.1 misses by 14 %, 1.35 against 1.3 by 4 %: the 1,000-attempt cell is worst
    assert only(body) == [headline.Target(
        "ratio <= 1.3 / <= 1.1 in every row (attempts)",
        "worst: attempts 1000 (x1), ratio: 1.25 (<= 1.1)", "FAIL (1/3 pass)")]


def test_genuinely_different_targets_keep_a_row_each() -> None:
    body = ("| W | p50 ms | median of the repeats | target |\n|---|---|---|---|\n"
            "| W=1 | 1.42 | **1.25** (0.83-1.28) | client ratio <= 1.3: PASS |\n"
            "| W=8 | 12.49 | **1.26** (1.17-1.38) | client ratio <= 1.3: PASS |\n\n"
            "| W | attempts | run (s) | ratio | target |\n|---|---|---|---|---|\n"
            "| W=1 | 4 | 4.38 | **1.09** | run ratio <= 1.3: PASS |\n"
            "| W=8 | 32 | 5.77 | **1.43** | run ratio <= 1.3: FAIL |\n\n"
            "| command | wall s (median) | target |\n|---|---:|---|\n"
            "| show | 0.626 | PASS (<= 1.0 s) |\n| best | 0.161 | PASS (<= 0.3 s) |\n"
            "| load | 0.532 | PASS (<= 1 s) |\n| rows | 28,187 rows/s | PASS (>= 20,000 rows/s) |")
    assert only(body) == [
        headline.Target("client ratio <= 1.3 in every row (W)",
                        "worst: W=8, median of the repeats: 1.26", "PASS (2/2)"),
        headline.Target("run ratio <= 1.3 in every row (W × attempts)",
                        "worst: W=8, attempts 32, ratio: 1.43", "FAIL (1/2 pass)"),
        headline.Target("wall s <= 1.0 s / <= 0.3 s / <= 1 s in every row (command)",
                        "worst: show, wall s: 0.626 (<= 1.0 s)", "PASS (3/3)"),
        headline.Target("rows (>= 20,000 rows/s)", "28,187 rows/s", "PASS"),  # alone: as before
    ]


def test_no_cell_is_called_worst_when_the_figures_read_contradict_the_verdicts() -> None:
    body = ("| code | command | wall s (median) | extra wall | target |\n|---|---|---:|---:|---|\n"
            "| now | show | 0.161 | +0.104 | PASS (<= +0.15 s) |\n"
            "| now | best | 0.186 | +0.129 | PASS (<= +0.15 s) |")
    assert only(body)[0].figure == "worst: best, extra wall: +0.129"  # not the wall s column
    contradicted = body.replace("extra wall", "extra time")  # wall s 0.161 > 0.15 yet PASS
    assert only(contradicted) == [headline.Target(
        "<= +0.15 s in every row (command)",
        "every row passes (worst not read: see the section)", "PASS (2/2)")]


PAIRED_LINE = ("**e = {x}** (95% interval [{lo}, 1.92]): the dream arm's per-attempt efficiency "
               "after round 1 at reaching the fixed arm's median best after 25%, 50%, 75%, 100% "
               "of the attempts after round 1. Target: e >= 2 with the lower bound above 1: "
               "**{verdict}**.")


def test_a_paired_section_is_one_dreaming_pays_row_with_e_and_its_verdict() -> None:
    assert only(PAIRED_LINE.format(x="1.23", lo="0.76", verdict="MISS")) == [headline.Target(
        "dreaming pays: e >= 2, lower bound above 1", "e = 1.23 [0.76, 1.92]", "MISS")]
    assert [t.verdict for t in only(PAIRED_LINE.format(x="2.40", lo="1.30", verdict="PASS"))] \
        == ["PASS"]


def test_an_interleaved_replay_comparison_is_one_row_passing_when_no_cell_is_below() -> None:
    line = ("192 cells; median of the cells' median ratios 1.000, lowest {low}; {below} below "
            "0.9. 3 passes, each cell's sides alternating which goes first.")
    assert only(line.format(low="0.904", below=0)) == [headline.Target(
        "replay reveals/s against the baseline: every cell's median ratio >= 0.9",
        "lowest 0.904 (median 1.000, 192 cells)", "PASS")]
    assert [t.verdict for t in only(line.format(low="0.871", below=2))] == ["FAIL"]


POWER = ("| seeds per arm | true e | median e | e pass | e > 1 | median ratio | ratio pass | "
         "ratio > 1 |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
         "| 30 | 1 | 0.98 | 2% | 2% | 0.99 | 0% | 0% |\n"
         "| 30 | 2 | 1.96 | 39% | 47% | 1.52 | 9% | 18% |\n"
         "| 40 | 1 | 1.02 | 1% | 2% | 0.99 | 0% | 0% |\n"
         "| 40 | 2 | 1.93 | 42% | 57% | 1.54 | 9% | 25% |")


def test_the_power_table_is_read_at_the_seed_count_the_paired_sections_used() -> None:
    label = ("power at {} seeds per arm: share of measurements passing e >= 2 with the lower "
             "bound above 1, at a true e")
    assert only(POWER) == [headline.Target(label.format(40), "e = 1: 1%, e = 2: 42%",
                                           "simulated (no target)")]
    assert [t.figure for t in only(POWER, paired_seeds=(30, 50))] == [
        "e = 1: 2%, e = 2: 39%", "not simulated at 50 seeds"]
    paired = block("paired-lasso-path-80x20", "Seeds: 30, each in both arms (paired).\n\n"
                   + PAIRED_LINE.format(x="1.2", lo="0.8", verdict="MISS"))
    paired = paired.replace("benchmarks/x.py", "benchmarks/bench_pays_paired.py --task t")
    text = HEADER + paired + "\n\n" + block("pays-power", POWER) + "\n"
    table = headline.HEADLINE.search(headline.rebuild(text, headline.ARCHIVE_HEADER,
                                                      state_of=current)[0]).group(0)
    assert f"| {label.format(30)} | e = 1: 2%, e = 2: 39% |" in table


def test_a_versus_section_is_a_ceiling_row_and_supersedes_nothing() -> None:
    line = ("**e = {x}** (95% interval [{lo}, 3.10]): `fixed:branches=10` against π_1, both "
            "run from round 1 (nothing shared), per-attempt efficiency. A ceiling.")
    assert only(line.format(x="2.40", lo="1.30")) == [headline.Target(
        "ceiling: `fixed:branches=10` against π_1 from round 1, e >= 2 with the lower bound "
        "above 1 possible", "e = 2.40 [1.30, 3.10]", "yes")]
    assert only(line.format(x="2.40", lo="0.90"))[0].verdict == "no: cannot show the target"
    versus = block("paired-lasso-path-80x20-versus-fixed-branches-10",
                   "Seeds: 30, each in both arms (paired).\n\n" + line.format(x="2", lo="1.2"))
    versus = versus.replace("benchmarks/x.py", "benchmarks/bench_pays_paired.py --task t")
    found = headline.sections(HEADER + versus + "\n\n" + pays("pays-lasso-path", "lasso-path"))
    assert headline.superseded(found) == headline.SUPERSEDED  # it does not measure the loop
    assert headline.paired_seeds(found) == (headline.PAIRED_DEFAULT_SEEDS,)


def test_an_oracle_section_is_a_ceiling_row_with_three_verdicts() -> None:
    line = ("**e = {x}** (95% interval [{lo}, {hi}]): π_1 in round 1 and `g:b=16` in every "
            "later round, as if every dream had picked it (the oracle arm).")
    verdicts = [only(line.format(x=x, lo=lo, hi=hi))[0].verdict
                for x, lo, hi in (("1.40", "0.90", "1.90"), ("2.10", "1.20", "3.00"),
                                  ("1.80", "1.10", "2.60"), ("2.10", "0.95", "3.00"))]
    assert verdicts == ["no: the upper bound is below 2", "yes", "not excluded, not shown",
                        "not excluded, not shown"]
    assert only(line.format(x="1.40", lo="0.90", hi="1.90"))[0].figure == \
        "e = 1.40 [0.90, 1.90]"


def test_the_default_seed_count_is_bench_pays_paired_s() -> None:
    script = (ROOT / "benchmarks" / "bench_pays_paired.py").read_text()
    assert f'"--seeds", type=int, default={headline.PAIRED_DEFAULT_SEEDS})' in script


def pays(name: str, task: str, body: str = "(a) Ratio of attempts, fixed over dream: **1.28** "
         "(bootstrap 95% interval over seeds [0.53, 3.66]).") -> str:
    return block(name, body).replace("benchmarks/x.py",
                                     f"benchmarks/bench_dreaming_pays.py --task {task}")


def test_per_round_pays_sections_move_out_once_a_paired_section_measures_their_task() -> None:
    kept = [pays("pays-lasso-path--branches-pooled--history-4--5x10", "lasso-path"),
            pays("pays-circle-packing-26--branches-pooled--5x20", "circle-packing-26")]
    moved = [pays("pays-circle-packing-2", "circle-packing-2"),
             pays("pays-circle-packing-2--history-4--5x20", "circle-packing-2"),
             pays("pays-circle-packing-2--total-budget", "circle-packing-2")]
    fixed_only = pays("pays-circle-packing-2--fixed-arm-only--10x200", "circle-packing-2",
                      "| measure | value |\n|---|---:|\n| attempts spent (median) | 430 |")
    paired = block("paired-circle-packing-2-80x20", PAIRED_LINE.format(
        x="1.1", lo="0.9", verdict="MISS")).replace(
            "benchmarks/x.py", "benchmarks/bench_pays_paired.py --task circle-packing-2")
    power = block("pays-power", POWER).replace("benchmarks/x.py", "benchmarks/bench_pays_power.py")
    before = HEADER + "\n\n".join([*kept, *moved, fixed_only, power]) + "\n"
    out, archive = headline.rebuild(before, headline.ARCHIVE_HEADER, state_of=current)
    assert archive == headline.ARCHIVE_HEADER  # no paired section yet: every pays section stays
    assert all(f"<!-- bench:{s.name} -->" in out for s in headline.sections(before))

    out, archive = headline.rebuild(before.replace(power, power + "\n\n" + paired),
                                    headline.ARCHIVE_HEADER, state_of=current)
    names = [s.name for s in headline.sections(out)]
    assert names == ["pays-lasso-path--branches-pooled--history-4--5x10",
                     "pays-circle-packing-26--branches-pooled--5x20",  # another task
                     "pays-circle-packing-2--fixed-arm-only--10x200",  # reports no pays ratio
                     "pays-power", "paired-circle-packing-2-80x20"]
    for name in ("pays-circle-packing-2", "pays-circle-packing-2--history-4--5x20",
                 "pays-circle-packing-2--total-budget"):
        assert f"<!-- bench:{name} -->" in archive
    assert archive.count("Moved here: superseded by the paired total-budget protocol of issue "
                         "33: paired-circle-packing-2-80x20.") == 3
    again = headline.rebuild(out, archive, state_of=current)
    assert again == (out, archive)  # stable: nothing moves twice


def test_what_bench_pays_paired_and_bench_pays_power_write_is_what_the_headline_reads(
        monkeypatch, tmp_path) -> None:
    """The scripts' own text (tiny simulated inputs: nothing is measured), through the headline."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import argparse  # noqa: PLC0415

    import bench_pays_paired  # noqa: PLC0415
    import bench_pays_power  # noqa: PLC0415

    seeds = 4
    loops = {}
    for seed in range(seeds):
        for arm, later in (("fixed", [1, 2, 2, 3]), ("dream", [3, 5, 6, 6])):
            curve = [(float(v + seed), True) for v in [0, 1, 1, 1, *later]]
            rounds = [{"attempts": 4, "policy": "p1" if i == 0 or arm == "fixed" else "p2",
                       "round_best": curve[4 * i + 3][0]} for i in range(2)]
            loops[(arm, seed)] = {"curve": curve, "rounds": rounds, "wall_s": 1.0}
    args = argparse.Namespace(task="circle-packing-26", seeds=seeds, total_budget=8,
                              per_round_budget=4, workers=2, loop_arg=[], versus=None,
                              oracle=None, prior=0, prior_shared=False,
                              family_prior=None)
    paired = block("paired-circle-packing-26-8x4", bench_pays_paired.summarise(args, loops))
    paired = paired.replace("benchmarks/x.py", "benchmarks/bench_pays_paired.py --task t")
    found = headline.targets(headline.sections(HEADER + paired)[0])
    assert [t.label for t in found] == ["dreaming pays: e >= 2, lower bound above 1"]
    assert found[0].verdict in {"PASS", "MISS"} and found[0].figure.startswith("e = ")
    assert headline.paired_seeds(headline.sections(HEADER + paired)) == (seeds,)
    args.versus = "fixed:branches=10"
    versus = block("paired-circle-packing-26-8x4-versus-fixed-branches-10",
                   bench_pays_paired.summarise(args, loops))
    found = headline.targets(headline.sections(HEADER + versus)[0])
    assert [t.label for t in found] == ["ceiling: `fixed:branches=10` against π_1 from round 1, "
                                        "e >= 2 with the lower bound above 1 possible"]
    args.versus, args.oracle = None, "fixed:branches=10"
    oracle = block("paired-circle-packing-26-8x4-oracle-fixed-branches-10",
                   bench_pays_paired.summarise(args, loops))
    found = headline.targets(headline.sections(HEADER + oracle)[0])
    assert [t.label for t in found] == ["ceiling: π_1, then `fixed:branches=10` from round 2 "
                                        "(as if every dream picked it), e >= 2 reachable"]
    assert headline.paired_seeds(headline.sections(HEADER + oracle)) == \
        (headline.PAIRED_DEFAULT_SEEDS,)  # a ceiling: not a paired measurement of the loop
    args.oracle = None

    written = tmp_path / "BENCHMARKS.md"
    monkeypatch.setattr(sys.modules["_report"], "BENCHMARKS_MD", written)
    monkeypatch.setattr(headline, "BENCHMARKS_MD", written)
    monkeypatch.setattr(headline, "ARCHIVE_MD", tmp_path / "BENCHMARKS-archive.md")
    monkeypatch.setitem(sys.modules, "headline", headline)  # what write_section imports
    monkeypatch.setattr(sys, "argv", ["bench_pays_power.py", "--sims", "2", "--resamples", "5",
                                      "--seeds", "3", "--efficiency", "1", "2"])
    bench_pays_power.main()
    text = written.read_text()
    powers = {s.name: s for s in headline.sections(text) if s.name.startswith("pays-power")}
    assert sorted(powers) == ["pays-power-120-shared-0", "pays-power-120-shared-20"]  # one
    # section per protocol of the defaults, each with its own title in the headline's rows
    assert "(simulated; 120 attempts, none shared" in text
    assert "(simulated; 120 attempts, the first 20 shared" in text
    power = powers["pays-power-120-shared-0"]
    assert [t.figure for t in headline.targets(power, paired_seeds=(3,))][0].startswith(
        "e = 1: ")
    assert "| power at 40 seeds per arm" in text and "not simulated at 40 seeds" in text
