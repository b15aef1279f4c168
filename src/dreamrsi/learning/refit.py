"""A family's prior refitted as runs land: only the runs its latest version did not see are
read, and a version is stored only when one landed (or grew: a run resumed).

A prior's body keeps its sums (:class:`~dreamrsi.learning.priors.Tally`, under ``tally``) and
how far it read each run (``seen``: run id to ``[last seq, attempts]``). A refit lists the
family's runs a page at a time (run records, not nodes), probes each seen run for a node past
its last seq (one indexed row), reads the nodes of the new and grown runs only, adds their new
attempts to the sums and stores the next version. A version without sums (fitted before they
were kept) is refitted from every run once.

:func:`refit_landed` is what the CLI and the MCP server call after a run lands: it never
raises (but for an interrupt); a failure is a warning, recorded in the landed run's ledger,
and the run's result stands.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError, NotFound, StoreError
from dreamrsi.learning.family import family_of, family_runs
from dreamrsi.learning.priors import Tally
from dreamrsi.store._fast import dumps
from dreamrsi.store.base import RunStore
from dreamrsi.store.events import Actor, LedgerEvent
from dreamrsi.store.integrity import check_tree
from dreamrsi.store.learned import LearnedModel


class Refit(NamedTuple):
    """What :func:`refit_prior` did.

    Attributes:
        model: The latest version after the call (``None``: the family has none, and no run
            to fit one on).
        new: Whether the call stored it.
        read: The runs whose nodes it read (new or grown since the version before).
        skipped: Runs it left out because their rows are damaged, with why (they are read
            again at the next refit).
    """

    model: LearnedModel | None
    new: bool
    read: tuple[str, ...]
    skipped: dict[str, str]


def model_id(kind: str, family: str, version: int, runs: tuple[str, ...],
             body: object) -> str:
    """A digest of what a version holds: ``m`` + 12 hex digits."""
    text = dumps({"kind": kind, "family": family, "version": version, "runs": list(runs),
                  "body": body})
    return "m" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _state(latest: LearnedModel | None) -> tuple[Tally, dict[str, list[int]], int]:
    """The sums, the runs seen and the node count a refit goes on from (nothing for no
    version, or one without sums).

    Raises:
        ValueError: The version's sums or seen runs are not what a refit stored.
    """
    if latest is None or "tally" not in latest.body:
        return Tally(), {}, 0
    seen = latest.body.get("seen")
    if not isinstance(seen, dict) or not all(
            isinstance(v, list) and len(v) == 2 and all(type(x) is int and x >= 0 for x in v)
            for v in seen.values()):
        raise ValueError("its seen runs are not a map of run id to [last seq, attempts]")
    nodes = latest.body.get("nodes")
    if type(nodes) is not int:
        raise ValueError("its node count is not a whole number")
    return Tally.from_json(latest.body["tally"]), {str(k): list(v) for k, v in seen.items()}, \
        nodes


def refit_prior(store: RunStore, family: str, *, now: float | None = None) -> Refit:
    """Add the family's runs that landed since its latest prior to it, as the next version
    (nothing stored when none landed or grew).

    Raises:
        ConfigError: The latest version's stored sums cannot be read, or the runs hold no
            finished attempt.
        StoreError: The store cannot be read.
    """
    try:
        latest: LearnedModel | None = store.get_model("prior", family)
    except NotFound:
        latest = None
    try:
        tally, seen, nodes = _state(latest)
    except ValueError as exc:
        raise ConfigError(f"the prior of family '{family}' version "
                          f"{latest.version if latest else '?'} cannot be refitted: {exc}; "
                          "fit it anew (its versions stay readable)", key="family") from None
    read: list[str] = []
    skipped: dict[str, str] = {}
    for run in family_runs(store, family):
        mark = seen.get(run.run_id)
        after = -1 if mark is None else mark[0]
        if mark is not None and not store.nodes(run.run_id, after=after, limit=1):
            continue  # nothing past what the version saw
        try:
            found = store.replay_nodes(run.run_id)
            check_tree(store.location, run.run_id, found)
            if len(found) < 2:
                continue  # no attempt yet: nothing to count
            tally.add(found, after)
        except (ConfigError, StoreError, KeyError, TypeError, ValueError) as exc:
            skipped[run.run_id] = str(exc) or repr(exc)
            continue
        size = len(found) - 1  # as RecordedTree.size counts: the root left out
        nodes += size - (0 if mark is None else mark[1])
        seen[run.run_id] = [max(n.seq for n in found), size]
        read.append(run.run_id)
    if not read:
        return Refit(latest, False, (), skipped)
    try:
        body = tally.body()
    except ValueError as exc:
        raise ConfigError(f"cannot fit a prior of family '{family}': {exc}",
                          key="family") from None
    body |= {"nodes": nodes, "seen": seen}
    version = 1 if latest is None else latest.version + 1
    runs = tuple(sorted(seen))
    model = LearnedModel("prior", family, version, model_id("prior", family, version, runs,
                                                            body),
                         runs, body, time.time() if now is None else now)
    with store.atomic():
        store.put_model(model)
    return Refit(model, True, tuple(read), skipped)


class Landed(NamedTuple):
    """What :func:`refit_landed` has to say: a line for the user (``None``: nothing) and
    whether it is a warning."""

    message: str | None
    warning: bool = False


def refit_landed(store: RunStore, task_name: str, run_id: str, *,
                 refit: bool | None = None) -> Landed:
    """Refit the prior of ``task_name``'s family after run ``run_id`` landed (``refit``:
    ``True`` always, fitting a first version if there is none; ``None`` when the family has
    a prior already; ``False`` never). A stored version, or a failure, is recorded in the
    run's ledger. Never raises but for an interrupt: a failure is returned as a warning and
    the run's result stands.
    """
    if refit is False:
        return Landed(None)
    family = family_of(task_name)
    started = time.monotonic()
    try:
        if refit is None and not _has_prior(store, family):
            return Landed(None)
        done = refit_prior(store, family)
    except Exception as exc:  # noqa: BLE001 - nothing a refit meets may fail the run
        text = f"the prior of task family '{family}' was not refitted: {exc}"
        problem = _record(store, run_id, family, started, {"error": text}, 1)
        return Landed(f"{text}{problem}; the run's result stands", True)
    lines = [f"run {r} left out of the prior of '{family}': {why} (see dreamrsi ledger "
             "verify)" for r, why in done.skipped.items()]
    if done.new and done.model is not None:
        m = done.model
        parsed: dict[str, Any] = {"kind": "prior", "family": family, "version": m.version,
                                  "model_id": m.model_id, "runs": len(m.runs),
                                  "read": list(done.read), "skipped": done.skipped}
        problem = _record(store, run_id, family, started, parsed, 0)
        lines.insert(0, f"prior {family} version {m.version} refitted ({len(m.runs)} runs, "
                        f"{len(done.read)} read){problem}")
    elif done.skipped:
        _record(store, run_id, family, started, {"skipped": done.skipped}, 1)
    return Landed("\n".join(lines) or None, bool(done.skipped))


def _has_prior(store: RunStore, family: str) -> bool:
    try:
        store.get_model("prior", family)
    except NotFound:
        return False
    return True


def _record(store: RunStore, run_id: str, family: str, started: float,
            parsed: dict[str, Any], code: int) -> str:
    """Append the refit's row to the run's ledger; what kept it out, or ``""``."""
    try:
        with store.atomic():
            store.append_ledger(run_id, [LedgerEvent(
                Actor.DREAMER, f"refit prior {family}", exit=code, parsed=parsed,
                duration_ms=int((time.monotonic() - started) * 1000))], run_id=run_id)
    except Exception as exc:  # noqa: BLE001 - the run's result stands whatever happens here
        return f" (not recorded in the run's ledger: {exc})"
    return ""
