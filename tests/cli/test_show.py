"""``dreamrsi show`` on a tree too large to list: the summary, the selections, paging, and
``--json`` written as it is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.cli.runs import PAGE, SMALL_TREE
from dreamrsi.core.model import NodeStatus
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_node, make_run

runner = CliRunner()
RUN = "rbig0001"
BRANCHES = (60, 50, 40)  # nodes per branch: 150 + the root
BEST = (2, 17)  # branch 2's node at depth 17 has the best score


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output)
    return result.output


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 151 nodes: a root and three chains, built through the store itself."""
    root = tmp_path_factory.mktemp("show") / "store"
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest,
                                  {"direction": "minimize"}))
        store.create_run(make_run(RUN))
        nodes = [make_node(RUN, 0, None, score=-100.0, raw_score=100.0)]
        seq = 0
        for b, size in enumerate(BRANCHES, start=1):
            parent = 0
            for depth in range(1, size + 1):
                seq += 1
                score = 50.0 if (b, depth) == BEST else float(b + depth / 100)
                status = NodeStatus.ERROR if depth == 5 else NodeStatus.OK
                nodes.append(make_node(RUN, seq, parent, score=score if depth != 5 else None,
                                       raw_score=-score, status=status, valid=depth != 5,
                                       plan=f"b{b} d{depth}"))
                parent = seq
        store.add_nodes(nodes)
    return root


def _json(store: Path, *args: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(cli("show", RUN, "--store", str(store), "--json",
                                             *args))
    return data


def _ids(data: dict[str, object]) -> list[str]:
    return [n["node_id"] for n in data["nodes"]]  # type: ignore[attr-defined]


def test_the_tree_is_larger_than_a_listing() -> None:
    # Guards the fixture, not the code: the tests below mean something only while the tree is
    # too big to list whole (so show summarises) and each branch fits one page. It fails if
    # someone shrinks BRANCHES or raises SMALL_TREE/PAGE past them.
    assert 1 + sum(BRANCHES) > SMALL_TREE and max(BRANCHES) < PAGE


def test_json_lists_every_node_with_the_summary(big: Path) -> None:
    data = _json(big)
    nodes = data["nodes"]
    assert len(nodes) == 151 and nodes[0]["depth"] == 0  # type: ignore[arg-type,index]
    assert [n["branch"] for n in nodes][1:] == [1] * 60 + [2] * 50 + [3] * 40  # type: ignore
    assert data["tree"] == {"root": f"{RUN}-0", "nodes": 151, "branches": 3, "depth": 60,
                            "best_branch": 2, "best_depth": 17}
    [b1, b2, b3] = data["branches"]  # type: ignore[misc]
    assert (b2["nodes"], b2["depth"], b2["best_node"], b2["best_score"]) == (
        50, 50, f"{RUN}-77", -50.0)
    assert b1["counts"] == {"ok": 59, "error": 1} and b3["head"] == f"{RUN}-111"
    assert data["run"]["best_node"] == f"{RUN}-77"  # type: ignore[index]


def test_default_text_is_the_summary_and_the_best_branch(big: Path) -> None:
    out = cli("show", RUN, "--store", str(big))
    assert "151 nodes, 3 branches, depth 60, best -50 (rbig0001-77)" in out
    assert "nodes: branch 2 down to the best node" in out
    listing = out.split("nodes: branch 2 down to the best node")[1]
    listed = [f"{RUN}-{k} " for k in range(61, 78)]
    assert all(node in listing for node in listed)
    assert f"{RUN}-78 " not in listing and f"{RUN}-1 " not in listing
    assert "more may follow" not in out


def test_selections(big: Path) -> None:
    every = _ids(_json(big))
    assert _ids(_json(big, "--branch", "3")) == every[111:]
    assert _ids(_json(big, "--depth", "1")) == [f"{RUN}-0", f"{RUN}-1", f"{RUN}-61",
                                                 f"{RUN}-111"]
    assert _ids(_json(big, "--branch", "1", "--depth", "2")) == [f"{RUN}-1", f"{RUN}-2"]
    assert _ids(_json(big, "--depth", "0")) == [f"{RUN}-0"]
    text = cli("show", RUN, "--store", str(big), "--all", "--limit", "200")
    assert all(f"{n} " in text for n in every) and "more may follow" not in text


def test_pages_cover_the_listing(big: Path) -> None:
    every = _ids(_json(big))
    pages = [_ids(_json(big, "--offset", str(k), "--limit", "40")) for k in range(0, 160, 40)]
    assert sum(pages, []) == every and [len(p) for p in pages] == [40, 40, 40, 31]
    text = cli("show", RUN, "--store", str(big), "--all")
    assert f"more may follow: --offset {PAGE} lists the next {PAGE}" in text
    assert f"{RUN}-99 " in text and f"{RUN}-100 " not in text  # the 100th node is seq 99
    text = cli("show", RUN, "--store", str(big), "--all", "--offset", str(PAGE))
    assert f"{RUN}-100 " in text and "more may follow" not in text


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--branch", "4"], 1, "the run has 3 branches; --branch takes 1 to 3"),
    (["--branch", "0"], 2, "Invalid value for '--branch'"),
    (["--depth", "-1"], 2, "Invalid value for '--depth'"),
    (["--limit", "0"], 2, "Invalid value for '--limit'"),
    (["--offset", "-1"], 2, "Invalid value for '--offset'"),
    (["--offset", "x"], 2, "Invalid value for '--offset'"),
])
def test_bad_selections_are_refused(big: Path, args: list[str], code: int,
                                    message: str) -> None:
    assert message in " ".join(cli("show", RUN, "--store", str(big), *args, code=code).split())


def test_json_of_a_run_without_nodes(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        store.put_task(TaskRecord(TASK.digest, "t", "e", {"direction": "maximize"}))
        store.create_run(make_run("rempty"))
    data = json.loads(cli("show", "rempty", "--store", str(tmp_path / "store"), "--json"))
    assert data["nodes"] == [] and data["branches"] == [] and data["tree"]["nodes"] == 0
    out = cli("show", "rempty", "--store", str(tmp_path / "store"))
    assert "0 nodes, 0 branches" in out
