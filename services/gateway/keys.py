"""API keys: creation (stored as SHA-256 hashes) and authentication into a Principal.

Keys are reachable only through SECURITY DEFINER functions; the application role cannot read the
`api_keys` table. The bootstrap token (`OPSLORE_ADMIN_TOKEN`) may create keys for any tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid

from schemas.api import Whoami
from schemas.views import IssuedKey
from services.common.auth import ROLE_RANK, Principal
from services.common.db import Database
from services.common.errors import Forbidden, InvalidInput, Unauthenticated


def whoami_of(principal: Principal) -> Whoami:
    principal.require("agent")
    return Whoami(tenant=principal.scoped_tenant, project=principal.project, role=principal.role)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyService:
    def __init__(self, db: Database, admin_token: str) -> None:
        self.db = db
        self.admin_token = admin_token

    def authenticate(self, bearer: str | None) -> Principal:
        if not bearer:
            raise Unauthenticated("missing Authorization: Bearer <api key>")
        if not bearer.isascii() or not bearer.isprintable() or len(bearer) > 512:
            raise Unauthenticated("malformed API key")  # keys are short printable ASCII; anything else is none
        if self.admin_token and hmac.compare_digest(bearer, self.admin_token):
            return Principal(key_id=None, tenant=None, project=None, role="admin", bootstrap=True)
        with self.db.transaction() as cur:
            cur.execute("SELECT * FROM opslore_authenticate(%s)", (hash_key(bearer),))
            row = cur.fetchone()
        if row is None:
            raise Unauthenticated("unknown or revoked API key")
        return Principal(key_id=row["key_id"], tenant=row["tenant"], project=row["project"], role=row["role"])

    def create(self, caller: Principal, tenant: str, project: str | None, role: str) -> IssuedKey:
        if role not in ROLE_RANK:
            raise InvalidInput("role must be agent, reviewer or admin", field="role")
        if not caller.bootstrap:
            caller.require("admin")
            if tenant != caller.tenant:
                raise Forbidden("an admin key can only create keys for its own tenant")
            if caller.project is not None and project != caller.project:
                raise Forbidden("a project-bound admin key can only create keys for its project")
        key = "olk_" + secrets.token_urlsafe(32)
        with self.db.transaction() as cur:
            cur.execute(
                "SELECT opslore_create_api_key(%s, %s, %s, %s, %s)",
                (uuid.uuid4(), hash_key(key), tenant, project, role),
            )
        return IssuedKey(key=key, tenant=tenant, project=project, role=role)
