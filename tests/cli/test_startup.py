"""Start-up: what the CLI imports for ``--help`` and the reading commands.

Each check runs the command in a fresh interpreter and lists the heavy modules it loaded
(``benchmarks/bench_startup.py`` measures the time they would cost).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_node, make_run

HEAVY = ("numpy", "scipy", "optuna", "openai", "httpx", "pydantic", "yaml", "rich.markdown",
         "rich.traceback", "rich.progress", "rich.table", "rich.console", "importlib.metadata",
         "dreamrsi.engine.run", "dreamrsi.dreaming.dreamer", "dreamrsi.tasks", "dreamrsi.sandbox",
         "mcp", "dreamrsi.mcp_server", "fastapi", "starlette", "uvicorn", "dreamrsi.web")
"""Modules that a command loads only when it needs them (Rich's console too: the reading
commands draw their text with ``dreamrsi.cli._table``; only an error message prints through
Rich)."""

PROBE = """
import json, sys
from dreamrsi.cli.main import main
heavy = json.loads(sys.argv[2])
sys.argv = ["dreamrsi", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
print("\\nPROBE " + json.dumps({"code": code, "loaded": loaded}))
"""


def _probe(*args: str, heavy: tuple[str, ...] = HEAVY) -> dict[str, object]:
    """Run ``dreamrsi ARGS`` in a fresh interpreter; its exit code and the heavy modules it
    loaded."""
    res = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(heavy)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    line = res.stdout.rsplit("\nPROBE ", 1)[1]
    return dict(json.loads(line))


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one run of five nodes, written through the store itself."""
    root = tmp_path_factory.mktemp("startup") / "store"
    task = TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest, {"direction": "maximize"})
    run = make_run()
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(task)
        store.create_run(run)
        store.add_nodes([make_node(run.run_id, 0, None),
                         *(make_node(run.run_id, k, k - 1) for k in range(1, 5))])
    return root, run.run_id


def test_help_loads_nothing_heavy() -> None:
    for args in (["--help"], ["run", "--help"], ["dream", "--help"], ["show", "--help"],
                 ["mcp", "--help"]):
        assert _probe(*args) == {"code": 0, "loaded": []}, args


def test_report_help_loads_neither_matplotlib_nor_the_report() -> None:
    heavy = (*HEAVY, "matplotlib", "fastapi", "dreamrsi.report", "dreamrsi.panels")
    assert _probe("report", "--help", heavy=heavy) == {"code": 0, "loaded": []}


def test_a_usage_error_loads_nothing_heavy() -> None:
    assert _probe("run", "--budget", "zero") == {"code": 2, "loaded": []}


def test_json_readers_load_nothing_heavy(small_store: tuple[Path, str]) -> None:
    store, run_id = small_store
    for args in (["status"], ["show", run_id], ["show", run_id, "--all"], ["best", run_id],
                 ["ledger", "head", run_id], ["show", run_id, "2"], ["lifecycle", "list"]):
        assert _probe(*args, "--store", str(store), "--json") == {"code": 0, "loaded": []}, args


