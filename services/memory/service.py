"""MemoryService: lifecycle transitions of record families. Each public method owns one transaction.

A transition is a move of the family aggregate (`memory.family`: legal or `IllegalTransition`, 409), persisted by
`records.apply` with its version and/or pointer change and exactly one audit row (who, when, why, before, after)
in the same transaction. Nothing is deleted: retract/expire change lifecycle state, supersede/correct/rollback
append a version and move the current pointer with a compare-and-set.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

from schemas.memory import FamilyState, VersionContent
from schemas.views import FamilyChange, Lineage, RecordDetail, RecordPage
from services.common.auth import Principal
from services.common.db import Cursor, Database
from services.common.errors import Forbidden, InvalidInput, NotFound
from services.common.paging import PageRequest
from services.lexicon import index as lexical
from services.memory import family, records
from services.memory.content import cap_authority, superseding
from services.memory.family import FamilyHead, Move, Transition


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
    def get_record(self, principal: Principal, family_id: UUID) -> RecordDetail:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=False)
            versions = records.list_versions(cur, family_id)
            audit = records.list_audit(cur, family_id)
            usage = records.usage(cur, family_id)
        current = next(v for v in versions if v.version == fam.current_version)
        return RecordDetail(family_id=family_id, state=fam.state, current_version=fam.current_version,
                            current=current, versions=versions, usage=usage, audit=audit)

    def list_records(self, principal: Principal, incident_id: str | None, state: str | None,
                     paging: PageRequest | None = None) -> RecordPage:
        """One page of families' current versions (oldest family first) and the cursor of the next page."""
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            views, cursor = records.current_versions_page(cur, project=principal.project, incident_id=incident_id,
                                                          state=state, paging=paging or PageRequest())
        return RecordPage(records=views, next_cursor=cursor)

    def lineage(self, principal: Principal, family_id: UUID) -> Lineage:
        principal.require("agent")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            self._family(cur, principal, family_id, lock=False)
            versions = records.list_versions(cur, family_id)
            edges = records.edges_from(cur, [("version", f"{family_id}:{v.version}") for v in versions])
            edges += records.edges_from(cur, [("episode", e.dst_id) for e in edges if e.dst_kind == "episode"])
            edges += records.edges_into_family(cur, family_id)
        return Lineage(family_id=family_id, edges=edges)

    # ------------------------------------------------------------------ transitions
    def retract(self, principal: Principal, family_id: UUID, reason: str) -> FamilyChange:
        return self._set_terminal(principal, family_id, reason, FamilyState.RETRACTED)

    def expire(self, principal: Principal, family_id: UUID, reason: str) -> FamilyChange:
        return self._set_terminal(principal, family_id, reason, FamilyState.EXPIRED)

    def _set_terminal(self, principal: Principal, family_id: UUID, reason: str, state: FamilyState) -> FamilyChange:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=True)
            move = {FamilyState.RETRACTED: Move.RETRACT, FamilyState.EXPIRED: Move.EXPIRE}[state]
            self.apply(cur, principal, family.end(fam, move), reason)
        return FamilyChange(family_id=family_id, version=fam.current_version, state=state)

    def supersede(self, principal: Principal, family_id: UUID, changes: dict[str, Any], reason: str,
                  expected_version: int | None = None, action: str = "supersede") -> FamilyChange:
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=True)
            if fam.state != FamilyState.ACTIVE:  # the aggregate refuses it too; checked before the content's edit
                raise family.IllegalTransition(f"family is {fam.state}; roll back to a version to revive it")
            current = records.content_of(records.require_version(cur, family_id, fam.current_version))
            try:
                new = cap_authority(superseding(current, changes, datetime.now(UTC),
                                                records.category_spellings(cur)))
            except ValueError as exc:
                raise InvalidInput(f"invalid record change: {exc}", field="summary") from None
            self._check_level(principal, new)
            version = self.append_version(cur, principal, fam, new, expected_version, move=Move(action),
                                          reason=reason)
        return FamilyChange(family_id=family_id, version=version)

    def rollback(self, principal: Principal, family_id: UUID, to_version: int, reason: str) -> FamilyChange:
        """Append a new version whose content is byte for byte that of `to_version`."""
        principal.require("reviewer")
        with self.db.tenant_transaction(principal.scoped_tenant) as cur:
            fam = self._family(cur, principal, family_id, lock=True)
            target = records.get_version(cur, family_id, to_version)
            if target is None:
                raise NotFound(f"family has no version {to_version}", field="to_version")
            version = self.roll_back(cur, principal, fam, to_version, records.content_of(target), reason)
        return FamilyChange(family_id=family_id, version=version)

    # ------------------------------------------------------------------ shared by review and governance
    def apply(self, cur: Cursor, principal: Principal, change: Transition, reason: str | None) -> None:
        """Persist a move of the family aggregate and index the version it writes, if any."""
        records.apply(cur, tenant=principal.scoped_tenant, actor=principal.actor, reason=reason, change=change)
        if change.new_version is not None:
            self.index(cur, principal.scoped_tenant, change.family_id, change.new_version.version,
                       change.new_version.content)

    def append_version(self, cur: Cursor, principal: Principal, fam: FamilyHead, content: VersionContent,
                       expected_version: int | None, *, move: Move, reason: str | None,
                       candidate_id: UUID | None = None) -> int:
        """A new current version of the active family `fam` (locked by the caller); returns its number."""
        change = family.append(fam, move, content, next_version=records.max_version(cur, fam.family_id) + 1,
                               expected_version=expected_version, candidate_id=candidate_id)
        self.apply(cur, principal, change, reason)
        return change.audit.version

    def roll_back(self, cur: Cursor, principal: Principal, fam: FamilyHead, to_version: int,
                  content: VersionContent, reason: str | None) -> int:
        """A new current version of `fam` with `to_version`'s content (which the caller read); its number."""
        change = family.rollback(fam, to_version, content, next_version=records.max_version(cur, fam.family_id) + 1)
        self.apply(cur, principal, change, reason)
        return change.audit.version

    @staticmethod
    def _check_level(principal: Principal, content: VersionContent) -> None:
        if content.level == "permanent" and principal.role != "admin":
            raise Forbidden("only an admin may make memory permanent", field="level")

    @staticmethod
    def _family(cur: Cursor, principal: Principal, family_id: UUID, *, lock: bool) -> FamilyHead:
        fam = records.lock_family(cur, family_id) if lock else records.get_family(cur, family_id)
        if fam is None or (principal.project and fam.project != principal.project):
            raise NotFound("no such record family")
        return fam


def reindex_lexical(db: Database, tenant: str) -> dict[str, Any]:
    """Rebuild a tenant's lexical index from its versions with the current analyzer and alias dictionary
    (after either changed), in one transaction: briefings see the old index until it commits."""
    with db.tenant_transaction(tenant) as cur:
        lexical.clear(cur)
        docs = [lexical.document(v.family_id, v.version, records.content_of(v))
                for v in records.all_versions(cur)]
        lexical.write(cur, tenant, docs)
    return {"tenant": tenant, "analyzer": lexical.ANALYZER, "versions_indexed": len(docs)}
