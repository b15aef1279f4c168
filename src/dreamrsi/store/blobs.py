"""Content-addressed files for large text: command output, narration, diffs, code."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

from dreamrsi.errors import NotFound, StoreError


class BlobStore:
    """Files named by the SHA-256 of their bytes, under ``root/ab/cdef...``.

    Writing the same bytes twice stores them once. Writes go to a temporary file first and are
    renamed into place, so a reader never sees a partial blob. Safe to use from several threads.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes) -> str:
        """Store ``data``; return its hex SHA-256."""
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if path.exists():
            return digest
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}."
                                 f"{time.monotonic_ns()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise StoreError(f"cannot write blob under {self.root}: {exc}") from exc
        return digest

    def get(self, digest: str) -> bytes:
        """The bytes stored under ``digest``.

        Raises:
            NotFound: No such blob.
        """
        path = self._path(digest)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFound(f"no blob {digest}") from None

    def _path(self, digest: str) -> Path:
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise NotFound(f"not a blob digest: {digest!r}")
        return self.root / digest[:2] / digest[2:]
