"""The two commits a static check compares: their trees, the paths that differ, and the
bytes of the files a check asks for, read in batches with a cap per file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dreamrsi.workspace.git import LINK_MODE, TreeEntry, WorkspaceRepo

MAX_FILE_BYTES = 2_000_000
"""The most bytes of one file a static check reads; a larger file is named as untested."""
_BATCH_BYTES = 64_000_000  # the most bytes one read of git holds in memory besides the kept


@dataclass(slots=True)
class TreePair:
    """The base's and the candidate's trees, and what was read of them.

    Attributes:
        repo: The store's repository.
        base: The base commit's entries by path.
        cand: The candidate commit's entries by path.
        too_large: Paths (with their size) whose bytes were not read: over the cap.
    """

    repo: WorkspaceRepo
    base: dict[str, TreeEntry]
    cand: dict[str, TreeEntry]
    too_large: dict[str, int] = field(default_factory=dict)
    _bytes: dict[str, bytes | None] = field(default_factory=dict)

    @classmethod
    def read(cls, repo: WorkspaceRepo, base: str, candidate: str) -> TreePair:
        """The trees of commits ``base`` and ``candidate``.

        Raises:
            GitFailed: Either is not a commit of the repository.
        """
        return cls(repo, repo.tree(base, []), repo.tree(candidate, []))

    def changed(self) -> list[str]:
        """Every path whose entry differs (added, deleted, other bytes, other mode), sorted."""
        paths = self.base.keys() | self.cand.keys()
        return sorted(p for p in paths if self.base.get(p) != self.cand.get(p))

    def load(self, wanted: Iterable[tuple[str, TreeEntry | None]]) -> None:
        """Read the files of ``wanted`` (path and entry) in one batch; links are not read
        (they have no text), files over :data:`MAX_FILE_BYTES` are noted, not read."""
        todo: dict[str, str] = {}
        for path, entry in wanted:
            if entry is not None and entry.mode != LINK_MODE and entry.oid not in self._bytes:
                todo[entry.oid] = path
        if not todo:
            return
        sizes = self.repo.blob_sizes(todo, [])
        batch: list[str] = []
        held = 0
        for oid, size in sizes.items():
            if size > MAX_FILE_BYTES:
                self.too_large[todo[oid]] = size
                self._bytes[oid] = None
                continue
            if held + size > _BATCH_BYTES:
                self._bytes.update(self.repo.read_blobs(batch, []))
                batch, held = [], 0
            batch.append(oid)
            held += size
        self._bytes.update(self.repo.read_blobs(batch, []))

    def text(self, entry: TreeEntry | None) -> bytes | None:
        """The bytes of a file entry loaded before; None for no entry, a link, a file too
        large to read, or one not loaded."""
        if entry is None or entry.mode == LINK_MODE:
            return None
        return self._bytes.get(entry.oid)

    def old(self, path: str) -> bytes | None:
        """The base's bytes at ``path`` (see :meth:`text`)."""
        return self.text(self.base.get(path))

    def new(self, path: str) -> bytes | None:
        """The candidate's bytes at ``path`` (see :meth:`text`)."""
        return self.text(self.cand.get(path))

    def load_paths(self, paths: Iterable[str]) -> None:
        """Load both sides of each of ``paths``."""
        listed = list(paths)
        self.load([(p, self.base.get(p)) for p in listed]
                  + [(p, self.cand.get(p)) for p in listed])


def is_link(entry: TreeEntry | None) -> bool:
    """Whether ``entry`` is a symbolic link."""
    return entry is not None and entry.mode == LINK_MODE
