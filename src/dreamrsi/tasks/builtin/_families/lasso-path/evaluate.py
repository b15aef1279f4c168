"""Evaluate ``solver.py``: a Lasso regularisation-path solver, checked against scikit-learn, timed.

F_k(w) = (1/2n) ||y - Xw||^2 + lambda_k ||w||_1 (no intercept, no standardisation), for 50
lambdas geometric from lambda_max = max|X^T y| / n down to 1e-2 lambda_max (the grid of
scikit-learn's ``lasso_path(X, y, alphas=50, eps=1e-2)``). The candidate defines
``lasso_path(X, y, lambdas) -> W`` with W of shape (p, 50), column k the coefficients for
lambda_k, like scikit-learn's ``coefs``.

Every evaluation draws fresh instances (a new random seed, from the operating system, printed in
the metrics) of the eleven shapes in ``SHAPES``. For each instance the candidate runs in a child
process (``worker.py``), loaded before any instance exists: one warm-up call, then up to three
timed calls, each on a sibling problem drawn afresh (rows and columns permuted, every column
scaled by a random factor of magnitude 0.9 to 1.1 and random sign, its own lambda grid): as hard
as the instance but a different Lasso, so a cache of earlier answers solves nothing. Every
answer, warm-up included, must satisfy F_k(w_k) <= F_k(w_sklearn,k) + 1e-6 for all k against
scikit-learn on that very problem, and be a finite (p, 50) array. A call may take 2 s of CPU
time and the whole evaluation 8 s of solver CPU time; beyond either the candidate is invalid
("too slow"). A call that does not answer within 20 s of wall time (a hang) is invalid too.
The time of a call is the child's CPU time (all its threads, plus any child process it reaped)
read by this process from the kernel around the request, data transfer included; the
instance's time is the least of its timed calls; the score is 1 / (geometric mean of the
instance times in seconds). Whatever the solver prints or patches inside its own process changes
none of this.

Emits one JSON object ``{"score", "valid", "feedback", "metrics", "candidate_hash"}`` as the
last line of stdout. Always exits 0.
Options for manual runs and tests: ``--seed N`` (instances), ``--limit N`` (first N shapes),
``--call-cpu S``, ``--call-timeout S`` (wall), ``--solver PATH``, ``--count-seed N`` (the
counted instances of ``--ops``).

``--ops metric`` (or ``score``): once the timed check has passed, count the instructions of one
call on an instance of each of four shapes (``COUNT_SHAPES``; the same instances in every
evaluation), the worker run under Valgrind's callgrind (``count_ops``): deterministic for a
solver, where CPU time varies by tens of percent on a busy machine. ``metric`` reports the
geometric mean as ``metrics.ops`` (None, with the reason in the feedback, when it could not be
counted); ``score`` makes the score 1 / geometric-mean billions of instructions per counted
call, and a solver that cannot be counted invalid (the task ``lasso-path-ops``). The count is
taken inside the solver's own process: a hostile solver can forge it (README).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import secrets  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from verdict import verdict, write  # noqa: E402

SOLVER_FILE = "solver.py"
WORKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
N_LAMBDAS, EPS = 50, 1e-2
TOLERANCE = 1e-6
CALL_CPU_S = 2.0  # CPU seconds, one call ("too slow" beyond)
CALL_TIMEOUT_S = 20.0  # wall clock, one call (a hang, or a machine far too busy)
BUDGET_S = 8.0  # CPU seconds of solver time for a whole evaluation
REPEAT_TARGET_S = 0.3  # timed calls per instance: as many as fit here after the warm-up, 1-3
MAX_REPEATS = 3
COUNT_SHAPES = (1, 5, 6, 10)  # --ops: one counted call on an instance of each of these
COUNT_SEED = 20261204  # the counted instances: the same in every evaluation (not secret)
COUNT_SLOWDOWN = 100  # callgrind runs a solver about this many times slower (measured: 40-100)
COUNT_WALL_S = 90.0  # the most the counted calls may take under callgrind (estimated), and a
# counted call's limit of wall and CPU time
VALGRIND = shutil.which("valgrind")
SHAPES = (  # (family, n, p): both regimes (n > p and p > n) of every family
    ("gaussian", 100, 20),
    ("gaussian", 200, 60),
    ("gaussian", 50, 120),
    ("gaussian", 80, 200),
    ("sparse", 200, 100),
    ("sparse", 80, 200),
    ("dense-solution", 150, 50),
    ("dense-solution", 50, 80),
    ("toeplitz-0.5", 150, 80),
    ("toeplitz-0.9", 150, 80),
    ("toeplitz-0.9", 60, 150),
)


class Rejected(Exception):
    """The candidate failed; the message says where and how."""


def make_instance(kind: str, n: int, p: int, rng: np.random.Generator):
    """X (n, p) and y (n,) of one shape family; y has unit root-mean-square.

    gaussian: iid N(0, 1) design, 10% of min(n, p) true coefficients nonzero; sparse: the same
    with 10% of the design's entries nonzero (every column keeps at least one); dense-solution:
    every true coefficient nonzero; toeplitz-rho: AR(1) columns, corr(x_i, x_j) = rho^|i-j|.
    y = X beta scaled to unit rms, plus N(0, 0.3^2) noise, scaled to unit rms again.
    """
    if kind.startswith("toeplitz-"):
        rho = float(kind.split("-", 1)[1])
        Z = rng.standard_normal((n, p))
        X = np.empty((n, p))
        X[:, 0] = Z[:, 0]
        for j in range(1, p):
            X[:, j] = rho * X[:, j - 1] + math.sqrt(1.0 - rho * rho) * Z[:, j]
    else:
        X = rng.standard_normal((n, p))
        if kind == "sparse":
            mask = rng.random((n, p)) < 0.1
            mask[rng.integers(0, n, p), np.arange(p)] = True
            X *= mask
    if kind == "dense-solution":
        beta = rng.standard_normal(p)
    else:
        beta = np.zeros(p)
        support = rng.choice(p, max(1, round(0.1 * min(n, p))), replace=False)
        beta[support] = 2.0 * rng.standard_normal(support.size)
    y = X @ beta
    y /= math.sqrt(float(np.mean(y * y))) or 1.0
    y += 0.3 * rng.standard_normal(n)
    y /= math.sqrt(float(np.mean(y * y)))
    return X, y


def lambda_grid(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """50 lambdas geometric from max|X^T y| / n down to 1e-2 of it (scikit-learn's grid)."""
    lam_max = float(np.max(np.abs(X.T @ y))) / X.shape[0]
    return np.geomspace(lam_max, lam_max * EPS, N_LAMBDAS)


def objective(X: np.ndarray, y: np.ndarray, W: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """F_k(W[:, k]) for every k."""
    R = y[:, None] - X @ W
    return 0.5 * np.einsum("ij,ij->j", R, R) / X.shape[0] + lambdas * np.abs(W).sum(axis=0)


def reference(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> tuple[np.ndarray, float]:
    """scikit-learn's objective values on the grid (default tol and max_iter), and its CPU time."""
    from sklearn.linear_model import lasso_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        _, coefs, _ = lasso_path(X, y, alphas=lambdas)
        seconds = time.process_time() - start
    return objective(X, y, coefs, lambdas), seconds


def variant(X: np.ndarray, y: np.ndarray, rng: np.random.Generator):
    """A sibling problem: rows and columns permuted, each column scaled by a factor in
    [-1.1, -0.9] or [0.9, 1.1]. As hard as the original, but a different Lasso (the penalty
    weighs every column differently), so no earlier answer solves it."""
    rows, cols = rng.permutation(X.shape[0]), rng.permutation(X.shape[1])
    scale = rng.uniform(0.9, 1.1, X.shape[1]) * rng.choice((-1.0, 1.0), X.shape[1])
    return np.ascontiguousarray(X[rows][:, cols] * scale), np.ascontiguousarray(y[rows])


def _prctl(option: int, value: int) -> None:
    """Best effort: the evaluator's own protections (non-dumpable, child subreaper)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children_of(pids: set[int]) -> list[int]:
    """Processes whose parent is one of ``pids``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid in pids:
            found.append(int(entry))
    return found


class Worker:
    """The candidate's process: requests in, answers out, CPU time read from outside."""

    def __init__(self, solver: str, call_timeout: float, call_cpu: float = CALL_CPU_S,
                 prefix: tuple[str, ...] = ()) -> None:
        self.call_timeout, self.call_cpu = call_timeout, call_cpu
        self.cpu_start: float | None = None  # CPU clock at the start of the call under way
        self.stderr = tempfile.TemporaryFile()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
        if prefix:  # counting: the same interpreter state in every run
            env["PYTHONHASHSEED"] = "0"
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, WORKER_FILE, *(("--count",) if prefix else ()), solver],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            env=env, start_new_session=True, close_fds=True,
        )
        self.clock = ((~self.proc.pid) << 3) | 2  # the kernel's CPU clock of another process
        self.buffer = b""
        head, _ = self._receive(time.monotonic() + max(call_timeout, 30.0), "loading solver.py")
        if not head.get("ready"):
            raise Rejected(f"solver.py failed to load in the worker:\n{head.get('error', '')}")

    def cpu(self) -> float:
        """CPU seconds of the worker so far: all its threads, plus the children it reaped."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            reaped = int(fields[13]) + int(fields[14])  # cutime, cstime: children reaped
            return time.clock_gettime(self.clock) + reaped / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError) as exc:
            raise Rejected(self.died("while being timed") + f" ({exc})") from None

    def call(self, X: np.ndarray, y: np.ndarray, lambdas: np.ndarray, what: str):
        """W (p, K) from the candidate and the CPU seconds the call took."""
        n, p = X.shape
        payload = b"".join((
            json.dumps({"n": n, "p": p, "k": lambdas.size}).encode() + b"\n",
            np.ascontiguousarray(X, dtype="<f8").tobytes(),
            np.ascontiguousarray(y, dtype="<f8").tobytes(),
            np.ascontiguousarray(lambdas, dtype="<f8").tobytes(),
        ))
        start = self.cpu_start = self.cpu()
        writer = threading.Thread(target=self._write, args=(payload,), daemon=True)
        writer.start()
        try:
            head, raw = self._receive(time.monotonic() + self.call_timeout, what,
                                      (p, lambdas.size))
        finally:
            self.cpu_start = None
        seconds = self.cpu() - start
        if not head.get("ok"):
            raise Rejected(f"{what}: lasso_path raised\n{head.get('error', '')}")
        W = np.frombuffer(raw, dtype="<f8").reshape(p, lambdas.size)
        return W, seconds

    def _write(self, payload: bytes) -> None:
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the worker died or was killed; the reader reports it

    def _receive(self, deadline: float, what: str, expect: tuple[int, int] = (0, 0)):
        """One answer: the JSON head and, for an array of shape ``expect``, its bytes (any
        other shape is refused before a byte of it is read)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            self._fill(fd, deadline, what)
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            head = json.loads(line)
            if not isinstance(head, dict):
                raise ValueError("not an object")
        except ValueError:
            raise Rejected(f"{what}: the worker's channel was written by someone else "
                           f"({line[:80]!r}); solvers must not write to it") from None
        size = 0
        if head.get("ok"):
            shape = head.get("shape")
            if not isinstance(shape, list) or tuple(shape) != expect:
                raise Rejected(f"{what}: W has shape {shape!r}; expected (p, K) = {expect}")
            size = 8 * expect[0] * expect[1]
        while len(self.buffer) < size:
            self._fill(fd, deadline, what)
        raw, self.buffer = self.buffer[:size], self.buffer[size:]
        return head, raw

    def _fill(self, fd: int, deadline: float, what: str) -> None:
        """More bytes from the worker; checks its CPU time (a call's limit) while waiting."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise Rejected(f"{what}: no answer within {self.call_timeout:g} s of wall time "
                               "(the solver hung or waited, or the machine is overloaded); killed")
            if select.select([fd], [], [], min(left, 0.05))[0]:
                break
            if self.cpu_start is not None and self.cpu() - self.cpu_start > self.call_cpu:
                self.close()
                raise Rejected(f"{what}: too slow: more than {self.call_cpu:g} s of CPU time "
                               f"in one call (the limit); killed")
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise Rejected(self.died(what))
        self.buffer += chunk

    def died(self, what: str) -> str:
        code = self.proc.wait(timeout=5) if self.proc.poll() is None else self.proc.returncode
        how = f"killed by signal {-code}" if code and code < 0 else f"exit status {code}"
        return f"{what}: the worker process died ({how}); its stderr ends:\n{self.stderr_tail()}"

    def stderr_tail(self, limit: int = 1200) -> str:
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - limit))
        return self.stderr.read().decode("utf-8", "replace").strip() or "(nothing)"

    def strays(self) -> list[int]:
        """Processes the solver started: the worker's children, and orphans we now adopt."""
        return [pid for pid in _children_of({self.proc.pid, os.getpid()})
                if pid != self.proc.pid]

    def close(self) -> None:
        for pid in [self.proc.pid, *self.strays()]:
            for kill in (os.killpg, os.kill):  # its process group, then the process itself
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for leftover in self.strays():  # adopted orphans, reaped as they die
            try:
                os.kill(leftover, signal.SIGKILL)
                os.waitpid(leftover, 0)
            except OSError:
                pass


def check(X, y, W, lambdas, F_ref, what: str) -> float:
    """The largest F excess over scikit-learn; raises Rejected when W is not acceptable."""
    bad = np.argwhere(~np.isfinite(W))
    if bad.size:
        j, k = bad[0]
        raise Rejected(f"{what}: W[{j}, {k}] = {float(W[j, k])!r} "
                       f"({len(bad)} non-finite entries)")
    excess = objective(X, y, W, lambdas) - F_ref
    worst = int(np.argmax(excess))
    if excess[worst] > TOLERANCE:
        failing = int(np.sum(excess > TOLERANCE))
        raise Rejected(
            f"{what}: F_{worst} (lambda_{worst} = {lambdas[worst]:.4g}) is "
            f"{excess[worst]:.3e} above scikit-learn's ({F_ref[worst]:.10g}); tolerance "
            f"{TOLERANCE:g}; {failing} of {lambdas.size} lambdas fail")
    return float(excess[worst])


def label(i: int, shape: tuple) -> str:
    kind, n, p = shape
    return f"instance {i} ({kind} {n}x{p})"


def run_instances(worker: Worker, shapes, seed: int, metrics: dict) -> list[float]:
    """Warm-up and timed calls on every instance; the least CPU seconds of each."""
    rng = np.random.default_rng(seed)
    times, spent = [], 0.0
    for i, shape in enumerate(shapes):
        X, y = make_instance(shape[0], shape[1], shape[2], rng)
        lambdas = lambda_grid(X, y)
        F_ref, sk_seconds = reference(X, y, lambdas)
        name = label(i, shape)
        W, first = worker.call(X, y, lambdas, f"{name}, warm-up call")
        worst = check(X, y, W, lambdas, F_ref, f"{name}, warm-up call")
        repeats = max(1, min(MAX_REPEATS, int(REPEAT_TARGET_S / max(first, 1e-9))))
        best, spent = math.inf, spent + first
        for rep in range(1, repeats + 1):
            Xs, ys = variant(X, y, rng)
            lambdas_s = lambda_grid(Xs, ys)
            F_s, _ = reference(Xs, ys, lambdas_s)
            what = f"{name}, timed call {rep} (rows and columns permuted, columns rescaled)"
            W, seconds = worker.call(Xs, ys, lambdas_s, what)
            worst = max(worst, check(Xs, ys, W, lambdas_s, F_s, what))
            best, spent = min(best, seconds), spent + seconds
        strays = worker.strays()
        if strays:
            raise Rejected(f"{name}: the solver left {len(strays)} process(es) running "
                           "(pids " + ", ".join(map(str, strays[:5])) + "); solvers must "
                           "compute in their own process (threads are fine: they are timed)")
        times.append(max(best, 1e-9))
        metrics["instances"].append({
            "shape": f"{shape[0]} {shape[1]}x{shape[2]}", "ms": round(best * 1e3, 3),
            "warmup_ms": round(first * 1e3, 3), "timed_calls": repeats,
            "sklearn_ms": round(max(sk_seconds, 1e-6) * 1e3, 3), "worst_excess": worst,
        })
        if spent > BUDGET_S and i + 1 < len(shapes):
            raise Rejected(f"too slow: {spent:.1f} s of solver CPU time after {i + 1} of "
                           f"{len(shapes)} instances (the budget is {BUDGET_S:g} s)")
    return times


class Uncounted(Exception):
    """Instructions could not be counted; the message says why."""


def count_ops(solver: str, shapes, metrics: dict, count_seed: int = COUNT_SEED) -> list[int]:
    """Instructions of one call of the solver on a fresh instance of each counted shape.

    The worker runs under callgrind (``worker.py --count``): instrumentation starts once the
    solver is loaded, and each call's instructions are dumped to a file of their own. The
    instances are the same in every evaluation (``count_seed``, by default ``COUNT_SEED``),
    so a solver gets the same count every time, whatever the evaluation's seed; every answer
    is checked as the timed ones are. (Fixed instances a solver could recognise and answer
    from a table: the count is forgeable anyway, see the README, and the timed score is not;
    the survival check, ``fresh.py``, counts on instances of a fresh ``count_seed``, which no
    table of the fixed ones answers.)
    Raises Uncounted when the count failed: valgrind missing, the calls too slow to count,
    the worker failing under callgrind, or an answer there that is wrong.
    """
    picked = [i for i in COUNT_SHAPES if i < len(shapes)] or [0]
    if VALGRIND is None:
        raise Uncounted("valgrind is not installed (the ops count needs it)")
    native = {row["shape"]: row["ms"] for row in metrics["instances"]}
    estimate = sum(native[f"{shapes[i][0]} {shapes[i][1]}x{shapes[i][2]}"] for i in picked)
    if estimate * COUNT_SLOWDOWN / 1e3 > COUNT_WALL_S:
        raise Uncounted(f"the counted calls take {estimate:.0f} ms of CPU natively, about "
                        f"{estimate * COUNT_SLOWDOWN / 1e3:.0f} s under callgrind (more than "
                        f"the {COUNT_WALL_S:g} s allowed)")
    rng = np.random.default_rng(count_seed)
    problems = []
    for i in picked:
        X, y = make_instance(shapes[i][0], shapes[i][1], shapes[i][2], rng)
        lambdas = lambda_grid(X, y)
        problems.append((i, X, y, lambdas, reference(X, y, lambdas)[0]))
    with tempfile.TemporaryDirectory(prefix="ops-") as folder:
        out = os.path.join(folder, "callgrind.out")
        prefix = (VALGRIND, "--tool=callgrind", "--instr-atstart=no", "-q",
                  f"--callgrind-out-file={out}", "--dump-line=no", "--compress-strings=no")
        worker = None
        try:
            try:
                worker = Worker(solver, COUNT_WALL_S, COUNT_WALL_S, prefix)
            except Rejected as exc:
                raise Uncounted(f"the worker did not start under callgrind: {exc}") from None
            for i, X, y, lambdas, F_ref in problems:
                what = f"{label(i, shapes[i])}, counted call (under callgrind)"
                W, _ = worker.call(X, y, lambdas, what)
                check(X, y, W, lambdas, F_ref, what)
        except Rejected as exc:
            raise Uncounted(str(exc)) from None
        finally:
            if worker is not None:
                worker.close()
        dumps = sorted((f for f in os.listdir(folder) if f.startswith("callgrind.out.")),
                       key=lambda f: int(f.rsplit(".", 1)[1]) if f[-1].isdigit() else -1)
        if len(dumps) != len(problems):
            raise Uncounted(f"{len(dumps)} callgrind dumps for {len(problems)} calls (the "
                            "solver issued callgrind requests of its own?)")
        counts = [_summary(os.path.join(folder, f)) for f in dumps]
    metrics["ops_instances"] = [{"shape": f"{shapes[i][0]} {shapes[i][1]}x{shapes[i][2]}",
                                 "ops": n} for (i, *_), n in zip(problems, counts, strict=True)]
    return counts


def _summary(path: str) -> int:
    """The ``summary:`` line of one callgrind dump: its instruction count."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("summary:"):
                try:
                    value = int(line.split()[1])
                except (ValueError, IndexError):
                    raise Uncounted(f"an unreadable summary line: {line[:80]!r}") from None
                if not 0 < value < 2**62:
                    raise Uncounted(f"callgrind reported {value} instructions for one call")
                return value
    raise Uncounted(f"no summary line in {os.path.basename(path)}")


def geomean(values: list[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def evaluate(solver: str, seed: int, limit: int, call_timeout: float,
             call_cpu: float = CALL_CPU_S, ops: str = "off",
             count_seed: int = COUNT_SEED) -> dict:
    """Score the solver at ``solver`` and explain the score.

    ``ops``: ``off``; ``metric`` (count instructions, report them in the metrics); ``score``
    (count them and score 1 / geometric-mean billions of instructions per call).
    """
    shapes = SHAPES[:limit]
    metrics: dict = {"seed": seed, "tolerance": TOLERANCE, "n_lambdas": N_LAMBDAS, "eps": EPS,
                     "instances": []}
    try:
        with open(solver, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    except OSError as exc:
        return verdict(None, False, f"invalid: cannot read {SOLVER_FILE}: {exc}", metrics, "")
    worker = None
    try:
        worker = Worker(solver, call_timeout, call_cpu)
        times = run_instances(worker, shapes, seed, metrics)
    except Rejected as exc:
        done = len(metrics["instances"])
        return verdict(None, False, f"invalid: {exc}\n({done} of {len(shapes)} instances "
                       f"passed before this; instance seed {seed})", metrics, digest)
    finally:
        if worker is not None:
            worker.close()
    g = geomean(times)
    sk = geomean([row["sklearn_ms"] / 1e3 for row in metrics["instances"]])
    metrics.update(geomean_ms=round(g * 1e3, 4), sklearn_geomean_ms=round(sk * 1e3, 4))
    feedback = _feedback(g, sk, metrics)
    if ops == "off":
        return verdict(1.0 / g, True, feedback, metrics, digest)
    try:
        counts = count_ops(solver, shapes, metrics, count_seed)
    except Uncounted as exc:
        metrics["ops"] = None
        if ops == "score":
            return verdict(None, False, f"invalid: instructions not counted: {exc}", metrics,
                           digest)
        return verdict(1.0 / g, True, f"{feedback}\nops: not counted: {exc}", metrics, digest)
    G = geomean([float(n) for n in counts])
    metrics["ops"] = round(G)
    feedback += (f"\nops: geometric mean {G / 1e6:.3f} million instructions per call (callgrind, "
                 f"{len(counts)} counted calls: " + ", ".join(
                     f"{r['shape']} {r['ops'] / 1e6:.3f}M" for r in metrics["ops_instances"])
                 + ")")
    if ops == "score":
        feedback = (f"score {1e9 / G:.4g} = 1 / geometric-mean billions of instructions per "
                    f"counted call (below); CPU time is checked and reported, not scored\n"
                    + feedback)
    return verdict(1e9 / G if ops == "score" else 1.0 / g, True, feedback, metrics, digest)


def _feedback(g: float, sk: float, metrics: dict) -> str:
    rows = metrics["instances"]
    share = [math.log(r["ms"]) for r in rows]
    slow = max(range(len(rows)), key=lambda i: share[i])
    lines = [
        f"valid: every F_k within {TOLERANCE:g} of scikit-learn's on all {len(rows)} instances "
        f"and every repetition; geometric-mean CPU time {g * 1e3:.3f} ms (score {1 / g:.4g} = "
        f"1 / seconds); scikit-learn's lasso_path takes {sk * 1e3:.3f} ms on the same instances "
        f"(one in-process call each), so this is {g / sk:.2f}x its time",
        f"slowest: {rows[slow]['shape']} at {rows[slow]['ms']:.3f} ms",
        "per instance (least of the timed calls; warm-up; scikit-learn):",
    ]
    lines += [f"  {r['shape']:>22}: {r['ms']:9.3f} ms ({r['timed_calls']} timed; warm-up "
              f"{r['warmup_ms']:.3f}; sklearn {r['sklearn_ms']:.3f})" for r in rows]
    return "\n".join(lines)



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--limit", type=int, default=len(SHAPES))
    parser.add_argument("--call-timeout", type=float, default=CALL_TIMEOUT_S)
    parser.add_argument("--call-cpu", type=float, default=CALL_CPU_S)
    parser.add_argument("--solver", default=SOLVER_FILE)
    parser.add_argument("--ops", choices=("off", "metric", "score"), default="off")
    parser.add_argument("--count-seed", type=int, default=COUNT_SEED)
    args = parser.parse_args(argv)
    seed = secrets.randbits(32) if args.seed is None else args.seed
    _prctl(4, 0)  # PR_SET_DUMPABLE 0: the solver cannot read our environment or memory
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: processes the solver orphans come back to us
    return write(lambda: evaluate(args.solver, seed, max(1, args.limit), args.call_timeout,
                                  args.call_cpu, args.ops, args.count_seed),
                 {"seed": seed}, "")


if __name__ == "__main__":
    sys.exit(main())
