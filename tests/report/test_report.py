"""``dreamrsi report`` on a run, a loop and a task of a store the real engine filled: every
figure is a valid PNG, index.html names only files of its folder, hostile text is escaped."""

from __future__ import annotations

import html.parser
import struct
import sys
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Cost
from dreamrsi.errors import ConfigError
from dreamrsi.report import figures
from dreamrsi.report.gather import gather, run_curve
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.store.values import LoopRecord, LoopRound
from dreamrsi.testing.builders import TASK, make_node, make_run
from tests.panels.filled import HOSTILE, Filled, filled_store

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return filled_store(tmp_path_factory.mktemp("filled"))


class Refs(html.parser.HTMLParser):
    """Every src and href of a document, and the tags it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "poster", "data"):
                self.refs.append(value or "")
            if name.startswith("on"):
                self.handlers.append(name)


def check_png(path: Path) -> None:
    """A PNG whose every chunk's CRC holds, with an image header and an end."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    at, kinds = 8, []
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert zlib.crc32(kind + body) == crc, (path, kind)
        kinds.append(kind)
        at += 12 + length
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
    width, height = struct.unpack(">II", data[16:24])
    assert width > 50 and height > 50


def report(filled: Filled, target: str, out: Path) -> Refs:
    result = CliRunner().invoke(app, ["report", target, "--out", str(out),
                                      "--store", str(filled.path)])
    assert result.exit_code == 0, result.output
    index = (out / "index.html").read_text()
    refs = Refs()
    refs.feed(index)
    for ref in refs.refs:  # nothing outside the folder: no scheme, no absolute path, no ..
        assert ref and ":" not in ref and not ref.startswith(("/", "\\", "//")), ref
        assert "/" not in ref and (out / ref).is_file(), ref
    assert "url(" not in index and "@import" not in index
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert sorted(refs.refs) == pngs  # every figure is shown, and only those
    for name in pngs:
        check_png(out / name)
    # hostile text is shown as text: no script, no handler, the markup escaped
    assert "script" not in refs.tags and refs.handlers == []
    assert HOSTILE not in index
    return refs


def test_a_runs_report(filled: Filled, tmp_path: Path) -> None:
    refs = report(filled, filled.runs[0], tmp_path / "run")
    assert set(refs.refs) == {"best.png", "tree-1.png", "survival.png"}
    index = (tmp_path / "run" / "index.html").read_text()
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in index  # the plans, escaped


def test_a_dream_runs_report_shows_its_dreams_and_hypotheses(filled: Filled,
                                                              tmp_path: Path) -> None:
    refs = report(filled, filled.repo_run, tmp_path / "repo")
    assert {"best.png", "tree-1.png"} <= set(refs.refs)
    index = (tmp_path / "repo" / "index.html").read_text()
    assert "add subtracts &lt;script&gt;" in index and "does add subtract?" in index


def test_a_loops_report_draws_its_arms_rounds_trees_and_dreams(filled: Filled,
                                                                tmp_path: Path) -> None:
    refs = report(filled, filled.loops["dream"], tmp_path / "loop")
    assert {"best.png", "attempts.png", "tree-1.png", "tree-2.png", "dream-1.png"} <= set(
        refs.refs)
    index = (tmp_path / "loop" / "index.html").read_text()
    assert filled.loops["dream"] in index and filled.loops["fixed"] in index  # both arms


def test_a_tasks_report(filled: Filled, tmp_path: Path) -> None:
    refs = report(filled, "hostile", tmp_path / "task")
    assert {"best.png", "attempts.png", "survival.png", "dream-1.png", "tree-1.png"} <= set(
        refs.refs)
    index = (tmp_path / "task" / "index.html").read_text()
    assert filled.dream_id in index and filled.pass_id in index


