"""The tools that read the store (``tasks``, ``status``, ``show``, ``best``, ``ledger_verify``)
and ``survive``, which checks a result. Each returns what the command's ``--json`` prints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from dreamrsi.mcp_server._shared import Served, answer

MAX_INT = 2**63 - 1
PAGE = 100
"""``show`` lists at most this many nodes unless ``limit`` says otherwise."""
MAX_PAGE = 1000

RunId = Annotated[str, Field(min_length=1, max_length=200,
                             description="A run id or a unique prefix of one.")]
Isolation = Literal["auto", "required", "off"]


class ReadingTools:
    """The reading tools and ``survive``, each a method: ``register`` adds them to a server."""

    TOOLS = ("tasks", "status", "show", "best", "ledger_verify", "survive")

    def __init__(self, served: Served) -> None:
        self.served = served

    def register(self, server: MCPServer) -> None:
        """Add each tool to ``server``."""
        for tool in self.TOOLS:
            server.add_tool(getattr(self, tool))

    def tasks(self) -> dict[str, Any]:
        """List the built-in tasks (name, direction, objective)."""
        from dreamrsi.tasks import describe_builtin_tasks

        return answer(lambda: {"tasks": describe_builtin_tasks()})

    def status(self) -> dict[str, Any]:
        """List the runs of the store with their state, counts, best score and the best
        node's survival verdict (as `dreamrsi status --json`)."""
        from dreamrsi.views import run_list

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return {"store": str(self.served.store), "runs": run_list(handle)}

        return answer(body)

    def show(
        self,
        run_id: RunId,
        node: Annotated[str | None, Field(
            min_length=1, max_length=200, description="Show this node's whole record "
            "instead of the tree: a node id, a unique prefix of one, or its seq.")] = None,
        branch: Annotated[int | None, Field(
            ge=1, le=MAX_INT, description="List branch K only.")] = None,
        depth: Annotated[int | None, Field(
            ge=0, le=MAX_INT, description="List nodes down to this depth only.")] = None,
        offset: Annotated[int, Field(ge=0, le=MAX_INT,
                                     description="Skip this many nodes.")] = 0,
        limit: Annotated[int | None, Field(
            ge=1, le=MAX_PAGE, description=f"List at most this many nodes (default {PAGE}).")
        ] = None,
    ) -> dict[str, Any]:
        """A run's tree (as `dreamrsi show RUN --json`): its summary, branches and one page
        of its nodes in branch order; page on with `offset` until fewer than `limit` nodes
        come back. With `node`: that node's record (plan, feedback, metrics, diff, ledger)."""
        from dreamrsi.errors import ConfigError

        def body() -> dict[str, Any]:
            if node is not None:
                if branch is not None or depth is not None or offset or limit is not None:
                    raise ConfigError("branch, depth, offset and limit choose nodes of the "
                                      "tree's listing; with node, show returns that node "
                                      "alone", key="node")
                from dreamrsi.engine.node_view import node_detail

                with self.served.reader() as handle:
                    return node_detail(handle, run_id, node)
            from dreamrsi.views import tree_head, tree_nodes

            with self.served.reader() as handle:
                overview = tree_head(handle, run_id)
                if branch is not None and branch > overview["tree"]["branches"]:
                    raise ConfigError(f"the run has {overview['tree']['branches']} branches; "
                                      f"branch takes 1 to {max(overview['tree']['branches'], 1)}",
                                      key="branch")
                return {**overview, "nodes": list(tree_nodes(
                    handle, run_id, branch=branch, depth=depth, offset=offset,
                    limit=PAGE if limit is None else limit))}

        return answer(body)

    def best(self, run_id: RunId) -> dict[str, Any]:
        """A run's best node (highest score, earliest on ties) and its survival verdict (as
        `dreamrsi best RUN --json`)."""
        from dreamrsi.views import best_info

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return best_info(handle, run_id)

        return answer(body)

    def ledger_verify(
        self,
        run_id: Annotated[str, Field(min_length=1, max_length=200,
                                     description="A run id (or unique prefix) or a dream id.")],
        head: Annotated[str | None, Field(
            min_length=1, max_length=200, description="A head kept outside the store "
            "(LENGTH:HASH): fail unless the chain still holds it.")] = None,
    ) -> dict[str, Any]:
        """Check a run's (or dream's) ledger: the hash chain, the records, the blobs and
        commits it names (as `dreamrsi ledger verify RUN --json`; `ok` false names the first
        problem)."""
        from dreamrsi.engine import queries
        from dreamrsi.store.ledger import ChainHead
        from dreamrsi.views import verify_dict

        def body() -> dict[str, Any]:
            given = None if head is None else ChainHead.parse(head)
            with self.served.reader() as handle:
                return verify_dict(handle.verify(queries.ledger_chain(handle, run_id), given))

        return answer(body)

    def survive(
        self,
        run_id: RunId,
        node: Annotated[str | None, Field(
            min_length=1, max_length=200,
            description="Node id (default: the run's best node).")] = None,
        repeats: Annotated[int | None, Field(
            ge=1, le=100, description="Evaluator runs on each of base and candidate "
            "(default: the task's [survival] repeats).")] = None,
        base: Annotated[str | None, Field(
            min_length=1, max_length=200, description="ROOT (the run's root, the default), "
            "a node id, or a commit of the store.")] = None,
        isolation: Annotated[Isolation | None, Field(
            description="auto | required | off (default: the task's setting).")] = None,
    ) -> dict[str, Any]:
        """Check a result independently (as `dreamrsi survive RUN --json`): re-run the
        evaluator on clean checkouts of the node and its base, check the hard constraints
        and fresh instances; returns the verdict (survived, failed, could_not_run), every
        finding and the report's files. Waits for the pass; needs the store's writer lock."""
        from dreamrsi.knowledge.starts import record_recipes
        from dreamrsi.store import open_store
        from dreamrsi.survival.service import survive as run_pass
        from dreamrsi.views import outcome_dict

        def body() -> dict[str, Any]:
            self.served.jobs.check_idle()
            with open_store(self.served.store, writer=True,
                            holder=f"survive {run_id} (mcp)") as handle:
                outcome = run_pass(handle, handle.get_run(run_id).run_id, node, base=base,
                                   repeats=repeats, isolation=isolation)
                record_recipes(handle)  # never raises: the verdict stands
            return outcome_dict(outcome)

        return answer(body)
