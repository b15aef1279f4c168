"""Survival passes on real runs: real git, real evaluator processes in bubblewrap, a real
SQLite store and its ledger."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival import Reason, Verdict
from dreamrsi.survival.service import survive
from tests.survival.helpers import run_task

pytestmark = pytest.mark.usefixtures("bwrap")

NOISY = """
import json, random
print(json.dumps({"score": random.random(), "valid": True, "feedback": "noise"}))
"""
INSTANCE = """
import json, os
seed = int(os.environ.get("DREAM_FRESH_SEED") or 12345)
v = float(open("value.txt").read())
hit = v == seed % 1000
print(json.dumps({"score": float(hit), "valid": True, "feedback": f"target {seed % 1000}"}))
"""
HARD_CODE = """
open("value.txt", "w").write("345")
print("PLAN: the answer")
"""


def _reasons(outcome: object) -> set[Reason]:
    return {f.reason for f in outcome.findings if f.fails}  # type: ignore[attr-defined]


def test_an_honest_improvement_survives(store: SqliteRunStore, tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task")
    out = survive(store, run_id, repeats=3, out=tmp_path / "report")
    assert out.verdict is Verdict.SURVIVED, out.findings
    delta = out.report["claims"]["delta"]
    assert delta["low"] > 0 and delta["mean"] == pytest.approx(1.0)
    order = [(m["role"], m["repeat"]) for m in out.report["measurements"]]
    assert order == [("base", 0), ("candidate", 0), ("candidate", 1), ("base", 1),
                     ("base", 2), ("candidate", 2)]
    # every cited row is an admissible survival row of the run's chain, and it verifies
    rows = {r.event.event_id: r.event for r in store.ledger(run_id)}
    cited = delta["rows"]
    assert len(cited) == 6 and all(rows[c].actor is Actor.SURVIVAL and rows[c].admissible
                                   for c in cited)
    assert rows[out.report["claims"]["recorded_score"]["rows"][0]].actor is Actor.EVAL
    assert store.verify(run_id).ok
    record = store.get_pass(out.record.pass_id)
    assert record.status == "survived" and record.report == out.report
    on_disk = json.loads((tmp_path / "report" / "report.json").read_text())
    assert on_disk["verdict"] == "survived"
    assert "value.txt" in (tmp_path / "report" / "report.md").read_text()


def test_a_pass_leaves_no_work_folder_behind(store: SqliteRunStore, tmp_path: Path) -> None:
    """The pass made the store's work folder (in /dev/shm, named after the store): it goes
    with the pass, so passes over many stores do not pile up empty folders there."""
    run_id = run_task(store, tmp_path / "task")
    assert not store.work_folder.exists()  # the run removed it when it stopped
    assert survive(store, run_id, repeats=1, out=tmp_path / "report").verdict
    assert not store.work_folder.exists()


def test_the_base_itself_shows_no_improvement(store: SqliteRunStore, tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task", budget=1)
    root = store.nodes(run_id)[0].node_id
    out = survive(store, run_id, root, repeats=2, out=tmp_path / "r")
    assert out.verdict is Verdict.FAILED and _reasons(out) == {Reason.NO_IMPROVEMENT}


def test_a_noisy_evaluator_fails(store: SqliteRunStore, tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task", evaluate=NOISY, budget=1)
    node = store.nodes(run_id)[1].node_id
    out = survive(store, run_id, node, repeats=3, out=tmp_path / "r")
    assert out.verdict is Verdict.FAILED
    assert {Reason.FLAKY, Reason.NOT_REPRODUCED} <= _reasons(out)


def test_a_failing_survival_command_fails(store: SqliteRunStore, tmp_path: Path) -> None:
    toml = """
    [survival]
    commands = ["python3 -c 'print(\\"checked\\")'",
                "python3 -c 'import sys; print(\\"broken build\\"); sys.exit(3)'"]
    """
    run_id = run_task(store, tmp_path / "task", extra_toml=textwrap.dedent(toml), budget=1)
    out = survive(store, run_id, repeats=1, out=tmp_path / "r")
    assert out.verdict is Verdict.FAILED and _reasons(out) == {Reason.COMMAND_FAILED}
    [failed] = [f for f in out.findings if f.fails]
    assert "exited 3" in failed.message and "broken build" in failed.message
    assert [c["passed"] for c in out.report["claims"]["commands"]] == [True, False]


def test_a_changed_protected_path_fails_even_through_a_link(store: SqliteRunStore,
                                                            tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task", budget=1)
    seed = tmp_path / "other"
    seed.mkdir()
    (seed / "value.txt").write_text("0")
    (seed / "real.py").write_text((tmp_path / "task" / "seed" / "evaluate.py").read_text())
    (seed / "evaluate.py").symlink_to("real.py")  # same bytes behind a link
    base = store.workspaces.import_folder(seed, "linked", "refs/dreamrsi/test/base", [])
    out = survive(store, run_id, repeats=1, base=base, out=tmp_path / "r")
    assert out.verdict is Verdict.FAILED
    [found] = [f for f in out.findings if f.reason is Reason.PROTECTED_CHANGED]
    assert found.paths == ("evaluate.py",)
    [row] = [r.event for r in store.ledger(run_id) if r.event.event_id == found.rows[0]]
    assert row.actor is Actor.SURVIVAL and row.exit == 1
    assert row.parsed is not None and row.parsed["changed"] == ["evaluate.py"]
    assert out.report["claims"]["protected_paths"]["rows"] == list(found.rows)


def test_a_hard_coded_answer_fails_on_fresh_instances(store: SqliteRunStore,
                                                      tmp_path: Path) -> None:
    toml = """
    [survival]
    fresh = "python3 evaluate.py"
    """
    run_id = run_task(store, tmp_path / "task", evaluate=INSTANCE, propose=HARD_CODE,
                      extra_toml=textwrap.dedent(toml), budget=1)
    out = survive(store, run_id, repeats=2, out=tmp_path / "r")
    assert out.report["claims"]["delta"]["low"] > 0  # the search's instance: it wins
    assert _reasons(out) == {Reason.FRESH_FAILED}
    seeds = {m["fresh_seed"] for m in out.report["measurements"] if m["kind"] == "fresh"}
    assert len(seeds) == 2 and 12345 not in seeds


def test_an_honest_improvement_carries_to_fresh_instances(store: SqliteRunStore,
                                                          tmp_path: Path) -> None:
    toml = """
    [survival]
    fresh = "python3 evaluate.py"
    """
    run_id = run_task(store, tmp_path / "task", extra_toml=textwrap.dedent(toml), budget=1)
    out = survive(store, run_id, repeats=2, out=tmp_path / "r")
    assert out.verdict is Verdict.SURVIVED, out.findings
    assert out.report["claims"]["fresh_delta"]["mean"] == pytest.approx(1.0)


def test_an_invalid_base_could_not_run(store: SqliteRunStore, tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task", budget=1)
    seed = tmp_path / "broken"
    seed.mkdir()
    (seed / "value.txt").write_text("not a number")
    base = store.workspaces.import_folder(seed, "broken", "refs/dreamrsi/test/base", [])
    out = survive(store, run_id, repeats=1, base=base, out=tmp_path / "r")
    assert out.verdict is Verdict.COULD_NOT_RUN
    assert store.get_pass(out.record.pass_id).status == "could_not_run"


def test_protected_trees_compare_every_entry_both_ways(store: SqliteRunStore,
                                                       tmp_path: Path) -> None:
    from dreamrsi.survival.constraints import protected_changes

    def commit(name: str, files: dict[str, str], mode: dict[str, int] | None = None) -> str:
        folder = tmp_path / name
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        for rel, bits in (mode or {}).items():
            (folder / rel).chmod(bits)
        return store.workspaces.import_folder(folder, name, f"refs/dreamrsi/test/{name}", [])

    base = commit("a", {"data/x.txt": "x", "data/y.txt": "y", "free.txt": "f"})
    tree = store.workspaces.tree
    for name, files, mode, changed in [
        ("b", {"data/x.txt": "x", "data/y.txt": "y", "free.txt": "changed"}, None, []),
        ("c", {"data/x.txt": "x", "data/y.txt": "y", "data/z.txt": "z"}, None, ["data/z.txt"]),
        ("d", {"data/x.txt": "x"}, None, ["data/y.txt"]),
        ("e", {"data/x.txt": "x", "data/y.txt": "y"}, {"data/x.txt": 0o755}, ["data/x.txt"]),
    ]:
        other = commit(name, files, mode)
        assert protected_changes(tree(base, []), tree(other, []), ("data/",)) == changed
        assert protected_changes(tree(other, []), tree(base, []), ("data",)) == changed


NETWORK_EVALUATE = """
import json
import solution
v = solution.value()
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""


