"""Dream Runs as JSON: the list of them, and one with its dreams (primary, shadows,
alternatives), hypotheses, questions, autopsies, submissions and its brief."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.store.base import RecordStore, RunStore

__all__ = ["repo_run_detail", "repo_run_list"]


def repo_run_list(store: RecordStore) -> list[dict[str, Any]]:
    """Every Dream Run (a run whose config is of kind ``repo``), newest first: its repository,
    status, objective, dreams by status and open hypotheses."""
    from dreamrsi.engine.queries import run_state
    from dreamrsi.repo_runs.journal import load_state

    rows = []
    for run in store.list_runs():
        if run.config.get("kind") != "repo":
            continue
        state = load_state(store, run.run_id)
        rows.append({"run_id": run.run_id, "repo": state.repo, "status": run_state(run, store),
                     "closed": state.closed, "objective": state.objective,
                     "created_at": run.created_at, "steps": state.steps,
                     "dreams": len(state.dreams),
                     "open_hypotheses": sum(h.status.value == "open"
                                            for h in state.hypotheses.values())})
    return sorted(rows, key=lambda r: (-r["created_at"], r["run_id"]))


def repo_run_detail(store: RunStore, run_id: str) -> dict[str, Any]:
    """One Dream Run: objective, success criteria, constraints, its dreams (shadows with their
    questions and answers), hypotheses with their histories, questions, autopsies, survivors,
    submissions, exports and the brief a fresh context starts from.

    Raises:
        NotFound: An unknown run.
        ConfigError: The run is not a Dream Run.
    """
    from dreamrsi.repo_runs.brief import brief
    from dreamrsi.repo_runs.journal import load_state
    from dreamrsi.views import dream_rows, hypothesis_rows, question_rows

    state = load_state(store, store.get_run(run_id).run_id)
    return {"run_id": state.run_id, "repo": state.repo, "head": state.head,
            "objective": state.objective, "success": list(state.success),
            "constraints": list(state.constraints), "protected_paths": list(state.protect),
            "subgoal": state.subgoal, "closed": state.closed, "steps": state.steps,
            "dreams": dream_rows(store, state), "hypotheses": hypothesis_rows(state),
            "questions": question_rows(state),
            "autopsies": [{"dream": a.dream, "text": a.text, "cites": list(a.cites),
                           "row": a.row} for a in state.autopsies],
            "survivors": [dict(s) for s in state.survivors],
            "submissions": [dict(s) for s in state.submissions],
            "exports": [dict(e) for e in state.exports],
            "brief": brief(store, state)}
