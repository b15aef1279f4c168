"""Rebuild the headline table at the top of BENCHMARKS.md, and move superseded sections out.

Every benchmark script writes its own section (see ``_report.write_section``). This script reads
those sections back and never measures anything:

- the **headline table** names every target a section reports once (a table row or a line with
  PASS or FAIL, a paired dreaming-pays efficiency e or a per-round attempts ratio with its
  interval, a replay-predicts correlation, a hindsight ceiling), the figure as the section
  prints it, the verdict, and the section. The rows of one table whose bounds differ at most
  in their numbers ("<= 1.3" and "<= 1.1"; none, where a sentence states the target) are one
  target: its row names the worst cell and its figure (the cell whose figure is furthest
  below its bound, relative to it; read from the bold cells, else the columns
  ``FIGURE_HEADERS`` name, and only where those figures reproduce every row's verdict) and
  the verdict with how many rows pass ("FAIL (62/64 pass)"); the details stay in the section.
  A power table (``bench_pays_power.py``) gives a row per seed count the paired sections used;
  a ``bench_pays_paired.py --versus`` or ``--oracle`` section, a ceiling, a row without a
  target. Sections that report the same target (several tasks or protocols against one bar)
  share one row: the worst of them, naming how many sections report it and how many of those
  pass (a target met on at least one task shows there, the worst cell in the row);
- a section whose measured commit is older than the code it measures (``git diff`` between that
  commit and HEAD touches the paths in ``MEASURES``) is marked stale, in the table and in the
  section itself;
- sections named in ``SUPERSEDED`` move to BENCHMARKS-archive.md, with the reason, and so do
  the per-round dreaming-pays sections (``bench_dreaming_pays.py``, both arms) of a task once a
  paired total-budget section (``bench_pays_paired.py``) measures that task.

``write_section`` runs it after each script; run it by hand after merging branches:
``python benchmarks/headline.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
ARCHIVE_MD = ROOT / "BENCHMARKS-archive.md"

SECTION = re.compile(r"<!-- bench:(?P<name>\S+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->",
                     re.DOTALL)
HEADLINE = re.compile(r"<!-- headline -->.*?<!-- /headline -->\n*", re.DOTALL)
STALE_LINE = re.compile(r"<!-- stale -->.*?<!-- /stale -->\n*", re.DOTALL)
ARCHIVE_HEADER = (
    "# Benchmarks: archive\n\n"
    "Sections that a later one in BENCHMARKS.md supersedes, kept as their scripts wrote them,\n"
    "each with the reason it moved here. Their figures describe the code of the commit they\n"
    "name, not today's.\n"
)

# Sections a later one supersedes: name -> the reason, naming what supersedes it.
SUPERSEDED: dict[str, str] = {
    "pays-autocorrelation-c3": "the first pays run, before branches were pooled by default; "
                               "superseded by pays-autocorrelation-c3--branches-pooled",
    "pays-circle-packing-26": "the first pays run, before branches were pooled by default; "
                              "superseded by pays-circle-packing-26--branches-pooled",
    "pays-circle-packing-32--5x20": "a 5x20 protocol dropped for 5x40; superseded by "
                                    "pays-circle-packing-32--branches-pooled",
    "pays-circle-packing-32": "before branches were pooled by default; superseded by "
                              "pays-circle-packing-32--branches-pooled",
    "pays-autocorrelation-c3--β1---0": "a setting explored once (β1 = 0); the pooled runs use "
                                       "β1 = 0.0005",
    "pays-circle-packing-26--quality-rarity": "a setting explored once (rarity quality)",
    "pays-circle-packing-26--select-on-holdout": "a setting explored once (select on holdout)",
    "pays-autocorrelation-c3--select-on-holdout": "a setting explored once (select on holdout)",
    "pays-autocorrelation-c3--π-1---ladder-longest-12-levels-3":
        "a setting explored once (π_1 = ladder)",
    "pays-autocorrelation-c3--π-1---ladder-longest-12-levels-3--misses-charged":
        "a setting explored once (π_1 = ladder, misses charged)",
    "pays-autocorrelation-c3--branches-pooled": "before history as context became the loop's "
                                                "default; superseded by pays-autocorrelation-c3"
                                                "--branches-pooled--history-4--5x20",
    "replay-w10": "the ten-chain tree at W=10 only; superseded by replay-shapes (every family, "
                  "W=1 and 10, chains and bushy trees)",
    "dream-cost": "one history size; superseded by dream-growth and dream-growth-2000",
    "predicts-autocorrelation-c3--ladder-history": "4 trees of a ladder π_1 and one online seed "
                                                   "per policy; superseded by predicts-"
                                                   "autocorrelation-c3--pooled--5-online-seeds",
    "ceiling-lasso-path--3x12": "3 rounds of 12 without history as context; superseded by "
                                "ceiling-lasso-path--history-4--5x10 (the pays protocol)",
    "pays-circle-packing-26--branches-pooled": "before history as context became the loop's "
                                               "default; superseded by pays-circle-packing-26"
                                               "--branches-pooled--history-4--5x20",
    "pays-autocorrelation-c3--branches-pooled--2-prior-loops":
        "prior loops dreamed over before round 1, without history as context; superseded by "
        "pays-autocorrelation-c3--branches-pooled--history-4--5x20",
    "pays-circle-packing-26--branches-pooled--2-prior-loops":
        "prior loops dreamed over before round 1, without history as context; superseded by "
        "pays-circle-packing-26--branches-pooled--history-4--5x20",
    "pays-circle-packing-32--branches-pooled": "circle-packing-32 before history as context "
                                               "became the loop's default; not re-measured "
                                               "(issue 16 measures lasso-path, "
                                               "circle-packing-26 and autocorrelation-c3)",
    "pays-circle-packing-32--branches-pooled--2-prior-loops":
        "circle-packing-32 with prior loops, before history as context; not re-measured",
    "pays-lasso-path--branches-pooled--history-4--total-budget--5x10--fixed-from-confounded":
        "confounded by the machine's state: its control, round 1 (pi_1 in both arms, same "
        "seeds), scored about 20 % lower in the dream arm (load and a slowed VM; see "
        "docs/dreaming.md); measured again with the arms interleaved as "
        "pays-lasso-path--branches-pooled--history-4--total-budget--5x10",
    "dream-growth": "the script's former section name (no 2,000-node cell past 20 trees); "
                    "superseded by dream-growth-110-2000",
    "dream-growth-2000": "100 trials, 20 and 100 trees; superseded by dream-growth-110-2000 "
                         "(1,000 trials, up to 500 trees of both sizes)",
    "predicts-autocorrelation-c3--pooled--5-online-seeds":
        "one history of 10 trees, 20 policies (half of them sampled, not a dream's candidates) "
        "with 5 online seeds each, scored online by V (at its cap 1.0 for most); superseded by "
        "predicts-autocorrelation-c3--candidates (independent histories, paired seeds)",
    "predicts-autocorrelation-c3": "4 trees and one online seed per policy; superseded by "
                                   "predicts-autocorrelation-c3--ladder-history",
    "pays-power-80-shared-40": "simulated at 80 attempts, 40 shared, not the protocol the "
                               "paired sections use; superseded by pays-power-120-shared-0, "
                               "pays-power-120-shared-20 and pays-power-120-shared-mix",
    "paired-autocorrelation-c3-120x20-tie-prior-breadth-prior-2":
        "a setting explored once (--tie-prior breadth, not a default); the protocol's figure "
        "is paired-autocorrelation-c3-120x20-prior-2",
    "replay-ab-f0b9282": "an earlier refactor's gate against f0b9282; issue 34's refactor is "
                         "gated against the code before it, replay-ab-bcb305a",
    "replay-ab-f94c154": "one branch's cells (halving, ucb) against the commit before it, on "
                         "a loaded machine; superseded by replay-ab-bcb305a, every family "
                         "against the code before issue 34's refactor, measured after the merge",
    "replay-ab-f94c154a3dd990dacae6ea701890d7ddb68ca4df":
        "one branch's cells (fixed, ladder, planned, greedy) against the commit before it, on "
        "a loaded machine; superseded by replay-ab-bcb305a, every family against the code "
        "before issue 34's refactor, measured after the merge",
    "pays-lasso-path--branches-pooled--history-4--total-budget--5x10":
        "measured at 48bf114 and not re-measured since (its 90 minutes did not fit the session "
        "that re-measured the per-round lasso-path run, which is current as "
        "pays-lasso-path--branches-pooled--history-4--5x10); re-run its command to bring it back",
}

# What each script measures: a section is stale once these paths changed after its commit.
# Scripts not named here measure the whole package (they run the engine, the loop or dreams).
MEASURES: dict[str, tuple[str, ...]] = {
    "bench_store.py": ("src/dreamrsi/store",),
    "bench_replay.py": ("src/dreamrsi/core", "src/dreamrsi/policies"),
    "bench_replay_shapes.py": ("src/dreamrsi/core", "src/dreamrsi/policies"),
    "bench_dream.py": ("src/dreamrsi/core", "src/dreamrsi/policies", "src/dreamrsi/dreaming"),
    "bench_lasso_ops.py": ("src/dreamrsi/tasks/builtin/_families/lasso-path",),
    "bench_learn.py": ("src/dreamrsi/knowledge", "src/dreamrsi/testing/knowledge_agent.py",
                       "src/dreamrsi/testing/knowledge_sets.py",
                       "src/dreamrsi/testing/knowledge_tools.py", "tests/agents/fake_openai.py"),
}
WHOLE_PACKAGE = ("src/dreamrsi",)


@dataclass(frozen=True)
class Target:
    """One target a section reports, as the section prints it."""

    label: str
    figure: str
    verdict: str
    others: int = 0  # sections reporting the same target whose figures are not the worst
    passing: int | None = None  # of the sections reporting the same target, those that pass
    # (None: their verdicts are no pass or fail, a simulation's, say)



@dataclass(frozen=True)
class Section:
    name: str
    body: str

    @property
    def title(self) -> str:
        match = re.search(r"^## (.+)$", self.body, re.MULTILINE)
        return match.group(1).strip() if match else self.name

    @property
    def commit(self) -> str | None:
        match = re.search(r"^Measured: .*?commit (\w+)", self.body, re.MULTILINE)
        return match.group(1) if match else None

    @property
    def script(self) -> str | None:
        match = re.search(r"^Command: `python benchmarks/(\S+\.py)", self.body, re.MULTILINE)
        return match.group(1) if match else None

    @property
    def block(self) -> str:
        return f"<!-- bench:{self.name} -->\n{self.body}<!-- /bench:{self.name} -->"


def sections(text: str) -> list[Section]:
    return [Section(m["name"], m["body"]) for m in SECTION.finditer(text)]


NUMBER = r"-?\d+(?:\.\d+)?"
PAYS = re.compile(rf"Ratio of attempts, fixed over dream: \*\*(?P<x>{NUMBER})\*\* \(bootstrap 95% "
                  rf"interval over seeds \[(?P<lo>{NUMBER}), (?P<hi>{NUMBER})\]\)")
PAIRED = re.compile(rf"^\*\*e = (?P<x>{NUMBER})\*\* \(95% interval \[(?P<lo>{NUMBER}), "
                    rf"(?P<hi>{NUMBER})\]\):.*Target: e >= 2 with the lower bound above 1: "
                    r"\*\*(?P<verdict>PASS|MISS)\*\*", re.MULTILINE)
VERSUS = re.compile(rf"^\*\*e = (?P<x>{NUMBER})\*\* \(95% interval \[(?P<lo>{NUMBER}), "
                    rf"(?P<hi>{NUMBER})\]\): (?P<spec>`[^`]+`) against π_1, both run from round 1")
ORACLE_ARM = re.compile(rf"^\*\*e = (?P<x>{NUMBER})\*\* \(95% interval \[(?P<lo>{NUMBER}), "
                        rf"(?P<hi>{NUMBER})\]\): π_1 in round 1 and (?P<spec>`[^`]+`) in every "
                        r"later round")
PAIRED_NAME = re.compile(r"^paired-(?P<task>.+?)-\d+x\d+(?:-|$)")
PAIRED_SEEDS = re.compile(r"^Seeds: (?P<n>\d+), each in both arms", re.MULTILINE)
PAIRED_DEFAULT_SEEDS = 40  # bench_pays_paired.py's --seeds default (a test checks it)
SPEARMAN = re.compile(rf"Spearman correlation, replay score vs online \w+: "
                      rf"\*\*(?P<x>{NUMBER})\*\* \(bootstrap 95% interval over policies "
                      rf"\[(?P<lo>{NUMBER}), (?P<hi>{NUMBER})\]")
ORACLE = re.compile(rf"Seed-by-seed oracle .*?ratio \*\*(?P<x>{NUMBER})\*\* "
                    rf"\[(?P<lo>{NUMBER}), (?P<hi>{NUMBER})\]")
REPLAY_AB = re.compile(rf"^(?P<cells>\d+) cells; median of the cells' median ratios "
                       rf"(?P<median>{NUMBER}), lowest (?P<low>{NUMBER}); (?P<below>\d+) below "
                       rf"(?P<floor>{NUMBER})\.")
MET = re.compile(r"(?P<label>[^.]*?): \*\*(?P<figure>[^*]+)\*\* \(target (?P<bound>[^:]+): "
                 r"(?P<verdict>met|missed|not met)")
VERDICT = re.compile(r"\b(PASS|FAIL|MISS)\b")
TARGET_SENTENCE = re.compile(r"Target: (?P<target>.+?)(?:\.\s|\.$|$)")
# A figure as tables print it: "1.35", "+0.104 (2.8x)", "28,187 rows/s", "5,790 k (5,226 k)".
FIGURE = re.compile(r"(?P<x>[-+]?\d[\d,]*(?:\.\d+)?)(?:\s*(?P<scale>[kM])\b)?")
COMPARISON = re.compile(r"(?P<op><=|>=|<|>)\s*" + FIGURE.pattern)
SCALE = {None: 1.0, "k": 1e3, "M": 1e6}
# The columns a table's target is on, where its cells are not bold, the first that matches a
# header of the table: bench_startup.py ("extra wall over ..."; it also prints "wall s"),
# bench_overhead.py ("ratio"), bench_store.py ("result"), bench_reading.py ("wall s (median)")
# and bench_replay_shapes.py (one column per tree size, "2,000 nodes").
FIGURE_HEADERS = tuple(re.compile(pattern) for pattern in (
    r"^extra wall\b", r"^ratio$", r"^result$", r"^wall s\b", r"^[\d,]+ nodes$"))


def _reachable(match: re.Match[str]) -> str:
    """An oracle arm's verdict on e >= 2: shown, excluded (the upper bound below 2), or
    neither."""
    if float(match["hi"]) < 2:
        return "no: the upper bound is below 2"
    if float(match["x"]) >= 2 and float(match["lo"]) > 1:
        return "yes"
    return "not excluded, not shown"


def _cells(line: str) -> list[str]:
    return [cell.strip().replace("`", "") for cell in line.strip().strip("|").split("|")]


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _number(match: re.Match[str]) -> float:
    return float(match["x"].replace(",", "")) * SCALE[match["scale"]]


def _figure(cell: str) -> float | None:
    """The first figure of a cell, bold and bracketed parts (a baseline, a range) left out."""
    match = FIGURE.search(re.sub(r"\([^)]*\)", "", cell.replace("**", "")))
    return _number(match) if match else None


@dataclass(frozen=True)
class _Row:
    """A table row with a verdict: its cells, verdict and bound ("<= 1.3", "" if none)."""

    cells: list[str]
    verdict: str
    bound: str


def _verdict_rows(rows: list[list[str]]) -> list[_Row]:
    found = []
    for cells in rows:
        verdict_cells = [i for i, cell in enumerate(cells) if VERDICT.search(cell)]
        if verdict_cells:
            cell = cells[verdict_cells[-1]]
            found.append(_Row(cells, VERDICT.findall(cell)[-1],
                              VERDICT.sub("", cell).strip(" :()")))
    return found


def _one_row(row: _Row) -> Target:
    """A table row that is a target alone: its first cell, bound, and the other cells."""
    i = next(i for i in reversed(range(len(row.cells))) if VERDICT.search(row.cells[i]))
    figure = " · ".join(c for j, c in enumerate(row.cells[1:], 1) if j != i and c)
    label = row.cells[0] + (f" ({row.bound})" if row.bound else "")
    return Target(_short(label), _short(figure, 70), row.verdict)


def _compared(header: list[str], row: _Row) -> list[int]:
    """The columns whose figures the row's target is on: its bold cells, else known headers."""
    bold = [j for j, cell in enumerate(row.cells) if "**" in cell]
    if bold:
        return bold
    for pattern in FIGURE_HEADERS:
        if columns := [j for j, name in enumerate(header) if pattern.search(name)]:
            return columns
    return []


