"""Evidence shown safely: text stored verbatim, made visible where a person or a model reads it.

The ledger keeps what a tool printed, byte for byte (an ANSI-coloured `kubectl logs` line, a form feed, a
bell, U+2028). Where that text is read (the review UI, a briefing's `rendered` text, the CLI in a
terminal), `printable` writes each character that a terminal, a browser or a model could take as an
instruction rather than as text as a visible escape: C0 and C1 control characters and DEL (`\\x1b`), the
line and paragraph separators, and the bidirectional overrides and isolates that reorder what is shown
(`\\u202e`, "Trojan Source"). Tab and newline stay as they are unless `one_line` (then `\\n`, `\\t`);
carriage return is always escaped (it would overwrite the line it ends). Backslashes are not doubled:
the escape is for reading, the stored JSON is the exact form. Pure.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_SHOWN = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")
_SHOWN_ONE_LINE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """`text` with every character that could act on the reader shown as an escape (see the module)."""
    pattern = _SHOWN_ONE_LINE if one_line else _SHOWN
    return pattern.sub(_escape, text) if pattern.search(text) else text
