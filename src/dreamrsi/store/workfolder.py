"""Where a store's attempts run: the folder that holds their temporary workspaces."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

_SHM = Path("/dev/shm")
_SHM_MIN_FREE = 2 << 30


def work_folder_for(store_dir: Path) -> Path:
    """The work folder of the store kept in ``store_dir``.

    A folder in ``$DREAMRSI_WORK_DIR`` if set; else in ``/dev/shm`` when that is a writable
    tmpfs with at least 2 GiB free (attempt folders are created and removed many times a
    second, which costs milliseconds per file on a journaling disk); else ``STORE/work``.
    In either of the first two it is private to the store (``dreamrsi-<digest of its path>``):
    a run empties its work folder when it starts and removes it when it stops, so stores
    sharing one would remove each other's attempts, and the folder the variable names
    (the user's) is never removed.
    """
    tag = f"dreamrsi-{hashlib.sha256(str(store_dir).encode()).hexdigest()[:12]}"
    override = os.environ.get("DREAMRSI_WORK_DIR")
    if override:
        return Path(override).absolute() / tag
    try:
        usable = os.access(_SHM, os.W_OK) and shutil.disk_usage(_SHM).free >= _SHM_MIN_FREE
    except OSError:
        usable = False
    if usable:
        return _SHM / tag
    return store_dir / "work"


def discard_folder(folder: Path) -> str | None:
    """Remove ``folder`` (the work folder, or one attempt's folder in it) and whatever
    sandboxed commands left there (trees of any depth, links, FIFOs, folders made
    read-only); never raises.

    Returns:
        None when it is gone, else why not (logged; every start and resume of a run clears
        the whole work folder again first).
    """
    from dreamrsi.workspace.folders import remove_tree  # a reading command never needs it

    try:
        remove_tree(folder)
    except Exception as exc:  # noqa: BLE001 - the caller records and carries on
        logger.warning("could not remove %s: %s", folder, exc)
        return f"{type(exc).__name__}: {exc}"
    return None
