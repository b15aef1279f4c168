"""Workspaces: every node's files are a commit in the store's git repository."""

from dreamrsi.workspace.git import GitCall, GitFailed, WorkspaceRepo

__all__ = ["GitCall", "GitFailed", "WorkspaceRepo"]