def _margins(header: list[str], rows: list[_Row], fallback: str
             ) -> list[tuple[float, _Row, int]] | None:
    """(relative margin, row, column) of every compared cell, or None where the figures read
    do not reproduce every row's verdict (then no cell can be called the worst)."""
    found = []
    for row in rows:
        bound = COMPARISON.search(row.bound or fallback)
        columns = [j for j in _compared(header, row) if j < len(row.cells)]
        values = [(j, _figure(row.cells[j])) for j in columns]
        if bound is None or not values or any(v is None for _, v in values):
            return None
        op, limit = bound["op"], _number(bound)
        held = []
        for j, value in values:
            assert value is not None
            gap = (limit - value) if op.startswith("<") else (value - limit)
            held.append(gap >= 0 if "=" in op else gap > 0)
            found.append((gap / abs(limit) if limit else gap, row, j))
        if all(held) != (row.verdict == "PASS"):
            return None
    return found


def _plain(text: str) -> str:
    return re.sub(r"\s*\([^)]*\)", "", text.replace("**", "")).strip()


def _group(header: list[str], rows: list[_Row], sentence: str) -> Target:
    """One target for many rows: the bound, the worst cell with its figure, how many pass."""
    first_figure = min([j for row in rows for j in _compared(header, row)]
                       + [j for row in rows for j, c in enumerate(row.cells)
                          if re.search(r"\d\.\d", c) and not VERDICT.search(c)]
                       + [len(header)])
    dims = [j for j in range(first_figure)
            if len({row.cells[j] for row in rows if j < len(row.cells)}) > 1] or [0]

    def name(row: _Row) -> str:
        parts = []
        for j in dims:
            cell = row.cells[j] if j < len(row.cells) else ""
            head = header[j] if j < len(header) else ""
            if "=" in cell or not cell[:1].isdigit() or not head:
                parts.append(cell)
            else:
                parts.append(f"{head}={cell}" if len(head) <= 3 else f"{head} {cell}")
        return _short(", ".join(parts), 60)

    bounds = list(dict.fromkeys(row.bound for row in rows if row.bound))
    columns = _compared(header, rows[0])
    margins = _margins(header, rows, sentence)
    label = " / ".join(bounds) or sentence or "every row"
    if (margins and bounds and COMPARISON.match(bounds[0]) and len(columns) == 1
            and columns[0] < len(header)):
        label = f"{_plain(header[columns[0]])} {label}"  # the bound names no quantity: the column
    label += ("" if "every" in label else " in every row") + \
        f" ({' × '.join(header[j] if j < len(header) else '?' for j in dims)})"
    if margins:
        _, row, j = min(margins, key=lambda found: found[0])
        where = f"{name(row)}, {_plain(header[j])}" if j < len(header) else name(row)
        figure = f"worst: {where}: {_plain(row.cells[j])}"
        if len(bounds) > 1:
            figure += f" ({row.bound})"
    else:
        failing = [row for row in rows if row.verdict != "PASS"]
        figure = (f"first failing: {name(failing[0])}" if failing else "every row passes") + \
            " (worst not read: see the section)"
    passing = sum(row.verdict == "PASS" for row in rows)
    misses = [row.verdict for row in rows if row.verdict != "PASS"]
    verdict = (f"PASS ({passing}/{len(rows)})" if not misses else
               f"{'FAIL' if 'FAIL' in misses else misses[0]} ({passing}/{len(rows)} pass)")
    return Target(_short(label, 110), _short(figure, 110), verdict)