def test_text_readers_load_no_rich(small_store: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = small_store
    heavy = (*HEAVY, "rich", "logging.handlers")
    for args in (["status"], ["show", run_id], ["show", run_id, "--all"], ["best", run_id],
                 ["ledger", "show", run_id], ["ledger", "head", run_id], ["show", run_id, "2"],
                 ["lifecycle", "list"]):
        assert _probe(*args, "--store", str(store), heavy=heavy) == {"code": 0, "loaded": []}, args
    empty = tmp_path / "empty"
    SqliteRunStore.open(empty, writer=True).close()
    assert _probe("status", "--store", str(empty), heavy=heavy) == {"code": 0, "loaded": []}


def test_an_error_loads_nothing_heavy_but_rich_console(tmp_path: Path) -> None:
    heavy = tuple(h for h in HEAVY if h != "rich.console")
    out = _probe("status", "--store", str(tmp_path / "none"), heavy=heavy)
    assert out == {"code": 1, "loaded": []}


def test_the_probe_sees_heavy_imports(small_store: tuple[Path, str]) -> None:
    """The check can fail: the commands that need NumPy, Optuna and pydantic load them."""
    out = _probe("task", "check", "no-such-task")
    assert out["code"] == 1 and "pydantic" in out["loaded"]  # type: ignore[operator]
    out = _probe("dream", "no-such-task", "--trials", "1")
    assert out["code"] == 1 and "optuna" in out["loaded"]  # type: ignore[operator]


def test_the_app_of_one_command_answers_as_the_whole_app(
        small_store: tuple[Path, str]) -> None:
    from typer.testing import CliRunner

    from dreamrsi.cli.main import _COMMANDS, app, app_for

    runner = CliRunner()
    store, run_id = small_store
    assert app_for([]) is app and app_for(["--debug", "status"]) is app
    assert app_for(["ledger", "head"]) is app
    cases = [[name, "--help"] for name in _COMMANDS]
    cases += [[name, "--no-such-option"] for name in _COMMANDS]
    cases += [["show", run_id, "--store", str(store), "--json"], ["show", run_id, "--branch", "0"],
              ["status", "--store", str(store)], ["best", "nope", "--store", str(store)]]
    for args in cases:
        single = app_for(args)
        assert single is not app
        want, got = runner.invoke(app, args), runner.invoke(single, args)
        assert (got.exit_code, got.output) == (want.exit_code, want.output), args


def test_the_cli_limits_are_the_engines() -> None:
    from dreamrsi.cli import options
    from dreamrsi.engine import config

    assert (options.MAX_INT, options.MAX_SEED, options.MAX_HISTORY) == (
        config.MAX_INT, config.MAX_SEED, config.MAX_HISTORY)
    from dreamrsi.dreaming import loop

    assert options.DEFAULT_HISTORY == loop.DEFAULT_HISTORY


def test_policies_of_a_recorded_task_does_not_validate_it(tmp_path: Path) -> None:
    """``policies`` looks the task up by the digest of its files; the store validated it when
    recording it, so the schema (pydantic) is not imported. A task the store does not know is
    loaded, so a broken one still gets its error."""
    from dreamrsi.tasks import resolve_task

    task = resolve_task("circle-packing-26")
    store = tmp_path / "store"
    with SqliteRunStore.open(store, writer=True) as writer:
        writer.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest,
                                   {"direction": task.direction.value}))
    heavy = (*(h for h in HEAVY if h != "dreamrsi.tasks"), "dreamrsi.tasks.spec", "rich")
    assert _probe("policies", "circle-packing-26", "--store", str(store), "--json",
                  heavy=heavy) == {"code": 0, "loaded": []}
    unknown = _probe("policies", "circle-packing-32", "--store", str(store), "--json")
    assert unknown["code"] == 0 and "dreamrsi.tasks.spec" in unknown["loaded"]  # type: ignore[operator]


def test_a_run_of_a_command_task_loads_no_model_client(tmp_path: Path) -> None:
    """Only a model's run loads the model client (``openai`` and its HTTP stack: the largest
    import of a run, paid by every short run before)."""
    task = tmp_path / "task"
    (task / "seed").mkdir(parents=True)
    (task / "seed" / "data.txt").write_text("seed\n")
    (task / "task.toml").write_text(
        'name = "noop"\nobjective = "o"\ndirection = "maximize"\n[workspace]\nseed = "seed"\n'
        "[evaluator]\ncommand = \"echo '{\\\"score\\\": 1.0, \\\"valid\\\": true}'\"\n"
        '[proposer]\nkind = "command"\ncommand = "echo x > out.txt"\n')
    heavy = ("openai", "httpx", "dreamrsi.agents.client", "dreamrsi.agents.proposer")
    out = _probe("run", str(task), "--budget", "2", "--isolation", "off", "--store",
                 str(tmp_path / "store"), "--json", heavy=heavy)
    assert out == {"code": 0, "loaded": []}


DATACLASSES = """
import dataclasses, json, sys
made = []
process = dataclasses._process_class
def counted(cls, *args, **kwargs):
    made.append(f"{cls.__module__}.{cls.__qualname__}")
    return process(cls, *args, **kwargs)
dataclasses._process_class = counted
from dreamrsi.cli.main import main
sys.argv = ["dreamrsi", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print("\\nPROBE " + json.dumps(sorted(m for m in made if m.startswith("dreamrsi."))))
"""
STARTUP_DATACLASSES = ["dreamrsi.core.policy.GridPlan", "dreamrsi.core.policy.PolicySpec",
                       "dreamrsi.store.events.LedgerEvent"]
"""The dataclasses a reading command makes: Python 3.11 compiles each one's methods when it
is made (about 4 M instructions, a named tuple under 1 M), so the plain records on this path
are named tuples (docs/architecture.md, "Start-up")."""


@pytest.mark.parametrize("command", [("status",), ("show", "RUN"), ("best", "RUN", "--json")])
def test_reading_commands_make_only_the_dataclasses_they_need(
        small_store: tuple[Path, str], command: tuple[str, ...]) -> None:
    root, run_id = small_store
    args = [run_id if a == "RUN" else a for a in command]
    res = subprocess.run([sys.executable, "-c", DATACLASSES,
                          json.dumps([*args, "--store", str(root)])],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.rsplit("\nPROBE ", 1)[1]) == STARTUP_DATACLASSES