def test_bad_targets_and_outputs_are_refused_and_write_nothing(filled: Filled,
                                                               tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", "nothing", "--out", str(tmp_path / "x"),
                                 "--store", str(filled.path)])
    assert result.exit_code == 1 and "no run, loop or task" in result.output
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    result = runner.invoke(app, ["report", filled.runs[0], "--out", str(tmp_path / "file"),
                                 "--store", str(filled.path)])
    assert result.exit_code == 1 and "is a file" in result.output


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigError, match=r"dreamrsi\[report\]"):
        figures.pyplot()


def test_bands_over_seeds_span_the_seeds(tmp_path: Path) -> None:
    two = [([1, 3], [1.0, 5.0]), ([1, 2], [2.0, 3.0]), ([2], [9.0])]
    grid, mid, low, high = figures.bands(two)
    assert grid == [1, 2, 3]
    assert low == [1.0, 1.0, 3.0] and high == [2.0, 9.0, 9.0] and mid == [2.0, 3.0, 5.0]
    figures.best_curves(tmp_path / "b.png", {"three": two, "one": [([1], [4.0])]},
                        "a $x_{$ label is text")  # never mathtext (which fails on it)
    check_png(tmp_path / "b.png")


def test_a_run_that_spent_tokens_and_money_is_drawn_against_them(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = SqliteRunStore.open(path, writer=True, holder="tests")
    try:
        store.put_task(TASK._replace(spec={"direction": "maximize"}))  # what reports read
        store.create_run(make_run("rspend"))
        store.add_nodes([make_node("rspend", 0, None), *(
            make_node("rspend", i, i - 1, score=float(s), raw_score=float(s),
                      cost=Cost(tokens_in=100 * i, tokens_out=10, money_usd=0.5))
            for i, s in ((1, 3), (2, 1), (3, 4)))])
        assert run_curve(store, ["rspend"], "tokens") == ([110.0, 320.0, 630.0],
                                                          [3.0, 3.0, 4.0])
        assert run_curve(store, ["rspend"], "money") == ([0.5, 1.0, 1.5], [3.0, 3.0, 4.0])
    finally:
        store.close()
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["report", "rspend", "--out", str(out),
                                      "--store", str(path)])
    assert result.exit_code == 0, result.output
    for name in ("best.png", "best-tokens.png", "best-money.png", "tree-1.png"):
        check_png(out / name)
    assert 'src="best-money.png"' in (out / "index.html").read_text()


def test_a_loops_arms_are_the_loops_run_alike(tmp_path: Path) -> None:
    store = SqliteRunStore.open(tmp_path / "store", writer=True, holder="tests")
    try:
        store.put_task(TASK._replace(spec={"direction": "maximize"}))
        loops = {"la": ("dream", 1, 4), "lb": ("fixed", 1, 4), "lc": ("fixed", 2, 4),
                 "ld": ("fixed", 1, 8)}  # ld spends another budget a round
        for i, (loop_id, (arm, seed, budget)) in enumerate(loops.items()):
            run_id = f"r{loop_id}"
            store.create_run(make_run(run_id, created_at=1_700_000_001.0 + i))
            store.add_nodes([make_node(run_id, 0, None), make_node(run_id, 1, 0)])
            store.create_loop(LoopRecord(loop_id, TASK.digest, arm,
                                         {"seed": seed, "rounds": 1, "workers": 2,
                                          "per_round_budget": budget}, "finished",
                                         1_700_000_000.0 + i))
            store.add_loop_round(LoopRound(loop_id, 1, run_id, "v1"))
        arms = gather(store, "loop", "la")["arms"]
        assert [x["loop_id"] for x in arms["loops"]] == ["la", "lb", "lc"]
        assert {k: len(v) for k, v in arms["curves"].items()} == {"dream": 1, "fixed": 2}
        every = gather(store, "task", TASK.digest)["arms"]
        assert [x["loop_id"] for x in every["loops"]] == ["la", "lb", "lc", "ld"]
    finally:
        store.close()