def _power(header: list[str], rows: list[list[str]], seeds: tuple[int, ...]) -> list[Target]:
    """The power table of bench_pays_power.py: one row per seed count a paired section used."""
    column = {name: j for j, name in enumerate(header)}
    found = []
    for n in seeds:
        shares = [f"e = {row[column['true e']]}: {row[column['e pass']]}" for row in rows
                  if row[column["seeds per arm"]] == str(n)]
        found.append(Target(f"power at {n} seeds per arm: share of measurements passing e >= 2 "
                            "with the lower bound above 1, at a true e",
                            ", ".join(shares) if shares else f"not simulated at {n} seeds",
                            "simulated (no target)"))
    return found


def _table(header: list[str], rows: list[list[str]], sentence: str,
           seeds: tuple[int, ...]) -> list[Target]:
    """The targets of one table: a row alone, or one per bound that many rows share."""
    if {"seeds per arm", "true e", "e pass"} <= set(header):
        return _power(header, rows, seeds)
    groups: dict[str, list[_Row]] = {}
    for row in _verdict_rows(rows):
        groups.setdefault(re.sub(FIGURE.pattern, "N", row.bound), []).append(row)
    return [_one_row(group[0]) if len(group) == 1 else _group(header, group, sentence)
            for group in groups.values()]


