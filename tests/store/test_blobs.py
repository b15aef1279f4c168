"""Content-addressed blobs, alone and through the store."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dreamrsi.errors import NotFound
from dreamrsi.store import SqliteRunStore
from dreamrsi.store.blobs import BlobStore


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("data", [b"", b"hello\n", bytes(range(256)) * 1000])
def test_round_trip(tmp_path: Path, data: bytes) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    digest = blobs.put(data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert blobs.get(digest) == data
    (path,) = _files(tmp_path / "blobs")
    assert path == tmp_path / "blobs" / digest[:2] / digest[2:]


def test_identical_bytes_are_stored_once(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    first = blobs.put(b"same output")
    assert blobs.put(bytearray(b"same output")) == first
    assert blobs.put(b"same " + b"output") == first
    other = blobs.put(b"other output")
    assert other != first
    assert len(_files(tmp_path / "blobs")) == 2  # no temporary files left behind either
    assert blobs.get(first) == b"same output" and blobs.get(other) == b"other output"


def test_unknown_digest_is_not_found(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    blobs.put(b"something")
    with pytest.raises(NotFound, match="no blob"):
        blobs.get(hashlib.sha256(b"nothing").hexdigest())
    with pytest.raises(KeyError):  # NotFound is also a KeyError
        blobs.get("0" * 64)


@pytest.mark.parametrize("digest", [
    "", "abc", "A" * 64, "g" * 64, "0" * 63, "0" * 65, "../" + "0" * 61, "0" * 62 + "/x",
    " " + "0" * 63,
])
def test_malformed_digest_is_not_found(tmp_path: Path, digest: str) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    with pytest.raises(NotFound, match="not a blob digest"):
        blobs.get(digest)


def test_uppercase_digest_of_a_stored_blob_is_refused(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    digest = blobs.put(b"case")
    with pytest.raises(NotFound):
        blobs.get(digest.upper())


def test_blobs_through_the_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with SqliteRunStore.open(root, writer=True) as store:
        digest = store.put_blob(b"stdout of a command\n")
        assert store.put_blob(b"stdout of a command\n") == digest
        with pytest.raises(NotFound):
            store.get_blob("f" * 64)
    assert len(_files(root / "blobs")) == 1
    with SqliteRunStore.open(root) as reader:
        assert reader.get_blob(digest) == b"stdout of a command\n"
        with pytest.raises(NotFound):
            reader.get_blob("not-a-digest")
