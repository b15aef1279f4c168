"""One node's whole record, for ``dreamrsi show RUN NODE``: what the attempt was asked and
did, why it failed, what it cost, which model wrote it, its diff and its ledger rows.

Every function takes an open store (a reader is enough) and returns plain dicts, so ``--json``
and the text come from the same data. What can be large is bounded: the diff to
:data:`DIFF_BYTES`, a model's request and answer to :data:`TEXT_BYTES` each, with a flag saying
it was cut (the blobs named by their SHA-256 hold it all).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dreamrsi.core.model import Node, node_id_for
from dreamrsi.engine.declared import context_runs
from dreamrsi.errors import ConfigError, DreamError, NotFound
from dreamrsi.store._fast import loads
from dreamrsi.store.base import RecordStore, RunsStore, StoreHandle
from dreamrsi.store.ledger import Actor, LedgerEvent, LedgerRow
from dreamrsi.store.trees import short_reason

DIFF_BYTES = 64 * 1024
"""Most bytes of a node's diff against its parent shown."""
TEXT_BYTES = 64 * 1024
"""Most bytes of a model's request (its messages) or answer shown."""
_READ_BYTES = 16 << 20
"""A request blob larger than this is not parsed into messages."""
_MODEL_CHARS = 200


def find_node(store: RunsStore, run_id: str, ref: str) -> Node:
    """The node of run ``run_id`` (id or unique prefix) that ``ref`` names: its id, a unique
    prefix of its id, or its seq (creation number, the root's is 0).

    Raises:
        NotFound: No such run, or the run has no such node.
        ConfigError: ``ref`` is empty, or a prefix of several of the run's nodes' ids.
    """
    run = store.get_run(run_id)
    if not ref:
        raise ConfigError("the node is empty", key="NODE",
                          expected="a node id, a unique prefix of one, or a seq number")
    if ref.isascii() and ref.isdigit() and len(ref) <= 18:
        ref = node_id_for(run.run_id, int(ref))
    try:
        node = store.get_node(ref)
    except NotFound:
        found = store.find_nodes(run.run_id, ref, limit=2)
        if not found:
            raise NotFound(f"run {run.run_id} has no node '{ref}' (give a node id, a unique "
                           "prefix of one, or a seq number; `dreamrsi show RUN` lists them)"
                           ) from None
        if len(found) > 1:
            raise ConfigError(f"node id prefix '{ref}' is ambiguous in run {run.run_id} "
                              f"({found[0]}, {found[1]}, ...)", key="NODE",
                              expected="more characters of the node id, or its seq") from None
        node = store.get_node(found[0])
    if node.run_id != run.run_id:
        raise NotFound(f"node {node.node_id} belongs to run {node.run_id}, not to run "
                       f"{run.run_id}")
    return node


def node_detail(store: RecordStore, run_id: str, ref: str) -> dict[str, Any]:
    """Everything recorded about one node (see the module docstring).

    Raises:
        NotFound, ConfigError: As :func:`find_node`.
        StoreError: The node's line of ancestors is damaged, or its ledger rows unreadable.
    """
    node = find_node(store, run_id, ref)
    run = store.get_run(node.run_id)
    rows = store.node_ledger(node.node_id)
    calls = [_call(store, r) for r in rows if r.event.cmd.startswith("model chat ")]
    answered = [c["model"] for c in calls if c["error"] is None]
    c = node.cost
    return {
        "node_id": node.node_id, "run_id": node.run_id, "task": run.task_name,
        "parent_id": node.parent_id, "seq": node.seq, "round": node.round,
        "depth": store.node_depth(node.node_id), "status": node.status.value,
        "valid": node.valid, "score": node.raw_score if node.valid else None,
        "raw_score": node.raw_score, "plan": node.plan,
        "history_used": None if node.history_used is None else list(node.history_used),
        "history_context": sorted(context_runs(store, run.config.get("context_nodes", ()))),
        "reason": short_reason(node.status.value, node.valid, node.feedback),
        "feedback": node.feedback, "metrics": dict(node.metrics),
        "wall_ms": c.wall_ms, "cpu_ms": c.cpu_ms, "tokens_in": c.tokens_in,
        "tokens_out": c.tokens_out, "money_usd": c.money_usd,
        "model": (answered[-1] if answered else calls[-1]["model"] if calls
                  else _reported_model(rows)),
        "models_asked": list(dict.fromkeys(c["model"] for c in calls)),
        "commit": node.commit, "candidate_hash": node.candidate_hash,
        "created_at": node.created_at,
        "artifacts": [{"path": a.path, "sha256": a.sha256} for a in node.artifacts],
        "model_calls": calls,
        "exchange": _exchange(store, rows),
        "diff": _diff(store, node),
        "ledger": [{**r.as_dict(), "error": row_error(r.event)} for r in rows],
    }


def row_error(event: LedgerEvent) -> str | None:
    """A ledger row's error, from the row alone: the ``error`` it records (a model call, the
    edits of an answer), else what its command facts say (timed out, a signal, a limit, a
    non-zero exit) or a verdict that did not score."""
    parsed = event.parsed if isinstance(event.parsed, Mapping) else {}
    error = parsed.get("error")
    if isinstance(error, str) and error:
        return error
    says = []
    if parsed.get("timed_out") is True:
        says.append("timed out")
    if parsed.get("signal"):
        says.append(f"killed by signal {parsed['signal']}")
    if parsed.get("limit_hit"):
        says.append(f"{parsed['limit_hit']} limit hit")
    if not says and event.exit not in (None, 0):
        says.append(f"exited with status {event.exit}")
    status = parsed.get("status")
    if isinstance(status, str) and status not in ("ok", "lost") and "valid" in parsed:
        says.append(f"verdict: {status}")
    return "; ".join(says) or None


