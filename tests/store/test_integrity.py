"""A run's nodes must form one tree; readers turn a hand-edited store into one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dreamrsi.core.model import Node
from dreamrsi.errors import StoreError
from dreamrsi.store.integrity import check_tree, tree_problem

from .helpers import make_node

R = "r00000001"


def chain(length: int) -> list[Node]:
    return [make_node(R, 0, None)] + [make_node(R, s, s - 1) for s in range(1, length)]


@given(st.lists(st.integers(min_value=0, max_value=30), max_size=30))
def test_every_recorded_tree_is_one_tree(parents: list[int]) -> None:
    """Whatever shape the engine records (each node's parent recorded before it) passes."""
    nodes = [make_node(R, 0, None)]
    for seq, pick in enumerate(parents, start=1):
        nodes.append(make_node(R, seq, pick % seq))
    assert tree_problem(nodes) is None
    assert tree_problem(list(reversed(nodes))) is None  # the order of the list is irrelevant


def test_a_run_without_nodes_is_fine() -> None:
    assert tree_problem([]) is None  # its root is evaluated when it resumes


@pytest.mark.parametrize(
    ("drop", "change", "problem"),
    [
        (2, None, f"holds node {R}-3 whose parent {R}-2 is not in the store"),
        (0, None, f"has no root node: its first node {R}-1 names parent {R}-0"),
        (None, (3, {"parent_id": None}), f"has a second root node {R}-3"),
        (None, (2, {"parent_id": f"{R}-4"}), f"holds node {R}-2 recorded before its parent"),
    ],
)
def test_a_broken_tree_is_named(drop: int | None, change: tuple[int, dict[str, object]] | None,
                                problem: str) -> None:
    nodes = chain(5)
    if change is not None:
        seq, fields = change
        nodes[seq] = nodes[seq]._replace(**fields)
    if drop is not None:
        del nodes[drop]
    found = tree_problem(nodes)
    assert found is not None and found.startswith(problem)
    with pytest.raises(StoreError, match="is inconsistent") as info:
        check_tree(Path("the-store"), R, nodes)
    assert f"run {R} {problem}" in str(info.value)
    assert f"`dreamrsi ledger verify {R}`" in str(info.value)
