"""A policy program, run in a sandboxed worker, behind the ordinary policy protocol.

:class:`ProgramPolicy` is a :class:`~dreamrsi.core.policy.Policy` whose decisions come from a
program (one file defining ``ExplorationPolicy``) running in one long-lived sandboxed process
(:func:`~dreamrsi.sandbox.start_session`), started once and reused for every episode until
:meth:`ProgramPolicy.close`. Each round the trusted side sends the nodes revealed since the
last request (plain lists), the completed rounds and the budget, and reads one reply line
under a deadline and a size cap; :mod:`dreamrsi.programs.wire` checks its schema and the
episode driver then checks the batch against the view (root and leaves, at most W, no leaf
twice). The trusted side keeps the view, runs the ``Child`` operator and computes every
score; the worker sees copies. :meth:`ProgramPolicy.run_concurrently` replays many trees at
once on one worker: each request then holds one entry per episode still running, so a round
of all of them costs one round trip.

Whatever goes wrong (the gate refuses the program, it crashes, raises, prints garbage on the
channel, answers late, forks too much, runs out of CPU or memory) ends in
:class:`ProgramFailure`, a :class:`~dreamrsi.errors.PolicyError` naming the reason, and the
worker is killed; a dream records the reason and goes on.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from dreamrsi.core.model import Node
from dreamrsi.core.policy import Budget, Policy, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.errors import ConfigError, PolicyError, SandboxError
from dreamrsi.programs.gate import gate
from dreamrsi.programs.wire import MAX_REPLY_BYTES, ChannelError, encode, node_record, parse_reply
from dreamrsi.sandbox import (
    Isolation,
    IsolationMode,
    Limits,
    SandboxSession,
    SessionError,
    start_session,
)
from dreamrsi.store.workfolder import discard_folder

__all__ = ["WORKER_SCRIPT", "ProgramFailure", "ProgramLimits", "ProgramPolicy",
           "program_digest"]

_CORE_FILES = ("model.py", "view.py", "policy.py")
WORKER_SCRIPT = "dreamrsi-policy-worker.py"
"""The harness's file name in the worker's folder (its command line names it)."""
T = TypeVar("T")


def program_digest(source: str) -> str:
    """``sha256:<hex>`` of a program's text (its identity in the store)."""
    return "sha256:" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramLimits:
    """What one program's worker may use.

    Attributes:
        start_s: Time to start and load the program (its first line).
        reply_s: Time for each reply.
        total_s: Wall time of the worker over all its episodes.
        cpu_s: CPU seconds of the worker (RLIMIT_CPU).
        memory_mb: Address space of each of its processes.
        max_processes: Processes alive at once (the worker is one).
        stderr_bytes: Diagnostics kept from its stderr.
        isolation: ``required`` (default) or ``off``; ``off`` runs the program without
            bubblewrap (still in a pid namespace, under the same limits) and needs
            ``accept_unisolated`` set by name.
        accept_unisolated: The caller's explicit consent to ``off``.
    """

    start_s: float = 10.0
    reply_s: float = 2.0
    total_s: float = 120.0
    cpu_s: int = 60
    memory_mb: int = 512
    max_processes: int = 4
    stderr_bytes: int = 16_384
    isolation: IsolationMode = IsolationMode.REQUIRED
    accept_unisolated: bool = False

    def __post_init__(self) -> None:
        for name in ("start_s", "reply_s", "total_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigError(f"{name} must be a positive number, got {value!r}", key=name)
        mode = IsolationMode(self.isolation)
        object.__setattr__(self, "isolation", mode)
        if mode is not IsolationMode.REQUIRED and not self.accept_unisolated:
            raise ConfigError(f"policy programs written by a model run isolated; isolation "
                              f"{mode.value!r} needs accept_unisolated=True "
                              "(--i-accept-unisolated-model-code)", key="isolation")


class ProgramFailure(PolicyError):
    """A program was refused or failed in its worker.

    Attributes:
        kind: ``gate``, ``load``, ``raised``, ``timeout``, ``crash``, ``channel``,
            ``processes``, ``budget`` or ``sandbox``.
        reason: What happened, in one line (the program's own text capped).
        stderr: What the program wrote to stderr (capped; diagnostics only).
    """

    def __init__(self, kind: str, reason: str, stderr: str = "") -> None:
        super().__init__(f"policy program refused ({kind}): {reason}")
        self.kind = kind
        self.reason = reason
        self.stderr = stderr


@dataclass(slots=True)
class _Episode:
    """One episode's bookkeeping on the trusted side: what the worker was sent, and the
    episode's names for the nodes (``n0`` for the root, then ``n1``, ``n2``, ... in reveal
    order), which the worker sees instead of the recorded ids."""

    slot: int = 0
    view: TreeView | None = None
    sent: int = 0
    context: PolicyContext | None = None
    fresh: bool = True
    names: dict[str, str] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)

    def entry(self, view: TreeView, budget: Budget) -> list[Any]:
        """The request entry of this round: ``[slot, episode or None, nodes revealed since
        the last one, completed rounds, budget]``."""
        episode = None
        if self.fresh:
            context = self.context
            if context is None:
                raise PolicyError("policy 'code': select() before reset()")
            self.view, self.fresh, self.sent = view, False, 1
            root = self._record(view.root, None)
            episode = {"task": context.task_name[:200], "workers": context.workers,
                       "seed": context.rng.getrandbits(63),
                       "attempt_budget": context.attempt_budget,
                       "round_budget": context.round_budget, "root": root}
            # a resumed run's nodes were revealed by this episode, in their recorded rounds
            fresh = [self._record(n, n.round) for n in view.revealed_since(1)]
        elif view is not self.view:
            raise PolicyError("policy 'code': a new view without reset()")
        else:  # one request a round: what is new was revealed in the round just completed
            fresh = [self._record(n, view.rounds) for n in view.revealed_since(self.sent)]
        self.sent += len(fresh)
        return [self.slot, episode, fresh, view.rounds,
                [budget.workers, budget.attempts_left, budget.rounds_left]]

    def _record(self, node: Node, round_no: int | None) -> list[Any]:
        seq = len(self.ids)
        name = f"n{seq}"
        self.names[node.node_id] = name
        self.ids.append(node.node_id)
        parent = None if node.parent_id is None else self.names[node.parent_id]
        return node_record(node, name, parent, seq, 0 if round_no is None else round_no)

    def real(self, batch: list[str]) -> list[str]:
        """A worker's batch in the view's ids (a name the episode never gave is passed on
        as it is, and the driver refuses it as outside the eligible set)."""
        ids = self.ids
        out = []
        for name in batch:
            index = name[1:]
            out.append(ids[int(index)] if name[:1] == "n" and index.isdigit()
                       and index == str(int(index)) and int(index) < len(ids) else name)
        return out


