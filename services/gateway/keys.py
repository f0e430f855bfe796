"""API keys: creation (stored as SHA-256 hashes) and authentication into a Principal.

Keys are reachable only through SECURITY DEFINER functions; the application role cannot read the
`api_keys` table. The bootstrap token (`OPSLORE_ADMIN_TOKEN`) may create keys for any tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import uuid

from cachetools import TTLCache

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
    """`cache_seconds`: how long a key that authenticated is trusted without asking the database again
    (by the hash of the key; a key unknown to the database is never cached). A key revoked in the database
    stops working within that time; 0 asks on every request."""

    def __init__(self, db: Database, admin_token: str, cache_seconds: float = 0.0) -> None:
        self.db = db
        self.admin_token = admin_token
        self._known: TTLCache[str, Principal] | None = \
            TTLCache(maxsize=10_000, ttl=cache_seconds) if cache_seconds > 0 else None
        self._lock = threading.Lock()

    def authenticate(self, bearer: str | None) -> Principal:
        return self.known(bearer) or self._lookup(hash_key(_checked(bearer)))

    def known(self, bearer: str | None) -> Principal | None:
        """The caller without a database round trip: the bootstrap token, or a key that authenticated
        within `cache_seconds`; None when the database must be asked. A missing or malformed key raises
        `Unauthenticated`, as `authenticate` does."""
        token = _checked(bearer)
        if self.admin_token and hmac.compare_digest(token, self.admin_token):
            return Principal(key_id=None, tenant=None, project=None, role="admin", bootstrap=True)
        if self._known is None:
            return None
        with self._lock:
            return self._known.get(hash_key(token))

    def _lookup(self, key_hash: str) -> Principal:
        with self.db.transaction() as cur:
            cur.execute("SELECT * FROM opslore_authenticate(%s)", (key_hash,))
            row = cur.fetchone()
        if row is None:
            raise Unauthenticated("unknown or revoked API key")
        who = Principal(key_id=row["key_id"], tenant=row["tenant"], project=row["project"], role=row["role"])
        if self._known is not None:
            with self._lock:
                self._known[key_hash] = who
        return who

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


def _checked(bearer: str | None) -> str:
    if not bearer:
        raise Unauthenticated("missing Authorization: Bearer <api key>")
    if not bearer.isascii() or not bearer.isprintable() or len(bearer) > 512:
        raise Unauthenticated("malformed API key")  # keys are short printable ASCII; anything else is none
    return bearer
