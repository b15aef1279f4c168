"""Pages of the reading commands: ``status --offset/--limit``, ``show RUN --after``,
``ledger show --after/--limit``: pages read by their cursors cover the whole listing in order,
and a bad cursor is a clear error (exit 1, nothing printed on stdout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, event, make_node, make_run

runner = CliRunner()
RUN = "rpage0001"
RUNS = ("rpage0001", "rpage0002", "rpage0003", "rpage0004", "rpage0005")
BRANCHES = (7, 3, 5)  # nodes per branch below the root


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output)
    return result.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five runs (the first with three chains and 12 more ledger rows), built through the
    store itself."""
    root = tmp_path_factory.mktemp("paging") / "store"
    with SqliteRunStore.open(root, writer=True) as handle:
        handle.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest,
                                   {"direction": "maximize"}))
        for k, run_id in enumerate(RUNS):
            handle.create_run(make_run(run_id, created_at=1_700_000_000.0 + k % 2))
        nodes, seq = [make_node(RUN, 0, None)], 0
        for size in BRANCHES:
            parent = 0
            for _ in range(size):
                seq += 1
                nodes.append(make_node(RUN, seq, parent))
                parent = seq
        handle.add_nodes(nodes)
        handle.append_ledger(RUN, [event(f"step {k}") for k in range(12)], run_id=RUN)
    return root


def _json(*args: str) -> object:
    return json.loads(cli(*args, "--json"))


def test_status_pages(store: Path) -> None:
    s = ["--store", str(store)]
    every = [r["run_id"] for r in _json("status", *s)["runs"]]  # type: ignore[index]
    # created at two moments, in turn: oldest first, the order recorded within a moment
    assert every == ["rpage0001", "rpage0003", "rpage0005", "rpage0002", "rpage0004"]
    pages = [[r["run_id"] for r in _json("status", "--offset", str(k), "--limit", "2",
                                         *s)["runs"]]  # type: ignore[index]
             for k in range(0, 6, 2)]
    assert pages == [every[:2], every[2:4], every[4:]]
    assert _json("status", "--offset", "9", *s)["runs"] == []  # type: ignore[index]
    text = cli("status", "--limit", "1", *s)
    assert "rpage0001" in text and "rpage0003" not in text
    assert "Invalid value for '--limit'" in cli("status", "--limit", "0", *s, code=2)
    assert "Invalid value for '--offset'" in cli("status", "--offset", "-1", *s, code=2)


def test_show_pages_by_cursor(store: Path) -> None:
    s = ["--store", str(store)]
    every = [n["node_id"] for n in _json("show", RUN, *s)["nodes"]]  # type: ignore[index]
    assert len(every) == 1 + sum(BRANCHES)
    pages, after = [], None
    while True:
        cursor = [] if after is None else ["--after", after]
        page = [n["node_id"] for n in _json("show", RUN, *cursor, "--limit", "4",
                                            *s)["nodes"]]  # type: ignore[index]
        if not page:
            break
        pages.append(page)
        after = page[-1]
    assert sum(pages, []) == every and [len(p) for p in pages] == [4, 4, 4, 4]
    # a cursor by seq or by unique prefix names the same node; the text lists the page
    seventh = every[6]
    by_seq = _json("show", RUN, "--after", seventh.rsplit("-", 1)[1], *s)
    assert [n["node_id"] for n in by_seq["nodes"]] == every[7:]  # type: ignore[index]
    # a page alone: none of the run's summary, which reads the whole tree
    assert by_seq == {"run_id": RUN, "after": seventh, "nodes": by_seq["nodes"]}  # type: ignore
    text = cli("show", RUN, "--after", seventh, "--limit", "2", *s)
    assert f"{every[7]} " in text and f"{every[9]} " not in text
    assert f"--after {every[8]}" in text  # the next page's cursor is named
    branch = [n["node_id"] for n in _json("show", RUN, "--branch", "3", "--after",
                                          every[-3], *s)["nodes"]]  # type: ignore[index]
    assert branch == every[-2:]


@pytest.mark.parametrize(("args", "message"), [
    (["--after", "rpage0001-99"], "has no node 'rpage0001-99'"),
    (["--after", "rpage0002-0"], "has no node"),
    (["--after", "rpage0001-2", "--branch", "2"], "is not in branch 2"),
    (["--after", "rpage0001-3", "--depth", "1"], "is deeper than depth 1"),
    (["--after", "rpage0001-1", "--offset", "2"], "not both"),
])
def test_show_bad_cursors(store: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["show", RUN, *args, "--store", str(store), "--json"])
    assert result.exit_code == 1, result.output
    assert message in " ".join(result.output.split()) and not result.stdout.startswith("{")
    assert "with NODE, show prints that node alone" in " ".join(cli(
        "show", RUN, "3", "--after", "1", "--store", str(store), code=1).split())


def test_ledger_pages(store: Path) -> None:
    s = ["--store", str(store)]
    every = _json("ledger", "show", RUN, *s)
    seqs = [r["seq"] for r in every]  # type: ignore[attr-defined]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == 2 + sum(BRANCHES) + 12
    pages, after = [], 0
    while page := _json("ledger", "show", RUN, "--after", str(after), "--limit", "10", *s):
        pages.append(page)
        after = page[-1]["seq"]  # type: ignore[index]
    assert sum(pages, []) == every and len(pages) == 3  # type: ignore[arg-type]
    text = cli("ledger", "show", RUN, "--after", str(len(seqs) - 2), *s)
    assert text.count("step") == 2  # the last two rows only (the table may wrap their cmd)
    assert _json("ledger", "show", RUN, "--after", str(len(seqs)), *s) == []
    assert "Invalid value for '--after'" in cli("ledger", "show", RUN, "--after", "-1", *s,
                                                code=2)
    assert "Invalid value for '--limit'" in cli("ledger", "show", RUN, "--limit", "0", *s,
                                                code=2)
