"""The CLI's native coercion gives what Typer's pydantic adapters give, parameter by parameter.

``dreamrsi.cli._coerce`` takes over the coercion of simple parameters from Typer (for start-up
time); these tests run every parameter of the real app that it covers through both, on values a
user may type, and compare the values and the error messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from dreamrsi.cli import _coerce
from dreamrsi.cli.main import app

VALUES = ["0", "1", "-1", " 7 ", "1_000", "2.0", "2.5", "1e3", "inf", "-inf", "nan", "", "x",
          "9223372036854775807", "9223372036854775808", "123456789012345678901", "4294967296",
          "a/b", "[bold]", "\u00e9t\u00e9", "  ", "1.", ".5", "+3", "0x10", "2.00", "1__0",
          "_1", "1_", "\u0661\u0662", "infinity", "-Infinity", "1e400", "1_000.0", "0.0",
          "true", "False", " yes ", "OFF", "T", "n", "2", "truth"]


def _params() -> list[tuple[str, Any]]:
    group = typer.main.get_group(app)
    found = []

    def walk(prefix: str, command: Any) -> None:
        for param in command.params:
            found.append((f"{prefix} {param.name}".strip(), param))
        for name, sub in getattr(command, "commands", {}).items():
            walk(f"{prefix} {name}", sub)

    walk("", group)
    return found


PARAMS = _params()


def _outcome(coerce: Any, value: str) -> tuple[str, Any]:
    try:
        result = coerce(value)
    except typer.BadParameter as exc:
        return "error", exc.message
    if isinstance(result, float) and result != result:
        return "nan", None
    return "value", (type(result), result)


def test_the_app_has_parameters_of_every_kind_covered() -> None:
    covered = [p for _, p in PARAMS if _coerce.native_coercer(
        p.type_descriptor.annotation, p.type_descriptor.parameter_info)]
    kinds = {_coerce._unwrap_optional(p.type_descriptor.annotation) for p in covered}
    assert {bool, int, float, str, Path} <= kinds
    assert len(covered) >= 40


@pytest.mark.parametrize(("name", "param"), PARAMS, ids=[n for n, _ in PARAMS])
def test_native_coercion_agrees_with_typer(name: str, param: Any) -> None:
    desc = param.type_descriptor
    native = _coerce.native_coercer(desc.annotation, desc.parameter_info)
    if native is None:
        return  # left to Typer
    assert _coerce._original is not None
    original = _coerce._original(desc)
    for value in VALUES:
        want = _outcome(lambda v: original._coerce_value(v, param=param, ctx=None), value)
        got = _outcome(native, value)
        assert got == want, (name, value)