def _call(store: StoreHandle, row: LedgerRow) -> dict[str, Any]:
    """One model call's facts as its ledger row records them."""
    parsed = row.event.parsed if isinstance(row.event.parsed, Mapping) else {}
    blobs = {a.path: a.sha256 for a in row.event.artifacts}
    return {"seq": row.seq, "model": str(parsed.get("model") or "")[:_MODEL_CHARS],
            "try": parsed.get("try"), "status": parsed.get("status"),
            "error": parsed.get("error"), "tokens_in": _number(parsed.get("tokens_in"), int),
            "tokens_out": _number(parsed.get("tokens_out"), int),
            "money_usd": _number(parsed.get("money_usd"), float),
            "latency_ms": parsed.get("latency_ms"),
            "usage_estimated": parsed.get("usage_estimated"),
            "request_sha256": blobs.get("request"), "answer_sha256": blobs.get("answer")}


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    """``value`` when it is a number of ``kind`` (an int for a float), else zero: a row's facts
    are the engine's, but a reader shows what a damaged row holds without failing."""
    ok = value.__class__ is int or (kind is float and value.__class__ is float)
    return kind(value) if ok else kind(0)


def _reported_model(rows: list[LedgerRow]) -> str | None:
    """The model a command proposer reported in ``$DREAM_COST`` (on its command's row)."""
    for row in reversed(rows):
        parsed = row.event.parsed
        if row.event.actor is Actor.TACTICAL and isinstance(parsed, Mapping) \
                and isinstance(parsed.get("model"), str):
            return str(parsed["model"])[:_MODEL_CHARS] or None
    return None


def _exchange(store: StoreHandle, rows: list[LedgerRow]) -> dict[str, Any] | None:
    """The last model call's request (its messages) and answer, each bounded."""
    chat = [r for r in rows if r.event.cmd.startswith("model chat ")]
    if not chat:
        return None
    row = chat[-1]
    blobs = {a.path: a.sha256 for a in row.event.artifacts}
    out: dict[str, Any] = {"seq": row.seq, "request_sha256": blobs.get("request"),
                           "answer_sha256": blobs.get("answer"), "messages": None,
                           "request_truncated": False, "answer": None,
                           "answer_truncated": False, "missing": []}
    request = _blob(store, blobs.get("request"), out)
    if request is not None:
        out["messages"], out["request_truncated"] = _messages(request)
    answer = _blob(store, blobs.get("answer"), out)
    if answer is not None:
        out["answer"], out["answer_truncated"] = _cut(answer.decode("utf-8", "replace"))
    return out


def _blob(store: StoreHandle, digest: str | None, out: dict[str, Any]) -> bytes | None:
    if digest is None:
        return None
    try:
        return store.get_blob(digest)
    except (DreamError, OSError):
        out["missing"].append(digest)
        return None


def _messages(request: bytes) -> tuple[list[dict[str, str]], bool]:
    """The chat messages of a request body, their text cut to :data:`TEXT_BYTES` in all."""
    body: Any = None
    if len(request) <= _READ_BYTES:
        try:
            body = loads(request.decode("utf-8", "replace"))
        except ValueError:
            body = None
    listed = body.get("messages") if isinstance(body, Mapping) else None
    if not isinstance(listed, list):
        text, cut = _cut(request[:TEXT_BYTES + 1].decode("utf-8", "replace"))
        return [{"role": "(request body)", "content": text}], cut
    left, out, cut = TEXT_BYTES, [], False
    for message in listed:
        m = message if isinstance(message, Mapping) else {}
        content, part_cut = _cut(str(m.get("content", "")), max(left, 0))
        left -= len(content.encode("utf-8", "replace"))
        out.append({"role": str(m.get("role", "?"))[:40], "content": content})
        cut = cut or part_cut
    return out, cut


def _cut(text: str, limit: int = TEXT_BYTES) -> tuple[str, bool]:
    """``text``, or its start of at most ``limit`` bytes of UTF-8, and whether it was cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


def _diff(store: RunsStore, node: Node) -> dict[str, Any]:
    """The node's diff against its parent's workspace, bounded, or why there is none."""
    out: dict[str, Any] = {"against": node.parent_id, "from": None, "to": node.commit,
                           "text": None, "truncated": False, "note": None}
    if node.parent_id is None:
        out["note"] = "the root has no parent: its workspace is the task's seed"
        return out
    try:
        parent = store.get_node(node.parent_id)
    except NotFound:
        out["note"] = f"the parent {node.parent_id} is not in the store"
        return out
    out["from"] = parent.commit
    if parent.commit is None or node.commit is None:
        out["note"] = "no workspace was recorded for " + (
            "the parent" if parent.commit is None else "this node")
        return out
    if parent.commit == node.commit:
        out["text"] = ""
        out["note"] = "no change: the node kept its parent's workspace"
        return out
    from dreamrsi.workspace.git import GitFailed  # git only for the node view

    try:
        out["text"], out["truncated"] = store.workspaces.diff(parent.commit, node.commit,
                                                              DIFF_BYTES)
    except GitFailed as exc:
        out["note"] = f"no diff: {exc}"
    return out
