"""Workspaces: every node's files are a commit in the store's git repository."""

from dreamrsi.workspace.git import GitCall, GitFailed, WorkspaceRepo, file_digests

__all__ = ["GitCall", "GitFailed", "WorkspaceRepo", "file_digests"]
