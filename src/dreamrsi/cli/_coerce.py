"""Native coercion of the CLI's simple parameters, in place of Typer's pydantic adapters.

Typer (0.29 and later) turns every parameter value that is not a flag into its type through a
pydantic ``TypeAdapter``: importing pydantic and building the adapters was most of a reading
command's start-up (``benchmarks/bench_startup.py``). Every parameter of dreamrsi is a ``bool``,
``str``, ``int``, ``float`` or ``Path`` (with ``min``/``max`` or a ``parser``, optional or not),
so :func:`install` makes Typer coerce those here, with the messages pydantic gives; anything
else (enums, lists, clamped numbers, paths with checks) still goes to Typer's own adapters.
``tests/cli/test_coerce.py`` checks, parameter by parameter of the real app, that both give the
same values and the same messages.

A Typer without ``typer.core.build_runtime_param`` (before 0.29) coerces through Click's types,
which import nothing heavy: :func:`install` then leaves it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import typer
from typer import core

_original: Callable[[Any], Any] | None = None
_INT = re.compile(r"[+-]?[0-9](?:_?[0-9])*(?:\.0+)?", re.ASCII)


def native_coercer(annotation: Any, info: Any) -> Callable[[Any], Any] | None:
    """A function that turns a CLI value into ``annotation`` as Typer's adapter would (raising
    ``typer.BadParameter`` with the adapter's message), or ``None`` when this module leaves the
    parameter to Typer."""
    annotation = _unwrap_optional(annotation)
    if info.parser is not None:
        return _parsed(info.parser)
    if getattr(info, "clamp", False):
        return None
    if annotation is int or annotation is float:
        if annotation is float:
            return _ranged(_to_float, info.min, info.max)
        return _ranged(_to_int, info.min, info.max)
    if annotation is bool:
        return _to_bool
    if annotation is str:
        return _to_str
    if annotation is Path and not (info.allow_dash or info.path_type is not None
                                   or info.resolve_path or info.exists):
        return _to_path
    return None


def install() -> None:
    """Make Typer coerce the parameters :func:`native_coercer` covers natively (idempotent;
    nothing happens with a Typer that does not use pydantic adapters)."""
    global _original
    build = getattr(core, "build_runtime_param", None)
    try:
        from typer._coercion import RuntimeParam as base
    except ImportError:
        return
    if _original is not None or build is None:
        return
    _original = build

    class NativeRuntimeParam(base):
        """Coercion through a function of this module."""

        def __init__(self, parameter_info: Any, annotation: Any,
                     coerce: Callable[[Any], Any]) -> None:
            super().__init__(parameter_info=parameter_info, annotation=annotation)
            object.__setattr__(self, "native", coerce)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return getattr(self, "native")(value)  # noqa: B009 (set above, frozen class)
            except typer.BadParameter as exc:
                exc.ctx, exc.param = exc.ctx or ctx, exc.param or param
                raise

    def build_runtime_param(descriptor: Any) -> Any:
        coerce = (None if descriptor.file_annotation is not None
                  else native_coercer(descriptor.annotation, descriptor.parameter_info))
        if coerce is None:
            return build(descriptor)
        return NativeRuntimeParam(descriptor.parameter_info, descriptor.annotation, coerce)

    setattr(core, "build_runtime_param", build_runtime_param)  # noqa: B010


def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not NoneType]
        if len(args) == 1:
            return args[0]
    return annotation


def _parsed(parser: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def coerce(value: Any) -> Any:
        try:
            return parser(value)
        except (ValueError, AssertionError) as exc:  # what pydantic turns into messages
            prefix = "Value error" if isinstance(exc, ValueError) else "Assertion failed"
            raise typer.BadParameter(f"{prefix}, {exc}") from None

    return coerce


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        if not text:
            return False
    elif isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    raise typer.BadParameter("Input should be a valid boolean, unable to interpret input")


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    raise typer.BadParameter("Input should be a valid string")


def _to_path(value: Any) -> Path:
    if isinstance(value, Path):
        return value
    if isinstance(value, str):
        return Path(value)
    raise typer.BadParameter("Input is not a valid path")


def _to_int(value: Any) -> int:
    if isinstance(value, bool | int):
        return int(value)
    text = str(value).strip()
    if not _INT.fullmatch(text):  # what pydantic takes: digits, "_" between them, ".0"
        raise typer.BadParameter("Input should be a valid integer, unable to parse string as "
                                 "an integer")
    return int(text.split(".")[0])


def _to_float(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    try:
        if not text.isascii():
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise typer.BadParameter("Input should be a valid number, unable to parse string as "
                                 "a number") from None


def _ranged(convert: Callable[[Any], Any], low: float | None,
            high: float | None) -> Callable[[Any], Any]:
    def coerce(value: Any) -> Any:
        number = convert(value)
        if low is not None and not number >= low:
            raise typer.BadParameter(f"Input should be greater than or equal to {low}")
        if high is not None and not number <= high:
            raise typer.BadParameter(f"Input should be less than or equal to {high}")
        return number

    return coerce