def test_a_result_that_needs_the_network_fails(store: SqliteRunStore, tmp_path: Path,
                                              answer_server: str) -> None:
    url = answer_server
    propose = f"""
open("solution.py", "w").write(
    "import urllib.request\\n"
    "def value():\\n"
    "    return float(urllib.request.urlopen({url!r}, timeout=5).read())\\n")
print("PLAN: ask the server")
"""
    run_id = run_task(store, tmp_path / "task", evaluate=NETWORK_EVALUATE, propose=propose,
                      constraints='protected_paths = ["evaluate.py"]\nnetwork = true',
                      files={"solution.py": "def value():\n    return 0.0\n"}, budget=1)
    assert store.nodes(run_id)[1].raw_score == 5.0  # the search had the network
    out = survive(store, run_id, repeats=1, out=tmp_path / "r")
    assert Reason.NEEDS_NETWORK in _reasons(out)
    [net] = [m for m in out.report["measurements"] if m["kind"] == "network"]
    assert net["raw_score"] == 5.0


JITTER = """
import json, random
v = float(open("value.txt").read())
s = v * (1 + random.uniform(-0.01, 0.01))
print(json.dumps({"score": s, "valid": True, "feedback": "timing-like"}))
"""


@pytest.mark.parametrize(("relative", "verdict"), [(0.05, Verdict.SURVIVED),
                                                   (0.0, Verdict.FAILED)])