class _Handle:
    """One episode slot of a worker that runs several episodes at once (see
    :meth:`ProgramPolicy.run_concurrently`); a policy like the program itself."""

    name = "code"

    def __init__(self, mux: _Mux, slot: int) -> None:
        self._mux = mux
        self._episode = _Episode(slot)

    def reset(self, context: PolicyContext) -> None:
        self._episode = _Episode(self._episode.slot, context=context)

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        episode = self._episode
        return episode.real(self._mux.ask(episode.entry(view, budget), budget.workers))


class _Mux:
    """Gathers the requests of concurrent episodes into one line, once every live episode
    is waiting, and hands each its batch: one round trip per round of all of them."""

    def __init__(self, policy: ProgramPolicy, live: int) -> None:
        self._policy = policy
        self._live = live
        self._cond = threading.Condition()
        self._pending: list[tuple[list[Any], int]] = []
        self._answers: dict[int, list[str]] = {}
        self._error: BaseException | None = None

    def ask(self, entry: list[Any], workers: int) -> list[str]:
        slot = entry[0]
        with self._cond:
            if self._error is not None:
                raise self._error
            self._pending.append((entry, workers))
            self._maybe_flush()
            while slot not in self._answers and self._error is None:
                self._cond.wait()
            if slot in self._answers:
                return self._answers.pop(slot)
            raise self._error  # type: ignore[misc]

    def leave(self, error: BaseException | None = None) -> None:
        """An episode's thread is done (``error``: it failed, and so do the others)."""
        with self._cond:
            self._live -= 1
            if error is not None and self._error is None:
                self._error = error
                self._cond.notify_all()
            elif self._error is None:
                self._maybe_flush()

    def _maybe_flush(self) -> None:
        if not self._pending or len(self._pending) < self._live:
            return
        pending, self._pending = self._pending, []
        try:
            batches = self._policy._exchange([e for e, _ in pending],
                                             [w for _, w in pending])
        except BaseException as exc:
            self._error = exc
        else:
            for (entry, _), batch in zip(pending, batches, strict=True):
                self._answers[entry[0]] = batch
        self._cond.notify_all()


