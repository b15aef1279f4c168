"""The knowledge layer (issue 37): agent traces imported redacted and staged, golden cases
and the reward that speaks, the pool of lessons changed only by deltas, and the lifecycle of
every artifact, all kept in the store's knowledge tables and event log (docs/knowledge.md).

Modules: :mod:`~dreamrsi.knowledge.trajectory` (one shape for every trace),
:mod:`~dreamrsi.knowledge.formats` (a reader per format), :mod:`~dreamrsi.knowledge.redact`,
:mod:`~dreamrsi.knowledge.traces` (import, accept, reject),
:mod:`~dreamrsi.knowledge.run_traces` (our runs as trajectories),
:mod:`~dreamrsi.knowledge.goldens`, :mod:`~dreamrsi.knowledge.check`,
:mod:`~dreamrsi.knowledge.judge` (rubric goldens judged by a model),
:mod:`~dreamrsi.knowledge.pool`, :mod:`~dreamrsi.knowledge.lifecycle`; learning over a
config repository: :mod:`~dreamrsi.knowledge.config_repo`, :mod:`~dreamrsi.knowledge.runner`
(the agent over goldens), :mod:`~dreamrsi.knowledge.gate`, :mod:`~dreamrsi.knowledge.commit`,
:mod:`~dreamrsi.knowledge.learn` (the nightly job); :mod:`~dreamrsi.knowledge.recipes`
(derived from survived and verified nodes), :mod:`~dreamrsi.knowledge.policies` (policies'
lifecycles, derived from dreams), :mod:`~dreamrsi.knowledge.configs` (configs' lifecycles,
recorded by learn), :mod:`~dreamrsi.knowledge.contexts` and
:mod:`~dreamrsi.knowledge.starts` (what a run's proposers are given and start from),
:mod:`~dreamrsi.knowledge.reading` (the JSON the CLI and the MCP tools share).
"""
