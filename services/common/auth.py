"""Who is calling: the Principal every service scopes its work by (tenant, project and role come from
the API key, never from a request body or a model). Shared by every layer, so it lives at the bottom."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from services.common.errors import Forbidden

Role = Literal["agent", "reviewer", "admin"]
ROLE_RANK: dict[str, int] = {"agent": 1, "reviewer": 2, "admin": 3}


@dataclass(frozen=True)
class Principal:
    """Who is calling: everything the API does is scoped by these fields, never by the request body."""

    key_id: uuid.UUID | None
    tenant: str | None  # None only for the bootstrap token
    project: str | None
    role: str
    bootstrap: bool = False
    service: str | None = None  # an internal worker acting for the tenant (e.g. "governance-worker")

    @property
    def actor(self) -> str:
        if self.service:
            return f"service:{self.service}"
        return "bootstrap" if self.bootstrap else f"key:{self.key_id}"

    def require(self, role: Role) -> None:
        if self.bootstrap:
            raise Forbidden("the bootstrap token can only create API keys")
        if ROLE_RANK[self.role] < ROLE_RANK[role]:
            raise Forbidden(f"this key has role {self.role!r}; {role!r} is required")

    @property
    def scoped_tenant(self) -> str:
        if self.tenant is None:
            raise Forbidden("this credential is not bound to a tenant")
        return self.tenant