class ProgramPolicy:
    """A policy program behind the policy protocol, run in a sandboxed worker.

    Args:
        source: The program's text.
        limits: What its worker may use.
        gate_first: Refuse what the gate refuses before anything runs; ``False`` only to test
            the sandbox alone (the hostile-program suite runs every program that way).

    Raises:
        ProgramFailure: The gate refuses the program (at once, before anything runs).
    """

    name = "code"

    def __init__(self, source: str, limits: ProgramLimits | None = None, *,
                 gate_first: bool = True) -> None:
        problem = gate(source) if gate_first else None
        if problem is not None:
            raise ProgramFailure("gate", problem)
        self.source = source
        self.digest = program_digest(source)
        self.limits = limits or ProgramLimits()
        self._session: SandboxSession | None = None
        self._folder: Path | None = None
        self._deadline = 0.0
        self._episode = _Episode()
        self._lock = threading.Lock()
        self.requests = 0
        self.failure: ProgramFailure | None = None

    # -- the policy protocol ---------------------------------------------------------------

    def reset(self, context: PolicyContext) -> None:
        """Start an episode: the worker hears of it with the first request."""
        self._episode = _Episode(context=context)

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        """Send what was revealed since the last request; return the worker's batch.

        Raises:
            ProgramFailure: The worker failed or broke the channel (it is then killed).
        """
        if self.failure is not None:
            raise self.failure
        episode = self._episode
        return episode.real(self._exchange([episode.entry(view, budget)],
                                           [budget.workers])[0])

    def run_concurrently(self, jobs: Sequence[Callable[[Policy], T]],
                         width: int = 32) -> list[T]:
        """Run ``jobs`` (each drives episodes of the policy it is given, such as one tree's
        replay) on this worker at once, up to ``width`` at a time, one thread each: a round
        of all of them costs one round trip. Each episode keeps its own state in the worker
        (a fresh instance of the program's class per episode), so the results are those of
        running the jobs one after the other.

        Raises:
            ProgramFailure: The worker failed (every job stops).
            PolicyError: A job's batch broke the decision interface (every job stops).
        """
        results: list[T] = []
        if jobs:
            self.start()  # here, not on whichever episode thread asks first
        for start in range(0, len(jobs), width):
            wave = jobs[start:start + width]
            mux = _Mux(self, len(wave))
            out: list[Any] = [None] * len(wave)
            errors: list[BaseException] = []

            def work(i: int, job: Callable[[Policy], T], mux: _Mux = mux,
                     out: list[Any] = out, errors: list[BaseException] = errors) -> None:
                try:
                    out[i] = job(_Handle(mux, i))
                except BaseException as exc:
                    errors.append(exc)
                    mux.leave(exc)
                else:
                    mux.leave()

            threads = [threading.Thread(target=work, args=(i, job), daemon=True)
                       for i, job in enumerate(wave)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise next((e for e in errors if isinstance(e, ProgramFailure)), errors[0])
            results += out
        return results

    def _exchange(self, entries: list[list[Any]], workers: list[int]) -> list[list[str]]:
        """Send one request of ``entries``; return the worker's batch for each.

        Raises:
            ProgramFailure: The worker failed or broke the channel (it is then killed).
        """
        with self._lock:
            if self.failure is not None:
                raise self.failure
            kind, value = self._ask(encode({"entries": entries}), workers)
            if kind != "select":
                self._fail("channel", f"expected batches, got {kind!r}")
            return value  # type: ignore[no-any-return]

    # -- the worker ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker and load the program (done by the first request otherwise).

        Raises:
            ProgramFailure: It could not start, or the program failed to load.
        """
        if self._session is not None:
            return
        limits = self.limits
        self._folder = _runtime_folder(self.source)
        try:
            self._session = start_session(
                [sys.executable, "-I", "-S", "-B", WORKER_SCRIPT], self._folder,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                limits=Limits(timeout_s=limits.total_s, memory_mb=limits.memory_mb,
                              cpu_s=limits.cpu_s, max_processes=limits.max_processes,
                              max_output_bytes=limits.stderr_bytes),
                isolation=Isolation(mode=limits.isolation))
        except SandboxError as exc:
            self._cleanup()
            raise ProgramFailure("sandbox", str(exc)) from None
        started = time.monotonic()
        self._deadline = started + limits.total_s
        kind, value = self._read(started + limits.start_s, workers=[], failing="load")
        if kind != "ready":
            self._fail("channel", f"expected 'ready', got {kind!r}")

    def _ask(self, line: bytes, workers: list[int]) -> tuple[str, Any]:
        self.start()
        assert self._session is not None
        self.requests += 1
        try:
            self._session.send_line(line)
        except SessionError as exc:
            self._fail("crash", str(exc))
        return self._read(time.monotonic() + self.limits.reply_s, workers)

    def _read(self, deadline: float, workers: list[int],
              failing: str = "raised") -> tuple[str, Any]:
        session = self._session
        assert session is not None
        if time.monotonic() >= self._deadline:
            self._fail("budget", f"the worker used its {self.limits.total_s:g} s")
        try:
            line = session.read_line(min(deadline, self._deadline), MAX_REPLY_BYTES)
        except SessionError as exc:
            kind = {"timeout": "timeout", "processes": "processes",
                    "too long": "channel"}.get(exc.kind, "crash")
            self._fail(kind, str(exc))
        try:
            kind, value = parse_reply(line, workers)
        except ChannelError as exc:
            self._fail("channel", str(exc))
        if kind == "error":
            self._fail(failing, value)
        return kind, value

    def _fail(self, kind: str, reason: str) -> Any:
        stderr = self._session.stderr_text() if self._session is not None else ""
        self.failure = ProgramFailure(kind, reason, stderr)
        self.close()
        raise self.failure

    @property
    def cpu_ms(self) -> int:
        """The worker's CPU time so far (0 before it starts)."""
        return self._session.cpu_ms if self._session is not None else 0

    def stderr_text(self) -> str:
        """What the program wrote to stderr so far (capped; diagnostics only)."""
        return self._session.stderr_text() if self._session is not None else ""

    def close(self) -> None:
        """Kill the worker and everything it started, and remove its folder (idempotent)."""
        if self._session is not None:
            self._session.close()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._folder is not None:
            discard_folder(self._folder.parent)  # whatever the program left, any depth
            self._folder = None

    def __enter__(self) -> ProgramPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _runtime_folder(source: str) -> Path:
    """A fresh folder, readable by the sandbox's user, holding the harness, the core and the
    program."""
    parent = Path(tempfile.mkdtemp(prefix="dreamrsi-program-"))
    folder = parent / "w"
    (folder / "dreamrsi" / "core").mkdir(parents=True)
    package = resources.files("dreamrsi")
    (folder / WORKER_SCRIPT).write_bytes(
        package.joinpath("programs", "_harness.py").read_bytes())
    (folder / "dreamrsi" / "__init__.py").write_text("")
    (folder / "dreamrsi" / "core" / "__init__.py").write_text("")
    (folder / "dreamrsi" / "errors.py").write_bytes(package.joinpath("errors.py").read_bytes())
    for name in _CORE_FILES:
        (folder / "dreamrsi" / "core" / name).write_bytes(
            package.joinpath("core", name).read_bytes())
    (folder / "candidate.py").write_text(source, encoding="utf-8", errors="surrogatepass")
    for path in (parent, *parent.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder
