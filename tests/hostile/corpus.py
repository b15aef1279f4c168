"""Run the hostile task corpus (tests/hostile/cases) and judge what each attack reached.

Each case is a task directory without its common files: ``case.toml`` (what the attack does,
the issue finding it reproduces, and the verdict expected per isolation mode), and the files
that differ from ``_common/`` (a hostile ``propose.py``, ``evaluate.py`` or both). The
harness copies a case into a fresh task, adds ``targets.json`` (the host paths, ports and
canaries to go after), runs it with the real CLI in a subprocess whose environment holds
canary secrets, and judges the outcome itself:

* the attack must have run (its ``RAN`` line is in a stored output; with ``ran_every_attempt``
  under ``[task]``, in the stored outputs of every attempt's evaluation), or the case proves
  nothing;
* it *escaped* if the run hung or crashed, a score of 1e8 or more was recorded, the ledger no
  longer verifies, a canary secret appears anywhere in the store (outputs, feedback, committed
  files), a host file changed, a host listener was reached, a process it started outlives the
  run, or it printed ``ESCAPED`` (an attack reports what it reached);
* otherwise it was *contained*.

``python -m tests.hostile.corpus --write-docs`` rewrites the table in docs/sandbox.md from the
expectations, which the tests assert case by case.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.hostile.ray_driver import RayDriver

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
COMMON = HERE / "_common"
MODES = ("bwrap", "off")
CANARIES = {
    "DATABASE_URL": "postgres://canary-db-7f3a@db/prod",
    "GH_PAT": "ghp_canarygithubtoken7f3a",
    "SSHPASS": "canary-ssh-pass-7f3a",
    "OPENAI_API_KEY": "sk-canary-openai-7f3a",
}
SECRET_TEXT = "canary-host-secret-7f3a"
VICTIM_TEXT = "victim, unchanged\n"
FORGED = 1e8
RUN_TIMEOUT_S = 180
DEFAULT_PROTECTED = ("evaluate.py", "attack.py", "targets.json")


@dataclass(frozen=True)
class Case:
    """One hostile task of the corpus."""

    name: str
    attack: str
    covers: str
    finding: str
    expect: dict[str, str]
    task: dict[str, object]

    def expected(self, mode: str) -> str:
        """The verdict expected in ``mode`` for the user running the tests."""
        if mode == "off" and os.geteuid() != 0:
            return self.expect.get("off_as_user", self.expect["off"])
        return self.expect[mode]


def load_cases() -> list[Case]:
    """Every case of the corpus, sorted by name."""
    cases = []
    for folder in sorted(p for p in CASES.iterdir() if p.is_dir()):
        spec = tomllib.loads((folder / "case.toml").read_text())
        cases.append(Case(folder.name, spec["attack"], spec["covers"],
                          str(spec.get("finding", "")), dict(spec["expect"]),
                          dict(spec.get("task", {}))))
    return cases


@dataclass
class Verdict:
    """What one run of one case reached."""

    ran: bool
    escapes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "escapes" if self.escapes else "contained"


class _Listeners:
    """A unix socket by path, an abstract one and a loopback TCP port, counting connections."""

    def __init__(self, folder: Path, name: str) -> None:
        self.hits: list[str] = []
        self.path = str(folder / "host.sock")
        self.abstract = f"dreamrsi-hostile-{name}-{os.getpid()}-{time.monotonic_ns()}"
        self._socks = []
        for family, address, label in ((socket.AF_UNIX, self.path, "unix socket"),
                                       (socket.AF_UNIX, "\0" + self.abstract, "abstract socket"),
                                       (socket.AF_INET, ("127.0.0.1", 0), "loopback TCP")):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.bind(address)
            sock.listen(8)
            sock.settimeout(0.2)
            self._socks.append((sock, label))
        self.port = self._socks[2][0].getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for sock, label in self._socks:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    continue
                self.hits.append(label)
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock, _ in self._socks:
            sock.close()


def _build(case: Case, root: Path, host: Path, listeners: _Listeners, store: Path,
           tag: str, work: Path) -> Path:
    """Write the case's task directory and the host files it attacks (``work``: where the
    attempts' folders are); return the task dir."""
    task_dir, seed = root / "task", root / "task" / "seed"
    seed.mkdir(parents=True)
    for source in (COMMON, CASES / case.name):
        for path in source.rglob("*"):
            if path.is_file() and path.name != "case.toml":
                target = seed / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    (seed / "value.txt").write_text("0")
    (host / "lib").mkdir(parents=True)
    (host / "lib" / "scoring.py").write_text(
        'print("ESCAPED forged helper imported")\ndef score(v):\n    return 1e9\n')
    (host / "secret.txt").write_text(SECRET_TEXT + "\n")
    (host / "secret.json").write_text(json.dumps(
        {"score": 1e9, "valid": True, "feedback": SECRET_TEXT}))
    (host / "victim.txt").write_text(VICTIM_TEXT)
    (seed / "targets.json").write_text(json.dumps({
        "store": str(store), "victim": str(host / "victim.txt"),
        "secret": str(host / "secret.txt"), "secret_json": str(host / "secret.json"),
        "host_dir": str(host), "task_dir": str(task_dir), "socket": listeners.path,
        "abstract": listeners.abstract, "port": listeners.port, "engine_pid": os.getpid(),
        "work_root": str(work), "tag": tag}))
    protected = [*DEFAULT_PROTECTED,
                 *(p for p in case.task.get("protected_paths", []) if p not in DEFAULT_PROTECTED)]
    limits = "".join(f"{key} = {json.dumps(value)}\n"
                     for key, value in dict(case.task.get("constraints", {})).items())
    (task_dir / "task.toml").write_text(
        f'name = "hostile-{case.name}"\nobjective = "Attack the engine."\n'
        'direction = "maximize"\n[workspace]\nseed = "seed"\n'
        '[evaluator]\ncommand = "python3 evaluate.py"\ntimeout_s = 20\n'
        '[proposer]\nkind = "command"\ncommand = "python3 propose.py"\ntimeout_s = 20\n'
        f"[constraints]\nprotected_paths = {json.dumps(protected)}\n{limits}")
    return task_dir


