"""PostmortemImporter: `POST /v1/postmortems` (reviewer). Parse, append the events, remember the document.

Order (as the alert intake's): a document already imported (same project, incident and content) answers from
`postmortem_imports` and appends nothing; otherwise its events are validated like any request (the gateway's
`validate_request`, with the `imported` mark allowed: this is the only caller that may write it) and go out
in one Kafka transaction; then the bookkeeping row. A crash in between can only append the same event ids
again on retry, a no-op everywhere. The projector then turns the events into an episode and a candidate
flagged `imported` (`projector.gate.imported_draft`), which only a reviewer can approve.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson
from pydantic import ValidationError

from schemas.guard import UnsafeInput
from schemas.postmortems import PostmortemImportAnswer, PostmortemImportRequest
from services.common.auth import Principal
from services.common.db import Database
from services.common.errors import InvalidInput
from services.gateway.service import DEFAULT_PROJECT, LedgerGateway, validate_request
from services.postmortems import store
from services.postmortems.events import build_events, document_sha256, incident_id_for
from services.postmortems.model import MAX_DOCUMENT_CHARS, DocumentTooLarge
from services.postmortems.parse import parse

JSON_OBJECT_LIMIT = 4 * MAX_DOCUMENT_CHARS  # bytes of a json document given as an object


def parse_request(body: Any) -> PostmortemImportRequest:
    """The request, its size checked first (413), then its fields (422 naming the field; a value the input guard
    refuses, such as a lone surrogate or a 64-bit overflow, is named where it is inside `content`)."""
    content = body.get("content") if isinstance(body, dict) else None
    if isinstance(content, str) and len(content) > MAX_DOCUMENT_CHARS:
        raise DocumentTooLarge(len(content))
    if isinstance(content, dict):
        try:
            size = len(orjson.dumps(content))
        except orjson.JSONEncodeError:  # a lone surrogate or an integer beyond 64 bits: the guard names it below
            size = 0
        if size > JSON_OBJECT_LIMIT:
            raise DocumentTooLarge(size)
    try:
        return PostmortemImportRequest.model_validate(body)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, UnsafeInput):  # the guard's own path, as the API's handler reads it
            path = cause.problem.path or "body"
            raise InvalidInput(f"{path}: {cause.problem.reason}", field=path) from None
        path = ".".join(str(p) for p in err["loc"]) or "body"
        raise InvalidInput(f"{path}: {err['msg']}", field=path) from None


class PostmortemImporter:
    def __init__(self, db: Database, gateway: LedgerGateway) -> None:
        self.db = db
        self.gateway = gateway

    def import_document(self, principal: Principal, body: Any) -> PostmortemImportAnswer:
        principal.require("reviewer")
        req = parse_request(body)
        pm = parse(req.format, req.content)
        tenant = principal.scoped_tenant
        project = principal.project or DEFAULT_PROJECT
        sha = document_sha256(req.format, req.content)
        incident_id = req.incident_id or incident_id_for(req.source_ref, sha)
        answer = dict(unparsed=pm.unparsed, quarantined=len(pm.quarantined), root_cause_withheld=pm.root_cause_withheld)
        with self.db.tenant_transaction(tenant) as cur:
            done = store.find(cur, project, incident_id, sha)
        if done is not None:
            return PostmortemImportAnswer(incident_id=incident_id, event_ids=[str(e) for e in done.event_ids],
                                          candidate=done.candidate, status="unchanged", **answer)
        document = req.content if isinstance(req.content, str) else orjson.dumps(req.content).decode()
        events = build_events(pm, tenant=tenant, project=project, incident_id=incident_id, content_sha256=sha,
                              source_ref=req.source_ref, document=document[:MAX_DOCUMENT_CHARS],
                              actor=principal.actor, now=datetime.now(UTC))
        records = validate_request({"events": events}, principal, datetime.now(UTC), imported_allowed=True)
        self.gateway.produce(records)
        ids: list[UUID] = [r.event_id for r in records]
        with self.db.tenant_transaction(tenant) as cur:
            store.record(cur, tenant=tenant, project=project, incident_id=incident_id, content_sha256=sha,
                         source_ref=req.source_ref, event_ids=ids, candidate=True, unparsed=pm.unparsed,
                         imported_by=principal.actor)
        return PostmortemImportAnswer(incident_id=incident_id, event_ids=[str(i) for i in ids], candidate=True,
                                      **answer)
