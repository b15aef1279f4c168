"""Runs, loops, a run's tree and one node: each route calls one view of the store."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from dreamrsi.web.models import LoopPage, NodeDetail, RunDetail, RunPage, TreeNode, TreePage

router = APIRouter(tags=["runs"])

TREE_PAGE = 10_000
"""The most nodes one page of a tree holds (a larger tree is read page by page, or as its
branches)."""

Offset = Annotated[int, Query(ge=0, description="Rows to skip.")]


@router.get("/api/runs", response_model=RunPage)
def runs(request: Request, offset: Offset = 0,
         limit: Annotated[int, Query(ge=1, le=500)] = 50) -> dict[str, Any]:
    """The store's runs, newest first: task, policy, status, budget and what was used of it,
    tokens, money, best score and its survival verdict."""
    from dreamrsi.views import run_page

    store = request.app.state.store
    with store.snapshot():
        total, items = run_page(store, offset=offset, limit=limit)
    return {"total": total, "offset": offset, "limit": limit, "items": items}


@router.get("/api/loops", response_model=LoopPage)
def loops(request: Request, offset: Offset = 0,
          limit: Annotated[int, Query(ge=1, le=500)] = 50) -> dict[str, Any]:
    """The store's recursive loops, newest first, with what their rounds' runs found."""
    from dreamrsi.views import loop_page

    store = request.app.state.store
    with store.snapshot():
        total, items = loop_page(store, offset=offset, limit=limit)
    return {"total": total, "offset": offset, "limit": limit, "items": items}


@router.get("/api/runs/{run_id}", response_model=RunDetail)
def run(request: Request, run_id: str, branch_offset: Offset = 0,
        branch_limit: Annotated[int, Query(ge=1, le=5000)] = 500) -> dict[str, Any]:
    """One run (id or unique prefix): its summary, its models' spend, its tree in numbers and
    a page of its branches (each branch's size, depth, best node and counts by status: the
    tree's aggregated level)."""
    from dreamrsi.views import tree_head

    store = request.app.state.store
    with store.snapshot():
        overview = tree_head(store, run_id)
    branches = overview.pop("branches")
    return {**overview, "branches": branches[branch_offset:branch_offset + branch_limit],
            "branches_offset": branch_offset, "branches_total": len(branches)}


@router.get("/api/runs/{run_id}/tree", response_model=TreePage)
def tree(request: Request, run_id: str, offset: Offset = 0,
         limit: Annotated[int, Query(ge=1, le=TREE_PAGE)] = TREE_PAGE,
         branch: Annotated[int | None, Query(ge=0, description="One branch's nodes only "
                                                               "(0: the root).")] = None
         ) -> JSONResponse:
    """A page of a run's nodes in branch order (id, parent, depth, branch, score, status):
    all of them, or one branch's; ``total`` counts the nodes selected."""
    from dreamrsi.views import tree_nodes

    store = request.app.state.store
    with store.snapshot():
        run_id = store.get_run(run_id).run_id
        summary = store.tree_summary(run_id)
        items = list(tree_nodes(store, run_id, branch=branch, offset=offset, limit=limit))
    sizes = {0: 1 if summary.nodes else 0, **{b.number: b.nodes for b in summary.branches}}
    total = sum(sizes.values()) if branch is None else sizes.get(branch, 0)
    # thousands of rows: written as JSON at once, the model documents them (TreePage)
    return JSONResponse({"run_id": run_id, "total": total, "offset": offset, "limit": limit,
                         "items": [{k: row[k] for k in _TREE_FIELDS} for row in items]})


_TREE_FIELDS = tuple(TreeNode.model_fields)
"""What the tree needs of a node (the node's panel reads the rest)."""


@router.get("/api/runs/{run_id}/nodes/{node}", response_model=NodeDetail)
def node(request: Request, run_id: str, node: str) -> dict[str, Any]:
    """One node (id, unique prefix or seq) of a run: plan, feedback or error reason, metrics,
    tokens, money, model, wall and CPU time, the diff against its parent, the model's request
    and answer where recorded, and its ledger rows."""
    from dreamrsi.engine.node_view import node_detail

    store = request.app.state.store
    with store.snapshot():
        return node_detail(store, run_id, node)
