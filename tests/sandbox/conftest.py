"""Sandbox tests run commands in ``tmp_path``; as root those commands run as another user."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _open_tmp_path(tmp_path: Path) -> None:
    """Open pytest's private ``tmp_path`` (mode 0700) to the sandbox's unprivileged user."""
    tmp_path.chmod(0o755)
