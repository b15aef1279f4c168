"""Packages that export names lazily (PEP 562, ``_lazy.lazy_exports``) do it plainly: no
exported name is also a submodule's, so importing a submodule never rebinds an export."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest

LAZY = ["dreamrsi", "dreamrsi.agents", "dreamrsi.dreaming", "dreamrsi.engine", "dreamrsi.store",
        "dreamrsi.tasks"]

PROBE = """
import importlib, json, pkgutil, sys, types
package = importlib.import_module(sys.argv[1])
for info in pkgutil.iter_modules(package.__path__):
    importlib.import_module(f"{package.__name__}.{info.name}")
print(json.dumps(sorted(n for n in package.__all__
                        if isinstance(getattr(package, n), types.ModuleType))))
"""


@pytest.mark.parametrize("name", LAZY)
def test_no_lazily_exported_name_is_a_submodule(name: str) -> None:
    package = importlib.import_module(name)
    assert "__getattr__" in vars(package)  # it does export lazily
    submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    assert not set(package.__all__) & submodules


@pytest.mark.parametrize("name", ["dreamrsi.dreaming", "dreamrsi.engine"])
def test_importing_every_submodule_leaves_the_exports_as_they_are(name: str) -> None:
    res = subprocess.run([sys.executable, "-c", PROBE, name], capture_output=True, text=True,
                         timeout=120, check=True)
    assert json.loads(res.stdout.splitlines()[-1]) == []


def test_dream_is_the_function() -> None:
    import dreamrsi.dreaming.dreamer
    from dreamrsi import dreaming

    assert callable(dreaming.dream) and dreaming.dream is dreamrsi.dreaming.dreamer.dream
