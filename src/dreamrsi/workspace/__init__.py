"""Workspaces: every node's files are a commit in the store's git repository."""

from dreamrsi.workspace.git import GitCall, GitFailed, TreeEntry, WorkspaceRepo

__all__ = ["GitCall", "GitFailed", "TreeEntry", "WorkspaceRepo"]
