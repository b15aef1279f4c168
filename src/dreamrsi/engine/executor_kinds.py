"""The executors ``--executor`` names, and making one (Ray is imported only for ``ray``)."""

from __future__ import annotations

from dreamrsi.engine.executors import Executor, LocalExecutor
from dreamrsi.engine.ray_cluster import EXECUTORS
from dreamrsi.errors import ConfigError

__all__ = ["EXECUTORS", "make_executor"]



def make_executor(kind: str = "local", address: str | None = None) -> Executor:
    """The executor ``--executor`` names: ``local``, or ``ray`` on the cluster at
    ``address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``; None: a local Ray instance).

    Raises:
        ConfigError: An unknown executor, or an address given to the local one.
    """
    if kind == "local":
        if address is not None:
            raise ConfigError("--ray-address needs --executor ray", key="executor")
        return LocalExecutor()
    if kind == "ray":
        from dreamrsi.engine.ray_executor import RayExecutor

        return RayExecutor(address)
    raise ConfigError(f"unknown executor {kind!r}", key="executor",
                      expected=" | ".join(EXECUTORS))
