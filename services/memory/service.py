"""MemoryService: lifecycle transitions of record families. Each public method owns one transaction.

Every transition writes its version and/or pointer change and exactly one audit row (who, when, why,
before, after) in the same transaction. Nothing is deleted: retract/expire change lifecycle state,
supersede/correct/rollback append a version and move the current pointer with a compare-and-set.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

from schemas.memory import TERMINAL_FAMILY_STATES, FamilyState, VersionContent, VersionState
from services.common.auth import Principal
from services.common.db import Cursor, Database, Row
from services.common.errors import Conflict, Forbidden, InvalidInput, NotFound
from services.common.paging import PageRequest, page
from services.lexicon import index as lexical
from services.memory import records as R
from services.memory.content import cap_authority, superseding


def version_view(row: Row) -> dict[str, Any]:
    hidden = {"tenant", "search_tokens", "family_created_at"}
    return {k: v for k, v in row.items() if k not in hidden}


class VersionIndexer(Protocol):
    """A derived index kept in the version's transaction (the embedding branch's `SemanticIndex` is one);
    memory writes through it without knowing the briefing package."""

    def index_version(self, cur: Cursor, tenant: str, family_id: UUID, version: int,
                      content: VersionContent) -> None: ...


class MemoryService:
    def __init__(self, db: Database, semantic: VersionIndexer | None = None) -> None:
        self.db = db
        self.semantic = semantic

    def index(self, cur: Cursor, tenant: str, family_id: UUID, version: int, content: VersionContent) -> None:
        """Derived indexes of a new version, in the writer's transaction: the lexical document always,
        the embedding when enabled."""
        lexical.write(cur, tenant, [lexical.document(family_id, version, content)])
        if self.semantic is not None:
            self.semantic.index_version(cur, tenant, family_id, version, content)

    # ------------------------------------------------------------------ reads
    def get_record(self, principal: Principal, family_id: UUID) -> dict[str, Any]:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=False)
            versions = [version_view(v) for v in R.list_versions(cur, family_id)]
            audit = R.list_audit(cur, family_id)
            usage = R.usage(cur, family_id)
        current = next(v for v in versions if v["version"] == fam["current_version"])
        return {"family_id": family_id, "state": fam["state"], "current_version": fam["current_version"],
                "current": current, "versions": versions, "usage": usage,
                "audit": [{k: v for k, v in a.items() if k != "tenant"} for a in audit]}

    def list_records(self, principal: Principal, incident_id: str | None, state: str | None,
                     paging: PageRequest | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of families' current versions (oldest family first) and the cursor of the next page."""
        principal.require("agent")
        paging = paging or PageRequest()
        sql = ["""SELECT v.*, f.state AS family_state, f.created_at AS family_created_at FROM memory_families f
                  JOIN memory_versions v ON v.family_id = f.family_id AND v.version = f.current_version
                  WHERE true"""]
        params: list[Any] = []
        if principal.project:
            sql.append("AND f.project = %s")
            params.append(principal.project)
        if incident_id:
            sql.append("AND %s = ANY(v.source_incidents)")
            params.append(incident_id)
        if state:
            sql.append("AND v.state = %s")
            params.append(state)
        after, after_params = paging.sql("f.created_at", "f.family_id")
        sql.append(f"{after} ORDER BY f.created_at, f.family_id LIMIT %s")
        params += [*after_params, paging.limit + 1]
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            cur.execute(" ".join(sql), params)
            rows, cursor = page(cur.fetchall(), paging, "family_created_at", "family_id")
        return [version_view(r) for r in rows], cursor

    def lineage(self, principal: Principal, family_id: UUID) -> dict[str, Any]:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            self._family(cur, principal, family_id, lock=False)
            versions = R.list_versions(cur, family_id)
            nodes = [("version", f"{family_id}:{v['version']}") for v in versions]
            edges = R.edges_from(cur, nodes)
            episodes = [("episode", e["dst_id"]) for e in edges if e["dst_kind"] == "episode"]
            edges += R.edges_from(cur, episodes)
            cur.execute("""SELECT src_kind, src_id, relation, dst_kind, dst_id FROM lineage_edges
                           WHERE dst_kind = 'version' AND dst_id LIKE %s ORDER BY src_id""", (f"{family_id}:%",))
            edges += cur.fetchall()
        return {"family_id": family_id, "edges": edges}

    # ------------------------------------------------------------------ transitions
    def retract(self, principal: Principal, family_id: UUID, reason: str) -> dict[str, Any]:
        return self._set_terminal(principal, family_id, reason, FamilyState.RETRACTED)

    def expire(self, principal: Principal, family_id: UUID, reason: str) -> dict[str, Any]:
        return self._set_terminal(principal, family_id, reason, FamilyState.EXPIRED)

    def _set_terminal(self, principal: Principal, family_id: UUID, reason: str, state: FamilyState) -> dict[str, Any]:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=True)
            if fam["state"] in TERMINAL_FAMILY_STATES:
                raise Conflict(f"family is already {fam['state']}")
            version = int(fam["current_version"])
            R.set_version_state(cur, family_id, version, VersionState(state.value))
            R.set_family_state(cur, family_id, state)
            R.audit(cur, tenant=principal.scoped_tenant, family_id=family_id, version=version,
                    action={FamilyState.RETRACTED: "retract", FamilyState.EXPIRED: "expire"}[state],
                    actor=principal.actor, reason=reason, before={"state": fam["state"], "version": version},
                    after={"state": state, "version": version})
        return {"family_id": family_id, "version": version, "state": state}

    def supersede(self, principal: Principal, family_id: UUID, changes: dict[str, Any], reason: str,
                  expected_version: int | None = None, action: str = "supersede") -> dict[str, Any]:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=True)
            if fam["state"] != FamilyState.ACTIVE:
                raise Conflict(f"family is {fam['state']}; roll back to a version to revive it")
            current = R.content_of(R.get_version(cur, family_id, fam["current_version"]) or {})
            try:
                new = cap_authority(superseding(current, changes, datetime.now(UTC)))
            except ValueError as exc:
                raise InvalidInput(f"invalid record change: {exc}", field="summary") from None
            self._check_level(principal, new)
            version = self.append_version(cur, principal, fam, new, expected_version, action=action, reason=reason)
        return {"family_id": family_id, "version": version}

    def rollback(self, principal: Principal, family_id: UUID, to_version: int, reason: str) -> dict[str, Any]:
        """Append a new version whose content is byte for byte that of `to_version`."""
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=True)
            target = R.get_version(cur, family_id, to_version)
            if target is None:
                raise NotFound(f"family has no version {to_version}", field="to_version")
            if to_version == fam["current_version"] and fam["state"] == FamilyState.ACTIVE:
                raise Conflict(f"version {to_version} is already current")
            version = self.append_version(cur, principal, fam, R.content_of(target), None,
                                          action="rollback", reason=reason, rolled_back_to=to_version)
        return {"family_id": family_id, "version": version}

    # ------------------------------------------------------------------ shared by review
    def append_version(self, cur: Cursor, principal: Principal, fam: Row, content: VersionContent,
                       expected_version: int | None, *, action: str, reason: str | None,
                       candidate_id: UUID | None = None, rolled_back_to: int | None = None) -> int:
        family_id: UUID = fam["family_id"]
        current = int(fam["current_version"])
        if expected_version is not None and expected_version != current:
            raise Conflict(f"drafted against version {expected_version}, but the current version is {current}")
        new = R.max_version(cur, family_id) + 1
        R.insert_version(cur, tenant=principal.scoped_tenant, project=fam["project"], family_id=family_id,
                         version=new, content=content, created_by=principal.actor, candidate_id=candidate_id,
                         supersedes=current)
        self.index(cur, principal.scoped_tenant, family_id, new, content)
        R.set_version_state(cur, family_id, current, VersionState.SUPERSEDED)
        if not R.move_pointer(cur, family_id, expected=current, new=new):
            raise Conflict("the family's current version moved; re-read and retry")
        R.audit(cur, tenant=principal.scoped_tenant, family_id=family_id, version=new, action=action,
                actor=principal.actor, reason=reason,
                before={"version": current, "state": fam["state"]},
                after={"version": new, "state": VersionState.ACTIVE.value, "content_hash": R.content_hash(content),
                       **({"rolled_back_to": rolled_back_to} if rolled_back_to else {})})
        R.add_edge(cur, principal.scoped_tenant, ("version", f"{family_id}:{new}"), "supersedes",
                   ("version", f"{family_id}:{current}"))
        return new

    @staticmethod
    def _check_level(principal: Principal, content: VersionContent) -> None:
        if content.level == "permanent" and principal.role != "admin":
            raise Forbidden("only an admin may make memory permanent", field="level")

    @staticmethod
    def _family(cur: Cursor, principal: Principal, family_id: UUID, *, lock: bool) -> Row:
        fam = R.lock_family(cur, family_id) if lock else _read_family(cur, family_id)
        if fam is None or (principal.project and fam["project"] != principal.project):
            raise NotFound("no such record family")
        return fam


def _read_family(cur: Cursor, family_id: UUID) -> Row | None:
    cur.execute("SELECT * FROM memory_families WHERE family_id = %s", (family_id,))
    return cur.fetchone()


def reindex_lexical(db: Database, tenant: str) -> dict[str, Any]:
    """Rebuild a tenant's lexical index from its versions with the current analyzer and alias dictionary
    (after either changed), in one transaction: briefings see the old index until it commits."""
    with db.tenant_transaction(tenant) as cur:
        lexical.clear(cur)
        docs = [lexical.document(r["family_id"], r["version"], R.content_of(r)) for r in R.all_versions(cur)]
        lexical.write(cur, tenant, docs)
    return {"tenant": tenant, "analyzer": lexical.ANALYZER, "versions_indexed": len(docs)}