def test_noise_that_scales_with_the_score_is_judged_relatively(
        store: SqliteRunStore, tmp_path: Path, relative: float, verdict: Verdict) -> None:
    toml = f"""
    [survival]
    relative_tolerance = {relative}
    """
    run_id = run_task(store, tmp_path / "task", evaluate=JITTER,
                      extra_toml=textwrap.dedent(toml), budget=1)
    out = survive(store, run_id, repeats=3, out=tmp_path / "r")
    assert out.verdict is verdict, out.findings
    if verdict is Verdict.FAILED:
        assert Reason.FLAKY in _reasons(out)


def test_without_the_sandbox_the_clean_sandbox_and_network_are_untested(
        store: SqliteRunStore, tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task", budget=1)
    out = survive(store, run_id, repeats=1, isolation="off", out=tmp_path / "r")
    assert out.verdict is Verdict.SURVIVED
    untested = [f for f in out.findings if f.reason is Reason.UNTESTED]
    assert {f.check.value for f in untested} == {"reproduce", "network"}
    assert not any(f.fails for f in untested)
    assert out.report["environment"]["isolated"] is False
    assert any("network" in r for r in out.report["risks"])


def test_a_check_that_breaks_means_could_not_run(store: SqliteRunStore, tmp_path: Path) -> None:
    run_id = run_task(store, tmp_path / "task", budget=1)

    def broken(*args: object) -> list[object]:
        raise RuntimeError("cannot read the tests")

    def clean(*args: object) -> list[object]:
        return []

    assert survive(store, run_id, repeats=1, checks=[clean],  # type: ignore[list-item]
                   out=tmp_path / "a").verdict is Verdict.SURVIVED
    out = survive(store, run_id, repeats=1, checks=[broken],  # type: ignore[list-item]
                  out=tmp_path / "b")
    assert out.verdict is Verdict.COULD_NOT_RUN
    assert "cannot read the tests" in out.report["findings"][-1]["message"]


def test_an_out_that_is_a_file_is_refused_before_the_pass(store: SqliteRunStore,
                                                         tmp_path: Path) -> None:
    from dreamrsi.errors import ConfigError

    run_id = run_task(store, tmp_path / "task", budget=1)
    (tmp_path / "taken").write_text("keep me")
    with pytest.raises(ConfigError, match="not a folder"):
        survive(store, run_id, repeats=1, out=tmp_path / "taken")
    assert store.list_passes() == [] and (tmp_path / "taken").read_text() == "keep me"


def test_a_task_changed_since_the_run_is_refused(store: SqliteRunStore, tmp_path: Path) -> None:
    from dreamrsi.errors import ConfigError

    run_id = run_task(store, tmp_path / "task", budget=1)
    (tmp_path / "task" / "seed" / "evaluate.py").write_text("print('{}')\n")
    with pytest.raises(ConfigError, match="changed since run"):
        survive(store, run_id, repeats=1, out=tmp_path / "r")
    assert store.list_passes() == []
