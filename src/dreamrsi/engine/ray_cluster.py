"""Joining a Ray cluster, or starting a local Ray instance, once per process.

Ray is an optional dependency (``pip install "dreamrsi[ray]"``): it is imported only here and
only when a command asks for the Ray executor, so nothing else pays its import.
"""

from __future__ import annotations

import importlib
import socket
import threading
from types import ModuleType
from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["EXECUTORS", "check_executor", "connect", "ray_module"]

_LOCK = threading.Lock()

EXECUTORS = ("local", "ray")
"""Where a run's attempts and a dream's pieces run: this machine's processes, or Ray."""


def check_executor(executor: object, address: object) -> None:
    """Raise :class:`ConfigError` unless ``executor`` is one of :data:`EXECUTORS` and
    ``address`` is ``None`` or, with ``ray``, a non-empty cluster address.

    >>> check_executor("ray", "auto")
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}", key="executor",
                          expected=" | ".join(EXECUTORS))
    if address is None:
        return
    if executor != "ray":
        raise ConfigError("a Ray address needs the Ray executor (--executor ray)",
                          key="ray-address")
    if not isinstance(address, str) or not address.strip() or any(
            c.isspace() or not c.isprintable() for c in address):
        raise ConfigError(f"unusable Ray address {address!r}", key="ray-address",
                          expected="auto, HOST:PORT or ray://HOST:PORT")


def ray_module() -> ModuleType:
    """Ray, imported on first use.

    Raises:
        ConfigError: Ray is not installed.
    """
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError('the Ray executor needs Ray: pip install "dreamrsi[ray]"') from None


def connect(address: str | None = None, *, num_cpus: int | None = None) -> ModuleType:
    """Join the Ray cluster at ``address`` (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``),
    or start a local instance when it is None; a process already connected stays connected.

    Args:
        address: Where the cluster is, or None for a local instance.
        num_cpus: CPUs a local instance offers (its default: all of the machine's); ignored
            when joining a cluster, which declares its own.

    Returns:
        The ``ray`` module, initialised.

    Raises:
        ConfigError: Ray is not installed, or the cluster cannot be reached.
    """
    ray = ray_module()
    if address is not None:
        _reachable(address)
    with _LOCK:
        if ray.is_initialized():
            return ray
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                   "configure_logging": False}
        if address is None:
            if num_cpus is not None:
                options["num_cpus"] = num_cpus
        else:
            options["address"] = address
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "a local instance"
            raise ConfigError(f"cannot start or join Ray at {where}: {exc}") from None
    return ray


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """Refuse a ``HOST:PORT`` nobody listens on at once (Ray itself retries for minutes)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        why = exc.strerror or exc
        raise ConfigError(f"cannot start or join Ray at {address}: {why}") from None
