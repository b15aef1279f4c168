"""Which symbolic links of a committed workspace point outside it.

A link's target is resolved as the kernel would inside the exported folder, following the
tree's other links (a link ``sub/up -> ..`` is inside; ``sub/up2 -> up/..`` is not). A link
escapes when its target is absolute, climbs above the folder, or loops.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["escaping_links"]

_MAX_HOPS = 40  # as the kernel's MAXSYMLINKS


class _Escapes(Exception):
    """The path leaves the folder (or loops)."""


def _resolve(links: Mapping[str, str], start: list[str], target: str, hops: int) -> list[str]:
    """The folder parts ``target`` reaches from the folder ``start``.

    Raises:
        _Escapes: It is absolute, climbs above the root, or follows too many links.
    """
    if target.startswith("/") or hops > _MAX_HOPS:
        raise _Escapes
    parts = list(start)
    for name in target.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                raise _Escapes
            parts.pop()
            continue
        key = "/".join([*parts, name])
        if key in links:
            parts = _resolve(links, parts, links[key], hops + 1)
        else:
            parts.append(name)
    return parts


def escaping_links(links: Mapping[str, str]) -> list[str]:
    """The links (path inside the folder, ``/``-separated, to target) that point outside.

    Args:
        links: Every link of the folder: its path to its target.

    Returns:
        ``"path -> target"`` for each link that escapes, sorted.
    """
    out = []
    for path, target in sorted(links.items()):
        try:
            _resolve(links, path.split("/")[:-1], target, 0)
        except _Escapes:
            out.append(f"{path} -> {target}")
    return out
