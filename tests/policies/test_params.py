"""Each family declares its parameters once; validation, coercion, search and sweep read them."""

from __future__ import annotations

import dataclasses
import inspect
import random
from itertools import repeat
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.policy import Budget, PolicySpec
from dreamrsi.core.view import TreeView
from dreamrsi.dreaming.pareto import knob_values
from dreamrsi.errors import ConfigError
from dreamrsi.policies._common import refine_then_open
from dreamrsi.policies.params import Kind, Param, ParamSpace, param, space_of
from dreamrsi.policies.registry import BUILTIN, check_spec, make_policy, parse_spec, space
from tests.core.test_view import node
from tests.policies.test_families import sample_params

FAMILIES = sorted(BUILTIN)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_declaration_is_the_constructor(family: str) -> None:
    declared = space(family)
    cls = type(make_policy(family))
    assert declared.declared and declared.names == tuple(
        f.name for f in dataclasses.fields(cls))
    signature = inspect.signature(cls)
    for p in declared:
        assert signature.parameters[p.name].default == p.default
        assert p.problem(p.default) is None
        assert p.searched
        if p.search is not None:  # the searched range lies inside the valid one
            for end in p.search:
                assert p.problem(p.kind is Kind.INT and int(end) or end) is None
    assert declared.knob is not None and declared.knob_param().searched
    assert knob_values(family) == (declared.knob, declared.knob_param().sweep())


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_the_canonical_string_parses_back_to_the_same_spec(family: str, seed: int) -> None:
    spec = PolicySpec(family, sample_params(family, random.Random(seed)))
    check_spec(spec)
    again = parse_spec(spec.label())
    assert again == spec and again.version_id() == spec.version_id()
    assert str(again) == spec.label() and hash(again) == hash(spec)


def test_values_are_typed_as_declared_and_checked_at_the_edge() -> None:
    spec = parse_spec("halving:n0=4,finish=false")
    assert spec.params == {"n0": 4, "finish": False}
    assert parse_spec("ucb:c=1").params["c"] == 1.0
    with pytest.raises(ConfigError, match="parameter 'n0' is '4.5' .expected int"):
        parse_spec("halving:n0=4.5")
    with pytest.raises(ConfigError, match="'planned:stretch=0.0': stretch must be above 0"):
        parse_spec("planned:stretch=0")
    with pytest.raises(ConfigError, match="levels must be at most 10, got 11"):
        parse_spec("ladder:levels=11")
    with pytest.raises(ConfigError, match="has no parameter 'depth'.*one of longest, levels"):
        parse_spec("ladder:depth=3")
    with pytest.raises(ConfigError, match="branches must be an integer, got 2.5"):
        check_spec(PolicySpec("fixed", {"branches": 2.5}))
    with pytest.raises(ConfigError, match="finish must be one of False, True, got 1"):
        make_policy(PolicySpec("halving", {"finish": 1}))
    with pytest.raises(ConfigError, match="no parameter 'bogus'"):
        check_spec(PolicySpec("fixed", {"bogus": 1}))


@pytest.mark.parametrize("text", ["fixed:branches=2,branches=3", "fixed:branches=2, branches =2",
                                  "greedy:top=1,branches=2,top=1"])
def test_a_parameter_given_twice_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="parameter '(branches|top)' is given twice") as info:
        parse_spec(text)
    assert info.value.key == "policy"


class Outside:
    """A third party's policy: no declared fields, only a constructor."""

    name = "outside"

    def __init__(self, width: int = 2, label: str = "x", sharp: bool = False) -> None:
        self.width, self.label, self.sharp = width, label, sharp


def test_a_policy_without_declarations_gets_its_signature_as_space() -> None:
    found = space_of(Outside)
    assert not found.declared and found.names == ("width", "label", "sharp")
    assert found.coerce("outside", {"width": "3", "label": "y", "sharp": "1"}) == {
        "width": 3, "label": "y", "sharp": True}
    assert found.searched() == ()  # nothing to search without ranges
    found.check({"width": "anything"})  # values are the constructor's business
    with pytest.raises(ValueError, match="no parameter 'depth'"):
        found.check({"depth": 1})


def test_a_declaration_with_an_invalid_default_is_refused() -> None:
    @dataclasses.dataclass
    class Broken:
        width: int = param(0, low=1)

    with pytest.raises(TypeError, match="default of width"):
        space_of(Broken)


def test_sweeps_spread_over_the_searched_range() -> None:
    assert Param("c", Kind.FLOAT, 0.5, search=(0.0, 3.0)).sweep() == (
        0.0, 0.6, 1.2, 1.8, 2.4, 3.0)
    assert Param("r", Kind.INT, 2, search=(1, 3)).sweep() == (1, 2, 3)
    assert Param("b", Kind.BOOL, True).sweep() == (False, True)
    space_ = ParamSpace((Param("r", Kind.INT, 2, search=(1, 3)),))
    with pytest.raises(ValueError, match="no knob"):
        space_.knob_param()


def chains(*lengths: int, lost: int = 0) -> TreeView:
    """A view with one chain per length, opened in order; the first ``lost`` nodes of the
    first chain were lost."""
    view = TreeView(node(0, None, 0.0))
    seq = 0
    for length in lengths:
        parent: int = 0
        for _ in range(length):
            seq += 1
            view.reveal(node(seq, parent, 1.0) if seq > lost else
                        node(seq, parent, None, status=node(0, None).status.LOST))
            parent = seq
    return view


def test_refine_then_open_refines_in_opening_order_then_opens() -> None:
    view = chains(3, 1, 2)
    tips = [b.tip for b in view.branch_stats()]
    assert refine_then_open(view, 4, repeat(3), 5) == [tips[1], tips[2], "r-0", "r-0"]
    assert refine_then_open(view, 1, repeat(3), 5) == [tips[1]]
    assert refine_then_open(view, 4, (1, 2, 3), 3) == [tips[1], tips[2]]
    assert refine_then_open(view, 4, (1,), 3) == []  # branches past the lengths: left alone
    assert refine_then_open(view, 0, repeat(9), 9) == []
    lost = chains(2, lost=1)  # a lost attempt does not count as finished
    assert refine_then_open(lost, 2, repeat(2), 1) == [next(lost.branch_stats()).tip]


@pytest.mark.parametrize(("spec", "lengths"), [
    ("fixed:branches=3,refine=2", lambda p: [3] * 3),
    ("ladder:longest=4,levels=2", lambda p: [4, 2, 2]),
])
def test_the_chain_families_fill_their_shapes(spec: str, lengths: Any) -> None:
    policy = make_policy(spec)
    view = TreeView(node(0, None, 0.0))
    seq = 0
    while batch := list(policy.select(view, Budget(2))):
        for parent in batch:
            seq += 1
            view.reveal(node(seq, int(parent.split("-")[1]), 1.0))
        view.complete_round()
    assert [b.length for b in view.branch_stats()] == lengths(policy)
