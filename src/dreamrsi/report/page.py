"""The report's ``index.html``: plain HTML with its style inline, every text escaped (feedback,
plans and model answers are hostile), figures as files beside it; no URL leaves the folder."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Page"]

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 70em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top;
         max-width: 40em; overflow-wrap: anywhere; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
pre { background: #f6f6f6; padding: 0.5em; white-space: pre-wrap; }
"""


def text(value: Any) -> str:
    """``value`` as escaped text (numbers to four significant digits, structures as JSON)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return html.escape(f"{value:.4g}")
    if isinstance(value, Mapping | list | tuple):
        return html.escape(json.dumps(value, default=str, sort_keys=True))
    return html.escape(str(value))


Column = tuple[str, str | Callable[[Mapping[str, Any]], Any]]


class Page:
    """An HTML document built from escaped parts."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = [f"<h1>{text(title)}</h1>"]

    def heading(self, title: str, level: int = 2) -> None:
        """A section heading."""
        self.parts.append(f"<h{level}>{text(title)}</h{level}>")

    def para(self, words: str) -> None:
        """A paragraph of text."""
        self.parts.append(f"<p>{text(words)}</p>")

    def figure(self, file_name: str, caption: str) -> None:
        """A figure file of the report's folder."""
        self.parts.append(f'<figure><img src="{html.escape(file_name, quote=True)}" '
                          f'alt="{html.escape(caption, quote=True)}">'
                          f"<figcaption>{text(caption)}</figcaption></figure>")

    def table(self, rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> None:
        """A table; a column's key names a field, or is a function of the row."""
        head = "".join(f"<th>{text(name)}</th>" for name, _ in columns)
        body = []
        for row in rows:
            cells = "".join(
                f"<td>{text(key(row) if callable(key) else row.get(key))}</td>"
                for _, key in columns)
            body.append(f"<tr>{cells}</tr>")
        self.parts.append(f"<table><thead><tr>{head}</tr></thead>"
                          f"<tbody>{''.join(body)}</tbody></table>")

    def block(self, words: str) -> None:
        """Preformatted text (a diff, a brief)."""
        self.parts.append(f"<pre>{text(words)}</pre>")

    def render(self) -> str:
        """The whole document."""
        return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{text(self.title)}</title><style>{STYLE}</style></head><body>\n"
                + "\n".join(self.parts) + "\n</body></html>\n")