@contextmanager
def _world(case: Case, root: Path) -> Iterator[tuple[Path, Path, _Listeners, str]]:
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    host = root / "host"
    listeners = _Listeners(root, case.name)
    tag = f"{800 + os.getpid() % 90}.{time.monotonic_ns() % 10**7}"
    try:
        yield host, root / "store", listeners, tag
    finally:
        listeners.close()
        for pid in _alive_with(tag):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def run_case(case: Case, mode: str, root: Path, ray: RayDriver | None = None) -> Verdict:
    """Run one case in one isolation mode (``bwrap``: required; ``off``) and judge it.

    With ``ray``, the run's attempts are Ray tasks: the driver process ``ray`` holds (joined
    to a Ray cluster whose workers keep their attempts' folders in ``ray.cache``, where the
    case's ``work_root`` target points) runs the command lines, the checks' too; the
    driver's own work folder is then elsewhere.
    """
    with _world(case, root) as (host, store, listeners, tag):
        work = root / "work" if ray is None else ray.cache
        task_dir = _build(case, root, host, listeners, store, tag, work)
        cli = _Cli(ray, root, {"DREAMRSI_STORE": str(store),
                               "DREAMRSI_WORK_DIR": str(root / "work" if ray is None
                                                        else root / "driver-work")})
        budget = str(case.task.get("budget", 2))
        workers = str(case.task.get("workers", 1))
        argv = ["run", str(task_dir), "--budget", budget, "--workers", workers,
                "--isolation", "required" if mode == "bwrap" else "off",
                "--store", str(store), "--json", "--executor", "local" if ray is None else "ray",
                *(() if ray is None else ("--ray-address", ray.address))]
        escapes: list[str] = []
        try:
            code, _, stderr = cli(argv, RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Verdict(ran=True, escapes=["the run hung"])
        if code != 0:
            escapes.append(f"the run failed ({code}): {stderr.strip()[-300:]}")
        time.sleep(0.3)  # anything the run failed to kill would still be there
        escapes += _judge(store, task_dir, host, listeners, tag, cli)
        escapes += _export_escapes(store, root / "export", cli)
        ran = _ran(store, case.name) and (not case.task.get("ran_every_attempt")
                                           or _ran_every_attempt(store, case.name))
        return Verdict(ran=ran, escapes=escapes)


class _Cli:
    """Runs ``dreamrsi ARGV`` for one case: a process of its own (its environment the
    tests' with the canaries and the case's ``env``), or the Ray driver's command."""

    def __init__(self, ray: RayDriver | None, folder: Path, env: dict[str, str]) -> None:
        self.ray, self.folder, self.env = ray, folder, env

    def __call__(self, argv: list[str], timeout_s: float | None,
                 plain: bool = False) -> tuple[int, str, str]:
        """Exit status, stdout and stderr (``plain``: with the tests' own environment)."""
        if self.ray is not None:
            return self.ray.run(argv, self.env, self.folder, timeout_s or RUN_TIMEOUT_S)
        env = None if plain else {**os.environ, **CANARIES, **self.env}
        done = subprocess.run([sys.executable, "-m", "dreamrsi", *argv], env=env,
                              capture_output=True, text=True, timeout=timeout_s, check=False)
        return done.returncode, done.stdout, done.stderr


def _store_texts(store: Path) -> Iterator[bytes]:
    """Every blob, every node's text fields and every object of the workspace repository."""
    for blob in (store / "blobs").rglob("*"):
        if blob.is_file():
            yield blob.read_bytes()
    db = sqlite3.connect(f"file:{store / 'store.db'}?mode=ro", uri=True)
    try:
        for row in db.execute("SELECT feedback, plan, metrics FROM nodes"):
            yield " ".join(str(v) for v in row).encode()
    finally:
        db.close()
    objects = store / "repo.git" / "objects"
    for path in objects.glob("??/*"):
        yield zlib.decompress(path.read_bytes())


def _ran(store: Path, name: str) -> bool:
    marker = f"RAN {name}".encode()
    return any(marker in text for text in _store_texts(store))


def _ran_every_attempt(store: Path, name: str) -> bool:
    """Whether the ``RAN`` line is in the stored outputs of every attempt's evaluation."""
    from dreamrsi.store.sqlite import SqliteRunStore

    marker = f"RAN {name}".encode()
    with SqliteRunStore.open(store) as reader:
        run_id = reader.list_runs()[0].run_id
        attempts = {n.node_id for n in reader.nodes(run_id) if not n.is_root}
        proven = {r.event.node_id for r in reader.ledger(run_id)
                  if r.event.actor.value == "eval"
                  and any(marker in reader.get_blob(a.sha256) for a in r.event.artifacts)}
    return bool(attempts) and attempts <= proven


def _judge(store: Path, task_dir: Path, host: Path, listeners: _Listeners,
           tag: str, cli: _Cli) -> list[str]:
    found: list[str] = []
    secrets = [s.encode() for s in (*CANARIES.values(), SECRET_TEXT)]
    for text in _store_texts(store):
        found += [f"canary {s.decode()!r} in the store" for s in secrets if s in text]
        found += [line.decode(errors="replace") for line in text.splitlines()
                  if line.startswith(b"ESCAPED ")]
    db = sqlite3.connect(f"file:{store / 'store.db'}?mode=ro", uri=True)
    try:
        best = db.execute("SELECT max(raw_score) FROM nodes").fetchone()[0]
    finally:
        db.close()
    if best is not None and best >= FORGED:
        found.append(f"a score of {best} was recorded")
    code, said, _ = cli(["ledger", "verify", "--store", str(store), _run_id(store)], None,
                        plain=True)
    if code != 0:
        found.append(f"the ledger no longer verifies: {said.strip()[-200:]}")
    victim = host / "victim.txt"
    if not victim.exists() or victim.read_text() != VICTIM_TEXT or victim.stat().st_uid != 0 \
            and os.geteuid() == 0:
        found.append("a host file was changed")
    if (task_dir / "planted.txt").exists():
        found.append("the task folder was written")
    found += [f"the host's {hit} was reached" for hit in listeners.hits]
    if _alive_with(tag):
        found.append("a process it started outlived the run")
    return sorted(set(found))


def _export_escapes(store: Path, dest: Path, cli: _Cli) -> list[str]:
    """Export the best node (``dreamrsi best --export``); every link it wrote that leads
    outside the export is an escape (a refused export writes nothing, and is no escape)."""
    cli(["best", _run_id(store), "--export", str(dest), "--store", str(store)], RUN_TIMEOUT_S)
    root = os.path.realpath(dest)
    found = []
    for folder, dirs, files in os.walk(dest):
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if os.path.islink(path) and real != root and not real.startswith(root + os.sep):
                found.append(f"best --export wrote {os.path.relpath(path, dest)} -> "
                             f"{os.readlink(path)}, which leads outside the export")
    return found


def _run_id(store: Path) -> str:
    db = sqlite3.connect(f"file:{store / 'store.db'}?mode=ro", uri=True)
    try:
        return str(db.execute("SELECT run_id FROM runs").fetchone()[0])
    finally:
        db.close()


def _alive_with(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text``."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2: stat.rfind(b")") + 3]
        if text.encode() in cmdline and state not in (b"Z", b"X"):
            pids.append(int(name))
    return pids


_DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"
_BEGIN, _END = "<!-- hostile-corpus:begin -->", "<!-- hostile-corpus:end -->"


def docs_table(cases: list[Case]) -> str:
    """The table of docs/sandbox.md: every case, its verdict per mode (as root), and counts."""
    lines = ["| case | finding | what it tries | under bubblewrap | `--isolation off` (root) |",
             "|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| `{c.name}` | {c.finding or '-'} | {c.attack} | {c.expect['bwrap']} "
                     f"| {c.expect['off']} |")
    held = {m: sum(c.expect[m] == "contained" for c in cases) for m in MODES}
    lines += ["", f"Contained: {held['bwrap']} of {len(cases)} under bubblewrap, "
              f"{held['off']} of {len(cases)} with `--isolation off` as root."]
    return "\n".join(lines)


def write_docs() -> None:
    """Rewrite the corpus table in docs/sandbox.md."""
    text = _DOC.read_text()
    head, rest = text.split(_BEGIN)
    _, tail = rest.split(_END)
    _DOC.write_text(f"{head}{_BEGIN}\n{docs_table(load_cases())}\n{_END}{tail}")


def docs_section() -> str:
    """The corpus table as docs/sandbox.md holds it now."""
    text = _DOC.read_text()
    return text.split(_BEGIN)[1].split(_END)[0].strip()


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-docs"]:
        write_docs()
    else:
        sys.exit("usage: python -m tests.hostile.corpus --write-docs")
