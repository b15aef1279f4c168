"""Names a package exports but imports only when first used (PEP 562), so importing the
package stays cheap: a command loads only the modules it needs."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name of ``module_of`` is imported from the
    module named there on first use and kept in the package's namespace; any other name raises
    ``AttributeError`` as a missing attribute does."""

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        vars(sys.modules[package])[name] = value
        return value

    return __getattr__
