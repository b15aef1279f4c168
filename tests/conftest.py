"""Shared fixtures: small task directories written on the fly, and stores to run them in."""

from __future__ import annotations

import http.server
import shutil
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dreamrsi.store.sqlite import SqliteRunStore

# An evaluator that scores the number in value.txt; a proposer that adds a seeded step to it.
EVALUATE_VALUE = """
import json
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}", "metrics": {"v": v}}))
"""
PROPOSE_STEP = """
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
rng = random.Random(ctx["seed"])
v = float(open("value.txt").read())
step = rng.uniform(-1.0, 2.0)
open("value.txt", "w").write(repr(v + step))
print(f"PLAN: add {step:.3f}")
"""


def write_task(
    root: Path,
    *,
    evaluate: str = EVALUATE_VALUE,
    propose: str = PROPOSE_STEP,
    name: str = "toy",
    direction: str = "maximize",
    evaluator_timeout: float = 20,
    proposer_timeout: float = 20,
    extra_toml: str = "",
    constraints: str = 'protected_paths = ["evaluate.py"]',
    files: dict[str, str] | None = None,
) -> Path:
    """Write a task directory with a seed holding value.txt, evaluate.py and propose.py."""
    seed = root / "seed"
    seed.mkdir(parents=True)
    (seed / "evaluate.py").write_text(textwrap.dedent(evaluate))
    (seed / "propose.py").write_text(textwrap.dedent(propose))
    (seed / "value.txt").write_text("0")
    for rel, text in (files or {}).items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_text(text)
    (root / "task.toml").write_text(textwrap.dedent(f"""\
        name = "{name}"
        objective = "Make the number large."
        direction = "{direction}"
        [workspace]
        seed = "seed"
        [evaluator]
        command = "python3 evaluate.py"
        timeout_s = {evaluator_timeout}
        [proposer]
        kind = "command"
        command = "python3 propose.py"
        timeout_s = {proposer_timeout}
        [constraints]
        {constraints}
        """) + textwrap.dedent(extra_toml))
    return root


TaskFactory = Callable[..., Path]


@pytest.fixture
def make_task(tmp_path: Path) -> TaskFactory:
    """Factory: ``make_task(evaluate=..., propose=..., ...)`` returns a new task directory."""
    counter = iter(range(1_000_000))

    def factory(**kwargs: object) -> Path:
        return write_task(tmp_path / f"task{next(counter)}", **kwargs)  # type: ignore[arg-type]

    return factory


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """A fresh store directory path (not created yet)."""
    return tmp_path / "store"


@pytest.fixture
def store(store_dir: Path) -> Iterator[SqliteRunStore]:
    """A store opened for writing."""
    handle = SqliteRunStore.open(store_dir, writer=True, holder="tests")
    yield handle
    handle.close()


@pytest.fixture(scope="session")
def bwrap() -> str:
    """Path of bubblewrap; tests that need it fail (not skip) where it is missing."""
    path = shutil.which("bwrap")
    assert path, "bubblewrap is required for these tests: apt-get install bubblewrap"
    return path


@pytest.fixture
def answer_server() -> Iterator[str]:
    """A loopback HTTP server outside the sandbox answering 5: "the network" (a command
    without the network has its own namespace, whose loopback is not the host's)."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the server's name for it
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"5")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _encodable(text: str) -> str:
    """``text`` with lone surrogates written as escapes (UTF-8 cannot carry them)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Reports leave a test worker as UTF-8 (pytest-xdist): what a test captured may hold lone
    surrogates on purpose (hostile text), so its sections and failure text are made
    encodable, escaped, not dropped."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [(title, _encodable(body)) for title, body in report.sections]
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        if _encodable(text) != text:
            report.longrepr = _encodable(text)


@pytest.fixture(scope="session")
def ray_local() -> Iterator[object]:
    """A local Ray instance with 2 CPUs for this test process (each xdist worker its own),
    shut down when the session ends."""
    from dreamrsi.engine.ray_cluster import connect

    ray = connect(num_cpus=2)
    yield ray
    ray.shutdown()  # type: ignore[attr-defined]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--screenshots", metavar="DIR", default=None,
                     help="Save the dashboard's browser-test screenshots in DIR (default: the "
                          "tests' temporary folder).")
