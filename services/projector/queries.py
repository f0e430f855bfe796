"""EpisodeQueries: read access to the episode projection for the API."""

from __future__ import annotations

from typing import Any

from services.common.db import Database
from services.common.errors import NotFound
from services.gateway.keys import Principal


class EpisodeQueries:
    def __init__(self, db: Database) -> None:
        self.db = db

    def episode(self, principal: Principal, incident_id: str) -> dict[str, Any]:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            cur.execute("SELECT project, body FROM episodes WHERE incident_id = %s", (incident_id,))
            row = cur.fetchone()
        if row is None or (principal.project and row["project"] != principal.project):
            raise NotFound(f"no episode for incident {incident_id}")
        body: dict[str, Any] = row["body"]
        return body
