"""One check for every JSON value that enters (request bodies, ledger events, query and path values).

PostgreSQL text and jsonb reject NUL; orjson cannot encode integers beyond 64 bits; a lone surrogate
cannot be encoded as UTF-8; deep nesting exhausts the stack; megabytes in one label cost seconds of CPU.
`unsafe(value)` finds the first such problem and names where it is, so the caller answers 422 naming the
field and writes nothing.

Two rules for text:
- a JSON string *value* is evidence (a log line as `kubectl logs` prints it, ANSI colours, form feeds,
  U+2028): every character JSON can carry is accepted except NUL and lone surrogates, the two that cannot
  be stored; it is kept verbatim and escaped where a person or a model reads it
  (`services.common.printable`);
- a *name* (an object key, a query parameter, the URL path) is not evidence: no control characters at
  all, and a key is at most MAX_KEY characters.
Object keys are walked like values (surrogates, NUL, control characters, length, count), and a path
that names a key always shows it printable and short (`shown_key`), so an error that echoes the input can
always be encoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, model_validator

MAX_DEPTH = 32
MAX_ITEMS = 10_000  # per object or array
MAX_STRING = 65_536  # characters, for any string the models do not bound more tightly
MAX_KEY = 256  # characters in an object key
MAX_KEY_SHOWN = 40  # characters of a key repeated in an error's field path
MAX_INT = 2**63 - 1
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # tab, newline and carriage return are text
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")

NUL = "text must not contain NUL (\\u0000)"
CONTROL = "text must not contain NUL or other control characters"
SURROGATE = "text must be valid Unicode (a lone surrogate was found)"


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str


class UnsafeInput(ValueError):
    """Raised inside model validation; carries the offending path relative to the validated value."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.path or 'body'}: {problem.reason}")
        self.problem = problem


def text_problem(value: str) -> str | None:
    """A JSON string value: anything but NUL and lone surrogates, at most MAX_STRING characters."""
    if len(value) > MAX_STRING:
        return f"text longer than {MAX_STRING} characters"
    if "\x00" in value:
        return NUL
    if _SURROGATE.search(value):
        return SURROGATE
    return None


def name_problem(value: str, limit: int = MAX_STRING) -> str | None:
    """A name (object key, query parameter, path): no control characters, no lone surrogates."""
    if len(value) > limit:
        return f"longer than {limit} characters"
    if _CONTROL.search(value):
        return CONTROL
    if _SURROGATE.search(value):
        return SURROGATE
    return None


def shown_key(key: str) -> str:
    """A key as an error path repeats it: control characters and surrogates as escapes, at most
    MAX_KEY_SHOWN characters (then an ellipsis). Always encodable as UTF-8."""
    short = key if len(key) <= MAX_KEY_SHOWN else key[:MAX_KEY_SHOWN]
    shown = _UNSHOWABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", short)
    return shown if short is key else shown + "…"


def _join(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def unsafe(value: object, path: str = "", depth: int = 0) -> Problem | None:
    """The first unsafe part of a JSON-like value, or None."""
    if isinstance(value, str):
        reason = text_problem(value)
        return Problem(path, reason) if reason else None
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return None
    if isinstance(value, int):
        return None if -MAX_INT - 1 <= value <= MAX_INT else Problem(path, "integer outside the 64-bit range")
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return Problem(path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return _unsafe_items(((shown_key(str(k)), k, v) for k, v in value.items()), len(value), path, depth,
                             keys=True)
    if isinstance(value, list):
        return _unsafe_items(((i, None, v) for i, v in enumerate(value)), len(value), path, depth, keys=False)
    return None


def _unsafe_items(items: object, count: int, path: str, depth: int, *, keys: bool) -> Problem | None:
    if count > MAX_ITEMS:
        return Problem(path, f"more than {MAX_ITEMS} items")
    for where, key, item in items:  # type: ignore[attr-defined]
        here = _join(path, where)
        if keys:
            reason = name_problem(str(key), MAX_KEY)
            if reason:
                return Problem(here, f"key: {reason}")
        found = unsafe(item, here, depth + 1)
        if found is not None:
            return found
    return None


class Guarded(BaseModel):
    """Base of every model that parses input from outside: the whole value is checked by `unsafe` first,
    and the problem (with its path) surfaces as UnsafeInput, which the API maps to a 422 naming the field."""

    @model_validator(mode="before")
    @classmethod
    def _safe(cls, data: Any) -> Any:
        problem = unsafe(data)
        if problem is not None:
            raise UnsafeInput(problem)
        return data
