"""The online engine: a policy chooses, workers attempt, the store records, round after round.

:func:`start_run` records a new run and :func:`resume_run` continues one that stopped (killed
runs resume: attempts still marked in flight become ``lost``); both check what must hold first
(isolation, a model's prompts, the task unchanged) and hand the run to a
:class:`~dreamrsi.engine.session.RunSession`, which drives its episode.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace

from dreamrsi.core.policy import GridPlan, Policy
from dreamrsi.core.replay import RecordedTree, make_plan, plan_context
from dreamrsi.engine.attempt import Attempts
from dreamrsi.engine.config import RunConfig, check_endpoint, with_endpoint
from dreamrsi.engine.context import attempt_seed
from dreamrsi.engine.executors import Executor
from dreamrsi.engine.history import choose_elites
from dreamrsi.engine.progress import RunObserver, RunProgress, RunSummary
from dreamrsi.engine.sandboxing import resolve_isolation
from dreamrsi.engine.session import RunSession
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import open_policy, pin_spec
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.base import (
    RecordStore,
    RunRecord,
    RunsStore,
    RunStatus,
    RunStore,
    RunUpdate,
    TaskRecord,
)
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Task, load_task

logger = logging.getLogger(__name__)

__all__ = ["RunObserver", "RunProgress", "RunSummary", "attempt_seed", "new_run_id",
           "recorded_task", "resume_run", "start_run"]

def recorded_task(store: RunsStore, run: RunRecord, needs: str) -> Task:
    """The task of ``run``, loaded again from the folder it was recorded from.

    Raises:
        ConfigError: The task changed since the run started (``needs`` says why that
            matters).
    """
    recorded = store.get_task(run.task_digest)
    task = load_task(recorded.spec["directory"])
    if task.digest != run.task_digest:
        raise ConfigError(f"the task at {task.directory} changed since run {run.run_id} "
                          f"started (digest {run.task_digest[:19]} then, {task.digest[:19]} "
                          f"now); {needs}")
    return task


def new_run_id() -> str:
    """A short random run id such as ``r3f9a1c2b``."""
    return "r" + os.urandom(4).hex()


def start_run(store: RunStore, task: Task, config: RunConfig,
              observer: RunObserver | None = None, *, policy: Policy | None = None,
              attempts: Attempts | None = None, run_id: str | None = None,
              accept_unisolated_model_code: bool = False,
              executor: Executor | None = None) -> RunSummary:
    """Start a new run of ``task`` and drive it until a budget ends or the policy stops.

    Args:
        store: A store opened for writing.
        task: The task to explore.
        config: Budgets and settings.
        observer: Called with progress events.
        policy: A policy object to run instead of building ``config.policy`` from the
            registry (a library user's own class); the run records ``config.policy`` as its
            name, and resuming it needs the object again.
        attempts: What runs each attempt (default: the task's commands in the sandbox,
            :class:`~dreamrsi.engine.attempt.AttemptRunner`).
        run_id: The new run's id (default: a fresh one; a loop names it before the run
            starts, so a killed loop finds its round's run).
        accept_unisolated_model_code: Let a task whose proposer is a model run with
            isolation ``off`` or ``auto`` (see
            :func:`~dreamrsi.engine.sandboxing.resolve_isolation`).
        executor: Where the attempts run (default: W threads of this process,
            :class:`~dreamrsi.engine.executors.LocalExecutor`); the run records the same
            rows whichever runs them.

    Returns:
        The run's summary (also when it was interrupted).

    Raises:
        ConfigError: The settings are wrong, or a model's code would run unisolated without
            ``accept_unisolated_model_code``.
        SandboxError: A model's code must run isolated and bubblewrap does not work here.
        InfrastructureError: ``config.max_infra_failures`` attempts in a row failed outside
            the candidate; the run is recorded ``failed`` and can be resumed.
    """
    task = with_endpoint(task, config.base_url, config.model)
    isolation = _preflight(task, config, accept_unisolated_model_code)
    if policy is None:  # the run records the learned model's version it reads
        config = replace(config, policy=pin_spec(config.policy, store))
    # what the registry opens (a program's sandboxed worker) closes when the run ends
    with open_policy(config.policy if policy is None else policy, store) as opened:
        return _start(store, task, config, opened, observer, attempts, isolation, run_id,
                      executor)


def _start(store: RecordStore, task: Task, config: RunConfig, policy: Policy,
           observer: RunObserver | None, attempts: Attempts | None,
           isolation: IsolationMode, run_id: str | None = None,
           executor: Executor | None = None) -> RunSummary:
    plan = _plan(store, task, policy, config)
    if plan is not None:
        config = replace(config, plan=plan)
    if config.history and not config.context_nodes:
        config = replace(config, context_nodes=choose_elites(store, task, config.history))
    run_id = run_id or new_run_id()
    now = time.time()
    record = RunRecord(run_id, task.digest, task.name, config.policy, config.to_json(),
                       config.seed, RunStatus.RUNNING, now, heartbeat_at=now, pid=os.getpid())
    session = RunSession(store, task, config, policy, record, observer, attempts, isolation,
                       executor)
    try:  # what can refuse the task comes before its record: a refusal records nothing
        session.prepare()
        session.warm_start()
    except BaseException:
        session.release()
        raise
    with store.atomic():
        store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest, task.summary()))
        store.create_run(record)
        if plan is not None:
            store.append_ledger(run_id, [LedgerEvent(
                Actor.STRATEGIC, f"plan {config.policy.label()}",
                parsed={"branch_count": plan.branch_count, "refine_count": plan.refine_count,
                        "reason": plan.reason})], run_id=run_id)
        if config.context_nodes:
            store.append_ledger(run_id, [LedgerEvent(
                Actor.STRATEGIC, "history context", args=config.context_nodes,
                parsed={"elites": list(config.context_nodes)})], run_id=run_id)
    session.run = store.get_run(run_id)
    return session.execute()


def _preflight(task: Task, config: RunConfig, accept_unisolated_model_code: bool
               ) -> IsolationMode:
    """What must hold before a run starts or resumes: its isolation, a model's prompts."""
    isolation = resolve_isolation(task, config.isolation,
                                  accept_unisolated_model_code=accept_unisolated_model_code)
    if task.proposer.llm is not None:  # only a model's run loads the model client
        from dreamrsi.agents.client import ModelClient
        from dreamrsi.agents.prompts import load_prompts

        load_prompts(task.directory, task.proposer.llm.prompt_dir)
        ModelClient(task.proposer.llm).close()
    return isolation


def _plan(store: RunsStore, task: Task, policy: Policy,
          config: RunConfig) -> GridPlan | None:
    """Ask a planning policy for its grid, from the task's earlier trees only."""
    if getattr(policy, "plan", None) is None:
        return None
    trees = [RecordedTree.from_nodes(run.run_id, nodes) for run in store.list_runs(task.digest)
             if (nodes := store.replay_nodes(run.run_id))]
    return make_plan(policy, plan_context(task.name, config.workers, config.budget, trees))


def resume_run(store: RunStore, run_id: str, observer: RunObserver | None = None, *,
               policy: Policy | None = None, attempts: Attempts | None = None,
               accept_unisolated_model_code: bool = False, base_url: str | None = None,
               model: str | None = None, max_infra_failures: int | None = None,
               executor: Executor | None = None) -> RunSummary:
    """Continue a run that stopped before its budget ended (killed, interrupted, failed,
    stopped by failures outside its candidates).

    Attempts still marked in flight are recorded as ``lost``; finished attempts are neither
    lost nor run again. ``policy``, ``attempts`` and ``accept_unisolated_model_code``: as
    :func:`start_run` was given them (the consent is asked again, never stored).
    ``base_url``, ``model`` and ``max_infra_failures`` override the run's model endpoint,
    model and limit of failures outside the candidates for this session (say, the endpoint
    moved), and are recorded in its ledger. ``executor``: where this session's attempts run
    (any executor may resume any run).

    Raises:
        ConfigError: The run already finished, or its task changed since it started.
        InfrastructureError: As :func:`start_run`.
    """
    check_endpoint(base_url, model)
    run = store.get_run(run_id)
    if run.status is RunStatus.FINISHED:
        raise ConfigError(f"run {run.run_id} already finished ({run.stop_reason}); "
                          "start a new run instead")
    if run.config.get("kind") == "repo":
        raise ConfigError(f"run {run.run_id} is a Dream Run: go on with its verbs "
                          "(`dreamrsi brief`, `exec`, `checkpoint`) or `dreamrsi work`")
    task = recorded_task(store, run, "resume needs the same task")
    config = RunConfig.from_json(run.config)
    overrides = {k: v for k, v in (("base_url", base_url), ("model", model),
                                   ("max_infra_failures", max_infra_failures)) if v is not None}
    config = replace(config, base_url=base_url or config.base_url, model=model or config.model,
                     max_infra_failures=config.max_infra_failures if max_infra_failures is None
                     else max_infra_failures)
    task = with_endpoint(task, config.base_url, config.model)
    isolation = _preflight(task, config, accept_unisolated_model_code)
    store.update_run(run.run_id, RunUpdate(status=RunStatus.RUNNING, pid=os.getpid(),
                                           heartbeat_at=time.time(), stop_reason=None))
    if overrides:
        with store.atomic():
            store.append_ledger(run.run_id, [LedgerEvent(
                Actor.STRATEGIC, "session override", parsed=overrides)], run_id=run.run_id)
    with open_policy(config.policy if policy is None else policy, store) as opened:
        return RunSession(store, task, config, opened, run, observer, attempts,
                        isolation, executor).execute()
