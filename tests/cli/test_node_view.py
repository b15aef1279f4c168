"""``dreamrsi show RUN NODE`` on stores built through the store itself: how NODE is found, the
errors of a NODE that names nothing, and what a node without a workspace shows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_node, make_run

runner = CliRunner()
RUN, OTHER = "rnode0001", "rother001"


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == code, (result.exit_code, result.output)
    return result.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two runs: RUN with a root and 11 nodes in a chain (node 3 an error), OTHER with a root."""
    root = tmp_path_factory.mktemp("node") / "store"
    with SqliteRunStore.open(root, writer=True) as handle:
        handle.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest,
                                   {"direction": "maximize"}))
        handle.create_run(make_run(RUN))
        handle.create_run(make_run(OTHER))
        nodes = [make_node(RUN, 0, None)]
        for k in range(1, 12):
            bad = k == 3
            nodes.append(make_node(RUN, k, k - 1, status=NodeStatus.ERROR if bad else
                                   NodeStatus.OK, valid=not bad, score=None if bad else k,
                                   feedback="proposer exited with status 2; stderr: boom\n"
                                   "Traceback ..." if bad else f"fine {k}"))
        handle.add_nodes(nodes)
        handle.add_node(make_node(OTHER, 0, None))
    return str(root)


@pytest.mark.parametrize("ref", ["3", f"{RUN}-3", "03"])
def test_a_node_by_id_or_seq(store: str, ref: str) -> None:
    data = json.loads(cli("show", RUN, ref, "--store", store, "--json"))
    assert (data["node_id"], data["status"], data["depth"]) == (f"{RUN}-3", "error", 3)
    assert data["reason"] == "proposer exited with status 2; stderr: boom…"
    assert data["feedback"].endswith("Traceback ...")


def test_a_unique_prefix_finds_the_node_and_an_ambiguous_one_is_refused(store: str) -> None:
    # RUN-1 is a node's whole id (exact wins); RUN-1 is also the prefix of RUN-10 and RUN-11
    assert json.loads(cli("show", RUN, f"{RUN}-1", "--store", store, "--json"))["seq"] == 1
    out = cli("show", RUN, f"{RUN}-", "--store", store, code=1)
    assert "ambiguous" in out and "more characters of the node id" in out


@pytest.mark.parametrize(("ref", "message"), [
    ("99", f"run {RUN} has no node '{RUN}-99'"),
    ("nope", f"run {RUN} has no node 'nope'"),
    (f"{OTHER}-0", f"node {OTHER}-0 belongs to run {OTHER}, not to run {RUN}"),
    ("", "the node is empty"),
    ("9" * 5000, "has no node"),
])
def test_a_node_that_is_not_there_is_one_clear_error(store: str, ref: str,
                                                     message: str) -> None:
    out = cli("show", RUN, ref, "--store", store, code=1)
    assert message in " ".join(out.split()) and "Traceback" not in out


def test_listing_options_with_a_node_are_refused(store: str) -> None:
    out = cli("show", RUN, "1", "--all", "--store", store, code=1)
    assert "with NODE, show prints that node alone" in " ".join(out.split())


def test_a_node_whose_workspace_is_not_in_the_repository(store: str) -> None:
    # the builder's commits name no object: the diff says why there is none, nothing crashes
    data = json.loads(cli("show", RUN, "2", "--store", store, "--json"))
    assert data["diff"]["text"] is None and data["diff"]["note"].startswith("no diff: ")
    root = json.loads(cli("show", RUN, "0", "--store", store, "--json"))
    assert root["diff"]["note"].startswith("the root has no parent")
    assert root["model"] is None and root["exchange"] is None and root["model_calls"] == []
    text = cli("show", RUN, "3", "--store", store)
    assert "reason: proposer exited with status 2; stderr: boom…" in text
    assert "ledger rows of the node" in text and "record node" in text


def test_the_listing_has_a_reason_column(store: str) -> None:
    out = cli("show", RUN, "--store", store)
    assert "reason" in out and "proposer exited with status 2; stderr: boom…" in out
    rows = json.loads(cli("show", RUN, "--store", store, "--json"))["nodes"]
    assert [r["reason"] for r in rows if r["reason"]] == [
        "proposer exited with status 2; stderr: boom…"]


@pytest.mark.parametrize(("usd", "shown"), [
    (0.0, "$0"), (0.5, "$0.50"), (0.00036, "$0.00036"), (1e-9, "$1.0e-09"), (1.234, "$1.23"),
    (1234.5, "$1,234.50"), (0.1234567, "$0.123457")])
def test_money_is_shown_in_cents_or_the_digits_it_needs(usd: float, shown: str) -> None:
    from dreamrsi.cli._render import money

    assert money(usd) == shown