def _sentence_target(body: str) -> str:
    """The section's target where it is a sentence with no verdict (its table has them)."""
    for line in body.splitlines():
        match = TARGET_SENTENCE.search(line)
        if match and not VERDICT.search(line[match.start():]):
            return match["target"].strip()
    return ""


def targets(section: Section, *, paired_seeds: tuple[int, ...] = (PAIRED_DEFAULT_SEEDS,)
            ) -> list[Target]:
    """Every target the section reports, in the order it prints them, each once: the rows of a
    table that share a bound are one target (its worst cell, how many pass).

    ``paired_seeds``: the seed counts of the paired sections, at which a power table is read.
    """
    found: list[Target] = []
    subheading = ""
    sentence = _sentence_target(section.body)
    table: list[list[str]] = []
    for line in [*section.body.splitlines(), ""]:
        if line.startswith("|"):
            if not line.startswith("|---"):
                table.append(_cells(line))
            continue
        if table:
            found.extend(_table(table[0], table[1:], sentence, paired_seeds))
            table = []
        if line.startswith("### "):
            subheading = line[4:].strip()
        if match := PAIRED.search(line):
            found.append(Target("dreaming pays: e >= 2, lower bound above 1",
                                f"e = {match['x']} [{match['lo']}, {match['hi']}]",
                                match["verdict"]))
            continue
        if match := VERSUS.search(line):  # bench_pays_paired.py --versus: a ceiling, no target
            x, lo = float(match["x"]), float(match["lo"])
            found.append(Target(f"ceiling: {match['spec']} against π_1 from round 1, e >= 2 "
                                "with the lower bound above 1 possible",
                                f"e = {match['x']} [{match['lo']}, {match['hi']}]",
                                "yes" if x >= 2 and lo > 1 else "no: cannot show the target"))
            continue
        if match := ORACLE_ARM.search(line):  # bench_pays_paired.py --oracle: a ceiling
            found.append(Target(f"ceiling: π_1, then {match['spec']} from round 2 (as if every "
                                "dream picked it), e >= 2 reachable",
                                f"e = {match['x']} [{match['lo']}, {match['hi']}]",
                                _reachable(match)))
            continue
        if "Target:" in line and VERDICT.search(line.split("Target:", 1)[1]):
            before, target = line.split("Target:", 1)
            verdict = VERDICT.search(target)
            assert verdict is not None
            head = target[:verdict.start()].strip(" ,:")
            if ". " in head:
                label, figure = head.split(". ", 1)
            else:
                label, _, figure = head.rpartition(":") if ":" in head else (head, "", "")
            figure = _short(figure.strip(" ,:"), 70)
            if not figure:  # the figure is the sentence before: keep its end
                tail = " ".join(before.split()).strip(" .")
                figure = tail if len(tail) <= 70 else "…" + tail[-69:]
            found.append(Target(_short(label.strip()), figure, verdict.group(1)))
            continue
        if match := MET.search(line):
            found.append(Target(_short(f"{match['label'].strip()} ({match['bound']})"),
                                match["figure"],
                                "PASS" if match["verdict"] == "met" else "FAIL"))
        elif match := PAYS.search(line):
            x, lo = float(match["x"]), float(match["lo"])
            found.append(Target("dreaming pays: attempts ratio >= 2, interval above 1",
                                f"{match['x']} [{match['lo']}, {match['hi']}]",
                                "PASS" if x >= 2 and lo > 1 else "MISS"))
        elif match := REPLAY_AB.search(line):  # bench_replay_ab.py: a refactor's speed
            found.append(Target(f"replay reveals/s against the baseline: every cell's median "
                                f"ratio >= {match['floor']}",
                                f"lowest {match['low']} (median {match['median']}, "
                                f"{match['cells']} cells)",
                                "PASS" if match["below"] == "0" else "FAIL"))
        elif match := SPEARMAN.search(line):
            x = float(match["x"])
            found.append(Target("replay predicts online: Spearman ρ >= 0.6",
                                f"{match['x']} [{match['lo']}, {match['hi']}]",
                                "PASS" if x >= 0.6 else "MISS"))
        elif match := ORACLE.search(line):
            x = float(match["x"])
            where = f" ({subheading})" if subheading else ""
            found.append(Target(_short(f"ceiling: hindsight oracle ratio >= 2 possible{where}"),
                                f"{match['x']} [{match['lo']}, {match['hi']}]",
                                ">= 2" if x >= 2 else "< 2: cannot show 2x"))
    return found


