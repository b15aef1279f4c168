"""Joining Ray: a local instance once per process, and a clear error for a bad address."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dreamrsi.engine.ray_cluster import connect
from dreamrsi.errors import ConfigError


def test_a_local_instance_runs_a_task_and_is_joined_once(ray_local: object) -> None:
    ray = connect()  # already connected: the same instance
    assert ray is ray_local and ray.is_initialized()
    assert ray.cluster_resources().get("CPU") == 2

    @ray.remote
    def square(x: int) -> int:
        return x * x

    assert ray.get([square.remote(i) for i in range(4)]) == [0, 1, 4, 9]


def test_an_address_with_no_cluster_is_a_config_error() -> None:
    # in a child process: this one may already hold the session's local instance
    code = ("from dreamrsi.engine.ray_cluster import connect\n"
            "from dreamrsi.errors import ConfigError\n"
            "try:\n    connect('127.0.0.1:1')\nexcept ConfigError as exc:\n"
            "    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert "refused: cannot start or join Ray at 127.0.0.1:1" in done.stdout, done.stderr


def test_without_ray_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray then raises ImportError
    with pytest.raises(ConfigError, match=r'pip install "dreamrsi\[ray\]"'):
        connect()
