"""One resolver opens every policy a spec names: a family, or a stored program whose worker
closes with the context; one parser reads both kinds of spec."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import replay
from dreamrsi.dreaming.loop import LoopConfig
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import (
    FAMILIES,
    check_spec,
    code_digest,
    kind_of,
    make_policy,
    open_policy,
    parse_spec,
)
from dreamrsi.programs import ProgramLimits, ProgramPolicy, program_digest
from dreamrsi.programs.stored import CODE, program_spec
from dreamrsi.store.sqlite import SqliteRunStore
from tests.programs.programs import GREEDY
from tests.programs.test_worker import make_tree

DIGEST = "sha256:" + "ab" * 32


def test_one_parser_reads_families_and_programs() -> None:
    family = parse_spec("fixed:branches=2,refine=3")
    program = parse_spec(f" code:digest={DIGEST} ")
    assert program == program_spec(DIGEST)
    assert parse_spec(program.label()) == program and parse_spec(family.label()) == family
    assert kind_of(family) is FAMILIES and kind_of(program).name == CODE
    assert kind_of(program).isolated and not kind_of(family).isolated
    assert (code_digest(family), code_digest(program)) == (None, DIGEST)


@pytest.mark.parametrize("text", ["code", "code:digest=sha256:12", f"code:hash={DIGEST}",
                                  f"code:digest={DIGEST.upper()}", "code:digest=" + "ab" * 32])
def test_a_malformed_program_spec_is_refused_at_the_edge(text: str) -> None:
    with pytest.raises(ConfigError, match="code:digest=sha256"):
        parse_spec(text)


def test_a_program_spec_with_other_parameters_is_refused() -> None:
    with pytest.raises(ConfigError, match="digest only"):
        check_spec(PolicySpec(CODE, {"digest": DIGEST, "branches": 2}))
    with pytest.raises(ConfigError, match="digest only"):
        check_spec(PolicySpec(CODE, {"digest": 7}))


def test_a_program_is_not_built_without_its_store() -> None:
    with pytest.raises(ConfigError, match="open_policy"):
        make_policy(program_spec(DIGEST))
    with pytest.raises(ConfigError, match="store"):
        open_policy(program_spec(DIGEST))


def test_a_family_and_a_policy_object_open_as_themselves() -> None:
    with open_policy("greedy:branches=3") as policy:
        assert type(policy) is type(make_policy("greedy:branches=3"))
    own = make_policy("fixed")
    with open_policy(own) as same:
        assert same is own


@pytest.mark.usefixtures("bwrap")
def test_a_stored_program_opens_in_its_worker_and_closes_with_the_context(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tree = make_tree(30, 3, 1)
    with SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        digest = "sha256:" + store.blobs.put(GREEDY.encode())
        assert digest == program_digest(GREEDY)
        spec = parse_spec(f"code:digest={digest}")
        limits = ProgramLimits(reply_s=1.0, start_s=10.0, total_s=60.0)
        with open_policy(spec, store, limits) as policy:
            assert isinstance(policy, ProgramPolicy)
            with ProgramPolicy(GREEDY, limits) as direct:
                assert replay(policy, tree, workers=2, max_rounds=40) == replay(
                    direct, tree, workers=2, max_rounds=40)
            assert list((tmp_path / "tmp").glob("dreamrsi-program-*"))  # its worker's folder
        assert not list((tmp_path / "tmp").glob("dreamrsi-program-*"))  # closed with it
        with pytest.raises(ConfigError, match="not in the store"):
            open_policy(program_spec(DIGEST), store)


def test_a_loop_started_from_a_program_reads_its_config_back() -> None:
    config = LoopConfig(total_budget=4, initial=program_spec(DIGEST))
    assert LoopConfig.from_json(config.to_json()).initial == program_spec(DIGEST)
