"""One entry point for both formats. Pure."""

from __future__ import annotations

from typing import Any, Literal

from services.common.errors import InvalidInput
from services.postmortems.json_format import parse_json
from services.postmortems.markdown import parse_markdown
from services.postmortems.model import Postmortem

Format = Literal["markdown", "json"]


def parse(format: Format, content: str | dict[str, Any]) -> Postmortem:
    if format == "markdown":
        if not isinstance(content, str):
            raise InvalidInput("a markdown postmortem is a string", field="content")
        return parse_markdown(content)
    return parse_json(content)


def format_of(path_name: str) -> Format | None:
    """The format a file's name says (`.md`, `.markdown`, `.mdx`, `.txt`: a plain-text postmortem reads as Markdown,
    its `标签：` lines and one-line labels as headings; `.json`), or None."""
    lower = path_name.lower()
    if lower.endswith((".md", ".markdown", ".mdx", ".txt")):
        return "markdown"
    if lower.endswith(".json"):
        return "json"
    return None
