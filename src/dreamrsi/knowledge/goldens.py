"""Golden cases: the inputs an agent must answer, with an expected answer (matched
``exact``, ``contains`` or ``regex``), a ``command`` that scores the output, or a ``rubric``
for a judge; tags; a split (``train``, seen by the distiller, or ``heldout``, never); and a
canary flag (a locked answer that no legitimate change may move).

Goldens are events (``golden.add``) in the knowledge log, folded into the set; a golden is
never changed once added (a second golden of the same id is refused), so a canary's answer
stays locked. Checking them against an agent's outputs is :mod:`dreamrsi.knowledge.check`.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.store.base import RunStore

__all__ = ["MATCHES", "SPLITS", "Golden", "add_goldens", "golden_from", "list_goldens"]

MATCHES = ("exact", "contains", "regex", "command", "rubric")
SPLITS = ("train", "heldout")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_FIELDS = {"id", "input", "expected", "match", "rubric", "command", "tags", "split", "canary",
           "metric"}


class Golden(NamedTuple):
    """One golden case (see the module docstring); ``metric`` is the metric its score
    counts towards."""

    golden_id: str
    input: str
    expected: str | None = None
    match: str = "exact"
    rubric: str = ""
    command: str = ""
    tags: tuple[str, ...] = ()
    split: str = "train"
    canary: bool = False
    metric: str = "correctness"

    def as_dict(self) -> dict[str, Any]:
        """The golden as JSON data (the payload of its event)."""
        return {"id": self.golden_id, "input": self.input, "expected": self.expected,
                "match": self.match, "rubric": self.rubric, "command": self.command,
                "tags": list(self.tags), "split": self.split, "canary": self.canary,
                "metric": self.metric}


def _text(obj: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ConfigError(f"{where}: '{key}' is not text")
    return value


def golden_from(obj: Mapping[str, Any], where: str) -> Golden:
    """A golden from its JSON form (the fields of :meth:`Golden.as_dict`).

    Raises:
        ConfigError: An unknown field, a missing input, an unknown match, split or id, a
            regex that does not compile, a match without what it needs, a canary without a
            locked answer; ``where`` names the place.
    """
    unknown = set(obj) - _FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown fields {', '.join(sorted(unknown))}; known: "
                          f"{', '.join(sorted(_FIELDS))}")
    given = _text(obj, "input", where)
    if not given:
        raise ConfigError(f"{where}: a golden needs an 'input'")
    expected = obj.get("expected")
    if expected is not None and not isinstance(expected, str):
        raise ConfigError(f"{where}: 'expected' is not text")
    rubric, command = _text(obj, "rubric", where), _text(obj, "command", where)
    match = _text(obj, "match", where, "command" if command else "rubric"
                  if rubric and expected is None else "exact")
    if match not in MATCHES:
        raise ConfigError(f"{where}: match '{match}' is not one of {', '.join(MATCHES)}")
    if match in ("exact", "contains", "regex") and expected is None:
        raise ConfigError(f"{where}: match '{match}' needs an 'expected' answer")
    if match == "regex":
        try:
            re.compile(expected or "")
        except re.error as exc:
            raise ConfigError(f"{where}: 'expected' is not a regular expression ({exc})") from None
    if match == "command" and not command.strip():
        raise ConfigError(f"{where}: match 'command' needs a 'command'")
    if match == "rubric" and not rubric.strip():
        raise ConfigError(f"{where}: match 'rubric' needs a 'rubric'")
    split = _text(obj, "split", where, "train")
    if split not in SPLITS:
        raise ConfigError(f"{where}: split '{split}' is not one of {', '.join(SPLITS)}")
    canary = obj.get("canary", False)
    if not isinstance(canary, bool):
        raise ConfigError(f"{where}: 'canary' is not true or false")
    if canary and (expected is None or match == "rubric"):
        raise ConfigError(f"{where}: a canary needs a locked 'expected' answer, matched "
                          "exact, contains, regex or by a command")
    tags = obj.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise ConfigError(f"{where}: 'tags' is not a list of names")
    metric = _text(obj, "metric", where, "correctness")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", metric):
        raise ConfigError(f"{where}: metric '{metric}' is not a name")
    golden_id = _text(obj, "id", where) or "g-" + hashlib.sha256(json.dumps(
        [given, expected, match, rubric, command], ensure_ascii=False).encode()).hexdigest()[:12]
    if not _ID.fullmatch(golden_id):
        raise ConfigError(f"{where}: id '{golden_id}' is not a name (letters, digits, . _ : -)")
    return Golden(golden_id, given, expected, match, rubric, command, tuple(sorted(set(tags))),
                  split, canary, metric)


def list_goldens(store: RunStore, *, split: str | None = None,
                 tag: str | None = None) -> list[Golden]:
    """The goldens added, in order, all or of one split and/or tag."""
    out = []
    for e in store.knowledge_events(kind_prefix="golden.add"):
        g = golden_from(e.payload, f"golden event {e.seq}")
        if (split is None or g.split == split) and (tag is None or tag in g.tags):
            out.append(g)
    return out


def add_goldens(store: RunStore, goldens: Sequence[Golden], *,
                now: float | None = None) -> list[Golden]:
    """Add goldens, all or none.

    Raises:
        ConfigError: A golden's id is taken (goldens are never changed), or given twice.
    """
    taken = {g.golden_id for g in list_goldens(store)}
    ids = [g.golden_id for g in goldens]
    for gid in ids:
        if gid in taken or ids.count(gid) > 1:
            raise ConfigError(f"golden '{gid}' already exists; goldens are never changed "
                              "(a canary's answer is locked): add it under a new id")
    t = time.time() if now is None else now
    with store.atomic():
        for g in goldens:
            store.append_knowledge("golden.add", g.golden_id, g.as_dict(), t)
    return list(goldens)


def goldens_of(objs: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Golden]:
    """Goldens from JSON objects, each with the place that names it in an error."""
    return [golden_from(obj, where) for where, obj in objs]