def changed_since(commit: str | None, paths: tuple[str, ...]) -> int | None:
    """How many files under ``paths`` changed between ``commit`` and HEAD (None: unknown)."""
    if not commit:
        return None
    done = subprocess.run(["git", "diff", "--name-only", f"{commit}..HEAD", "--", *paths],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return len([line for line in done.stdout.splitlines() if line.strip()])


def freshness(section: Section) -> str:
    paths = MEASURES.get(section.script or "", WHOLE_PACKAGE)
    changed = changed_since(section.commit, paths)
    if changed is None:
        return "commit unknown"
    if changed:
        return f"stale: {changed} file(s) of {', '.join(paths)} changed since {section.commit}"
    return "current"


def mark(section: Section, state: str) -> Section:
    """The section with its stale line set (or removed when current)."""
    body = STALE_LINE.sub("", section.body)
    if state != "current":
        line = (f"<!-- stale -->\n> **{state}**: re-run the command to refresh.\n"
                "<!-- /stale -->\n\n")
        body = re.sub(r"(^Measured: .*\n\n?)", lambda m: m.group(1).rstrip("\n") + "\n\n" + line,
                      body, count=1, flags=re.MULTILINE)
    return Section(section.name, body)


def headline(rows: list[tuple[Section, Target, str]]) -> str:
    lines = ["<!-- headline -->", "## Headline", "",
             "Every target the sections below report, as their scripts printed it (written by "
             "`python benchmarks/headline.py`, which measures nothing). Superseded sections are "
             "in [BENCHMARKS-archive.md](BENCHMARKS-archive.md).", "",
             "| target | latest figure | verdict | section | measured |", "|---|---|---|---|---|"]
    for section, target, state in rows:
        when = section.commit or "?"
        if state != "current":
            when += " (stale)"
        where = section.title + (
            f" (the worst of {target.others + 1} sections" + (
                "" if target.passing is None else
                f"; {target.passing} of them pass{'es' if target.passing == 1 else ''}")
            + ")" if target.others else "")
        lines.append(f"| {target.label} | {target.figure} | {target.verdict} | {where} | "
                     f"{when} |")
    if not rows:
        lines.append("| (no section reports a target) | | | | |")
    lines.append("<!-- /headline -->")
    return "\n".join(lines) + "\n\n"


def superseded(found: list[Section]) -> dict[str, str]:
    """Sections to archive, name -> reason: those named in ``SUPERSEDED``, and every dreaming-pays
    section of the per-round protocol (``bench_dreaming_pays.py``, both arms) for a task that a
    paired total-budget section (``bench_pays_paired.py``, issue 33) now measures."""
    moved = dict(SUPERSEDED)
    paired: dict[str, list[str]] = {}
    for section in found:
        if (section.script == "bench_pays_paired.py" and PAIRED.search(section.body)
                and (match := PAIRED_NAME.match(section.name))):
            task = "".join(c if c.isalnum() else "-" for c in match["task"])
            paired.setdefault(task, []).append(section.name)
    for section in found:
        if section.script != "bench_dreaming_pays.py" or not PAYS.search(section.body):
            continue
        for task, names in paired.items():
            if section.name == f"pays-{task}" or section.name.startswith(f"pays-{task}--"):
                moved.setdefault(section.name, "superseded by the paired total-budget protocol "
                                               f"of issue 33: {', '.join(names)}")
    return moved


def paired_seeds(found: list[Section]) -> tuple[int, ...]:
    """The seed counts the paired sections used (bench_pays_paired.py's default if none)."""
    seeds = sorted({int(match["n"]) for section in found
                    if section.script == "bench_pays_paired.py" and PAIRED.search(section.body)
                    and (match := PAIRED_SEEDS.search(section.body))})
    return tuple(seeds) or (PAIRED_DEFAULT_SEEDS,)


def rows(kept: list[tuple[Section, str]]) -> list[tuple[Section, Target, str]]:
    """The headline's rows: every target the kept sections report, with its freshness, once
    (:func:`one_per_target`)."""
    seeds = paired_seeds([section for section, _ in kept])
    return one_per_target([(section, target, state) for section, state in kept
                           for target in targets(section, paired_seeds=seeds)])


PASSING = ("PASS", "yes", ">= 2")
"""How a verdict that holds begins (a target met, a ceiling that reaches 2)."""
FAILING = ("MISS", "FAIL", "no")
"""How a verdict that does not hold begins (a simulation's "no target" is neither)."""


def _worst_first(row: tuple[Section, Target, str]) -> tuple[bool, float]:
    """Sort key, the worst row first: a verdict that does not hold before one that does, then
    the figure furthest on the wrong side (the lowest, or the highest where the target's bound
    is an upper one, "<=")."""
    target = row[1]
    value = _figure(target.figure)
    if value is None:
        value = float("inf")
    return target.verdict.startswith(PASSING), (-value if "<=" in target.label else value)


def one_per_target(found: list[tuple[Section, Target, str]]
                   ) -> list[tuple[Section, Target, str]]:
    """Rows naming the same target (the same label: several tasks or protocols measured against
    one bar) become one row, in the place of the first: the worst of them, with how many
    sections report it (issue 33: each target named once, its worst cell in the headline, the
    rest in the sections)."""
    by_label: dict[str, list[tuple[Section, Target, str]]] = {}
    for row in found:
        by_label.setdefault(row[1].label, []).append(row)
    out = []
    for same in by_label.values():
        section, target, state = min(same, key=_worst_first)  # the first of equals
        if len(same) > 1:
            judged = [t for _, t, _ in same if t.verdict.startswith(PASSING + FAILING)]
            passing = sum(t.verdict.startswith(PASSING) for t in judged) if judged else None
            target = Target(target.label, target.figure, target.verdict, len(same) - 1, passing)
        out.append((section, target, state))
    return out


def rebuild(text: str, archive: str, *, state_of=freshness) -> tuple[str, str]:
    """(BENCHMARKS.md, BENCHMARKS-archive.md) rebuilt from ``text`` and ``archive``."""
    text = HEADLINE.sub("", text)
    found = sections(text)
    moved = superseded(found)
    kept = []
    for section in found:
        if section.name in moved:
            text = text.replace(section.block + "\n\n", "").replace(section.block, "")
            entry = (f"<!-- bench:{section.name} -->\n{STALE_LINE.sub('', section.body)}"
                     f"Moved here: {moved[section.name]}.\n<!-- /bench:{section.name} -->")
            pattern = re.compile(rf"<!-- bench:{re.escape(section.name)} -->.*?"
                                 rf"<!-- /bench:{re.escape(section.name)} -->", re.DOTALL)
            archive = (pattern.sub(lambda _, e=entry: e, archive) if pattern.search(archive)
                       else archive.rstrip() + "\n\n" + entry + "\n")
            continue
        state = state_of(section)
        marked = mark(section, state)
        text = text.replace(section.block, marked.block)
        kept.append((marked, state))
    first = text.find("<!-- bench:")
    table = headline(rows(kept))
    text = (text[:first] + table + text[first:]) if first >= 0 else text.rstrip() + "\n\n" + table
    return text, archive


def main() -> None:
    text = BENCHMARKS_MD.read_text()
    archive = ARCHIVE_MD.read_text() if ARCHIVE_MD.exists() else ARCHIVE_HEADER
    new_text, new_archive = rebuild(text, archive)
    BENCHMARKS_MD.write_text(new_text)
    if new_archive.strip() != ARCHIVE_HEADER.strip():
        ARCHIVE_MD.write_text(new_archive)
    if "--print" in sys.argv:
        print(HEADLINE.search(new_text).group(0))


if __name__ == "__main__":
    main()
