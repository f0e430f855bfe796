"""The client distribution's wire models (clients/python/opslore/models.py) are generated from the server's
models, are current, and accept every response the server's OpenAPI declares for the client's verbs; the
client builds the same envelopes as the server's one builder; and the client imports nothing of the server."""

from __future__ import annotations

import ast
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import opslore
import pytest
from opslore import events, models
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from schemas.ledger import EventType, Trust
from schemas.ledger import envelope as server_envelope
from services.api.app import create_app
from services.common.settings import Settings
from services.sdk.wire_models import ANSWERS, render

CLIENT = Path(__file__).parents[2] / "clients" / "python" / "opslore"
# (method, path) of every call the client makes -> the model it parses the answer with
VERBS: dict[tuple[str, str], type[BaseModel]] = {
    ("get", "/v1/whoami"): models.Whoami,
    ("post", "/v1/briefings"): models.BriefingResponse,
    ("post", "/v1/briefings/{briefing_id}/verify"): models.VerifyResult,
    ("post", "/v1/briefings/{briefing_id}/feedback"): models.Accepted,
    ("post", "/v1/ledger/events"): models.Accepted,
    ("get", "/v1/incidents/{incident_id}/episode"): models.EpisodeView,
    ("post", "/v1/records/search"): models.RecordSearchResponse,
    ("get", "/v1/records/{family_id}"): models.RecordDetail,
}
IGNORED = {"title", "description", "default", "maxLength", "minLength", "pattern", "maximum", "minimum",
           "exclusiveMaximum", "exclusiveMinimum", "maxItems", "minItems", "maxProperties", "examples"}


def test_the_generated_models_are_current() -> None:
    assert (CLIENT / "models.py").read_text() == render(), \
        "regenerate: python -m services.sdk.wire_models > clients/python/opslore/models.py"


def _normal(schema: Any, components: dict[str, Any]) -> Any:
    """A JSON schema without what the client does not check (bounds, titles, defaults), enum references
    inlined, and unions in a stable order."""
    if isinstance(schema, list):
        return [_normal(s, components) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        target = components[name]
        return _normal(target, components) if "enum" in target else {"$ref": name}
    out = {k: _normal(v, components) for k, v in schema.items() if k not in IGNORED
           and not (k == "additionalProperties" and v is False)}  # the client keeps fields it does not know
    if "anyOf" in out:
        out["anyOf"] = sorted(out["anyOf"], key=lambda s: json.dumps(s, sort_keys=True))
    if "required" in out:
        out["required"] = sorted(out["required"])
    return out


def _reachable(names: set[str], components: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [ref.rsplit("/", 1)[-1] for ref in _refs(components[name])]
    return seen


def _refs(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        return ([schema["$ref"]] if "$ref" in schema else []) + [r for v in schema.values() for r in _refs(v)]
    if isinstance(schema, list):
        return [r for v in schema for r in _refs(v)]
    return []


def test_the_client_models_accept_every_response_the_server_declares() -> None:
    openapi = create_app(Settings(admin_token="t", ui_secret="s")).openapi()
    server = openapi["components"]["schemas"]
    declared: set[str] = set()
    for (method, path), model in VERBS.items():
        ok = next(v for k, v in openapi["paths"][path][method]["responses"].items() if k.startswith("2"))
        ref = ok["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        assert ref == model.__name__, (path, ref)
        declared.add(ref)
    _, client_schema = models_json_schema([(m, "serialization") for m in VERBS.values()],
                                          ref_template="#/components/schemas/{model}")
    client = client_schema["$defs"]
    compared = 0
    for name in sorted(_reachable(declared, server)):
        if "enum" in server[name]:
            continue  # inlined where it is used (the client spells enums as Literals)
        assert name in client, f"the client has no model {name}"
        assert _normal(client[name], client) == _normal(server[name], server), name
        compared += 1
    assert compared >= 20  # every answer and every model nested in one
    assert {m.__name__ for m in ANSWERS} <= {*client}


def test_answers_keep_unknown_fields_and_requests_check_their_own_bounds() -> None:
    who = models.Whoami.model_validate({"tenant": "t", "project": None, "role": "agent", "added_later": 1})
    assert who.role == "agent"
    with pytest.raises(ValidationError):
        models.BriefingRequest(limit=50)
    with pytest.raises(ValidationError):
        models.BriefingRequest.model_validate({"servces": ["typo"]})


def test_the_client_builds_the_envelope_the_server_builds() -> None:
    at, event_id = datetime(2026, 3, 2, 10, 0, tzinfo=UTC), uuid.uuid4()
    args = ("observation.recorded", "INC-1", {"source": "logs", "summary": "x"})
    kw: dict[str, Any] = {"writer_kind": "agent", "writer_id": "sdk", "trust": "model_inferred", "at": at,
                          "event_id": event_id}
    assert events.envelope(*args, **kw) == server_envelope(*args, **kw)
    assert {e.value for e in EventType} == events.EVENT_TYPES and {t.value for t in Trust} == events.TRUST
    with pytest.raises(ValueError):
        events.envelope("observation.made_up", "INC-1", {}, writer_kind="agent", writer_id="x", trust="user_stated")


def test_the_client_imports_only_itself_httpx_pydantic_and_the_standard_library() -> None:
    allowed = {"opslore", "httpx", "pydantic", "__future__", "os", "types", "typing", "uuid", "datetime",
               "collections", "dataclasses", "asyncio", "time"}
    for path in CLIENT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert name.split(".")[0] in allowed, (path.name, name)
    assert Path(opslore.__file__).parent.parts[-3:] == ("clients", "python", "opslore")  # not another copy
