"""Content-addressed bytes for large text: command output, narration, diffs, code.

:class:`Blobs` is what a run store hands out (``store.blobs``); :class:`BlobStore` keeps blobs
as files, :class:`MemoryBlobs` in a dict. Both are safe to use from several threads (attempt
workers write blobs while the engine records nodes).
"""

from __future__ import annotations

import abc
import hashlib
import os
import threading
import time
from pathlib import Path

from dreamrsi.errors import NotFound, StoreError


class Blobs(abc.ABC):
    """Bytes named by their SHA-256 (hex, lowercase). Thread safe; a blob never changes."""

    @abc.abstractmethod
    def put(self, data: bytes) -> str:
        """Store ``data`` (once, however often it is put); return its hex SHA-256."""

    @abc.abstractmethod
    def get(self, digest: str) -> bytes:
        """The bytes stored under ``digest``.

        Raises:
            NotFound: No such blob, or ``digest`` is not a SHA-256 digest.
        """

    @abc.abstractmethod
    def check(self, digest: str) -> str | None:
        """Why the blob named ``digest`` is not sound (not a digest, missing, or its bytes
        hash to something else); ``None`` when its bytes re-hash to ``digest``."""


class MemoryBlobs(Blobs):
    """Blobs in a dict, for :class:`~dreamrsi.store.memory.MemoryRunStore`."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._data.setdefault(digest, bytes(data))
        return digest

    def get(self, digest: str) -> bytes:
        if not _is_digest(digest):
            raise NotFound(f"not a blob digest: {digest!r}")
        with self._lock:
            found = self._data.get(digest)
        if found is None:
            raise NotFound(f"no blob {digest}")
        return found

    def check(self, digest: str) -> str | None:
        if not _is_digest(digest):
            return "is not a SHA-256 digest"
        with self._lock:
            found = self._data.get(digest)
        if found is None:
            return "is missing from the store's blobs"
        actual = hashlib.sha256(found).hexdigest()
        return None if actual == digest else f"was altered (its bytes hash to {actual[:16]})"

    def replace(self, digest: str, data: bytes | None) -> None:
        """Put ``data`` under ``digest`` as it is, or remove the blob (``None``): what an
        attacker with write access could do, for tests of verification."""
        with self._lock:
            if data is None:
                self._data.pop(digest, None)
            else:
                self._data[digest] = data


class BlobStore(Blobs):
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

    def check(self, digest: str) -> str | None:
        """Why the blob named ``digest`` is not sound (not a digest, missing, unreadable, or its
        bytes hash to something else); ``None`` when its file re-hashes to ``digest``."""
        if not _is_digest(digest):
            return "is not a SHA-256 digest"
        h = hashlib.sha256()
        try:  # a plain path: verification checks every blob of a run
            with open(os.path.join(self.root, digest[:2], digest[2:]), "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except FileNotFoundError:
            return "is missing from blobs/"
        except OSError as exc:
            return f"cannot be read ({exc.strerror})"
        actual = h.hexdigest()
        return None if actual == digest else f"was altered (its bytes hash to {actual[:16]})"

    def _path(self, digest: str) -> Path:
        if not _is_digest(digest):
            raise NotFound(f"not a blob digest: {digest!r}")
        return self.root / digest[:2] / digest[2:]


def _is_digest(text: str) -> bool:
    return len(text) == 64 and not text.strip("0123456789abcdef")
