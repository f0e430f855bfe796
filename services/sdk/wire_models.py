"""Writes the client distribution's wire models (`clients/python/opslore/models.py`) from the server's own.

    python -m services.sdk.wire_models > clients/python/opslore/models.py

One source: the request and response models the API declares (`schemas.api`, `schemas.views`,
`schemas.memory`) are walked field by field and written as plain pydantic classes that import nothing
of the server, so `opslore-client` depends on pydantic and httpx only. What the client writes differs on
purpose: answers keep fields they do not know (a newer server adds fields without breaking an older
client) and carry no bounds; requests refuse unknown fields and keep each field's own bounds (a typo or
`limit=50` fails before it is sent), while the bounds of list items and the input guard are left to the
server (it answers 422 naming the field); enums become `Literal`s of their values; inheritance is
flattened. `tests/unit/test_client_models.py` checks that the file is current and that the classes accept
every response schema the server's OpenAPI declares.
"""

from __future__ import annotations

import enum
import re
import sys
import textwrap
import types
import typing
from datetime import date, datetime
from typing import Any, Literal, Union, get_args, get_origin
from uuid import UUID

from pydantic import AliasChoices, AwareDatetime, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from schemas.api import (
    Accepted,
    BriefingRequest,
    BriefingResponse,
    FeedbackRequest,
    RecordSearchRequest,
    RecordSearchResponse,
    Whoami,
)
from schemas.views import EpisodeView, RecordDetail, VerifyResult

ANSWERS: tuple[type[BaseModel], ...] = (Whoami, BriefingResponse, Accepted, EpisodeView, RecordDetail,
                                        VerifyResult, RecordSearchResponse)
REQUESTS: tuple[type[BaseModel], ...] = (BriefingRequest, FeedbackRequest, RecordSearchRequest)

HEADER = '''"""The API's wire models, as the client reads and writes them. GENERATED from the server's models by
`python -m services.sdk.wire_models > clients/python/opslore/models.py`: do not edit by hand.

Answers keep fields this version does not know; requests refuse unknown fields and check each field's own
bounds; the rest is the server's to check (it answers 422 naming the field).
"""

from __future__ import annotations

{datetime}from typing import {typing}
from uuid import UUID

from pydantic import {pydantic}BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")
'''

_SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", UUID: "UUID",
                            datetime: "datetime", AwareDatetime: "datetime", date: "date", Any: "Any",
                            type(None): "None"}


class Writer:
    def __init__(self) -> None:
        self.order: list[type[BaseModel]] = []
        self.base: dict[type[BaseModel], str] = {}

    def want(self, model: type[BaseModel], base: str) -> None:
        if model not in self.base:
            self.base[model] = base
            for info in model.model_fields.values():
                self._type(info.annotation, base)  # nested models first: the file reads top-down
            self.order.append(model)

    def _type(self, tp: Any, base: str) -> str:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            return self._type(get_args(tp)[0], base)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            self.want(tp, base)
            return tp.__name__
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return "Literal[" + ", ".join(repr(m.value) for m in tp) + "]"
        if tp in _SCALARS:
            return _SCALARS[tp]
        if origin is Literal:
            return "Literal[" + ", ".join(repr(a) for a in get_args(tp)) + "]"
        if origin in (Union, types.UnionType):
            return " | ".join(self._type(a, base) for a in get_args(tp))
        if origin in (list, set, frozenset, tuple, dict):
            args = get_args(tp)
            inner = ", ".join("..." if a is Ellipsis else self._type(a, base) for a in args)
            return f"{origin.__name__}[{inner}]"
        raise TypeError(f"no client spelling for {tp!r}")

    @staticmethod
    def _bounds(info: FieldInfo) -> list[str]:
        """A request field's own bounds (not those of its items), checked before the request is sent."""
        found: dict[str, Any] = {}
        for item in info.metadata:
            for name in ("ge", "le", "gt", "lt", "min_length", "max_length", "pattern"):
                value = getattr(item, name, None)
                if value is not None:
                    found[name] = value
        return [f"{k}={v!r}" for k, v in found.items()]

    @staticmethod
    def _aliases(info: FieldInfo) -> list[str]:
        """The other names a field is read under (e.g. `service_version`, once `version`): the client accepts them
        as the server does, in requests and in answers (an older server's)."""
        alias = info.validation_alias
        if alias is None:
            return []
        if not isinstance(alias, AliasChoices) or not all(isinstance(c, str) for c in alias.choices):
            raise TypeError(f"no client spelling for the alias {alias!r}")
        return ["validation_alias=AliasChoices(" + ", ".join(repr(c) for c in alias.choices) + ")"]

    def _default(self, info: FieldInfo, bounds: list[str]) -> str | None:
        if info.default_factory is not None:
            factory = info.default_factory
            if factory not in (list, dict, set):
                raise TypeError(f"no client spelling for the default factory {factory!r}")
            return "Field(" + ", ".join([f"default_factory={factory.__name__}", *bounds]) + ")"
        if info.default is PydanticUndefined:
            return "Field(" + ", ".join(bounds) + ")" if bounds else None
        value = info.default.value if isinstance(info.default, enum.Enum) else info.default
        if isinstance(value, list | dict) and not value:
            return "Field(" + ", ".join([f"default_factory={type(value).__name__}", *bounds]) + ")"
        if value is None or isinstance(value, str | int | float | bool):
            return "Field(" + ", ".join([repr(value), *bounds]) + ")" if bounds else repr(value)
        raise TypeError(f"no client spelling for the default {value!r}")

    def source(self) -> str:
        parts: list[str] = []
        for model in self.order:
            paragraph = " ".join((model.__doc__ or "").strip().split("\n\n")[0].split())
            lines = [f"class {model.__name__}({self.base[model]}):"]
            if paragraph:
                lines += textwrap.wrap(f'"""{paragraph}"""', 110, initial_indent="    ", subsequent_indent="    ")
                lines.append("")
            for name, info in model.model_fields.items():
                own = self._bounds(info) if self.base[model] == "_Request" else []
                default = self._default(info, own + self._aliases(info))
                spelled = self._type(info.annotation, self.base[model])
                lines.append(f"    {name}: {spelled}" + (f" = {default}" if default is not None else ""))
            parts.append("\n".join(lines) + "\n")
        body = "\n\n".join(parts)
        used = [name for name in ("date", "datetime") if re.search(rf"\b{name}\b", body)]
        header = HEADER.replace("{datetime}", f"from datetime import {', '.join(used)}\n" if used else "")
        header = header.replace("{pydantic}", "AliasChoices, " if "AliasChoices(" in body else "")
        header = header.replace("{typing}", ", ".join(n for n in ("Any", "Literal") if re.search(rf"\b{n}\[?", body)))
        return header + "\n\n" + body


def render() -> str:
    writer = Writer()
    for model in REQUESTS:
        writer.want(model, "_Request")
    for model in ANSWERS:
        writer.want(model, "_Answer")
    return writer.source()


if __name__ == "__main__":
    sys.stdout.write(render())
