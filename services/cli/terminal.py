"""What the CLI prints of text that came from the server (evidence, summaries, reasons, errors).

A terminal interprets what it is given: an ANSI escape from a `kubectl logs` line would recolour or move
the cursor, a carriage return would overwrite the line, and rich reads `[red]` in data as its own markup.
`shown` makes control characters, line separators and bidi overrides visible escapes
(`services.common.printable`) and escapes rich's markup, so the operator sees the text as the tool printed
it, never its effect. The JSON output (`--json`, exports) is already escaped by the JSON encoder.
"""

from __future__ import annotations

from rich.markup import escape

from services.common.printable import printable


def shown(value: object, *, one_line: bool = False) -> str:
    return escape(printable(str(value), one_line=one_line))
