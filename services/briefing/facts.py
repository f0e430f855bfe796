"""RecordFacts: what the ranker and the warnings know of one retrieved record version.

Built once per retrieved row (`retrieval.fetch_candidates`), frozen, and holding only the match fields:
the text a hint shows (summary, evidence, checks) is read afterwards for the few versions that made the
answer. The ranker and the warnings are pure functions of these facts and the question.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from schemas.ledger import Trust


@dataclass(frozen=True, slots=True)
class RecordFacts:
    family_id: UUID
    version: int
    memory_type: str
    root_cause_category: str | None
    alert_name: str | None
    services: tuple[str, ...]  # in the record's order (checks rewrite service names in that order)
    signals: frozenset[str]
    entities: frozenset[str]
    misleading_signals: frozenset[str]
    lexemes: frozenset[str]
    doc_length: int
    confidence: float
    adopted: int = 0
    refuted: int = 0
    last_verified_at: datetime | None = None
    observed_at: datetime | None = None
    environment: str | None = None
    cluster: str | None = None
    version_range: str | None = None
    topology_fingerprint: str | None = None
    applicability_restricted: bool = False
    untrusted_evidence: bool = False  # part of the evidence is untrusted text (only quoted)
    imported: bool = False  # learned from an imported postmortem (v1.2)

    @property
    def key(self) -> tuple[str, int]:
        return str(self.family_id), self.version

    @property
    def ident(self) -> tuple[UUID, int]:
        """(family id, version) without formatting the uuid (3 us each: it showed in the briefing profile)."""
        return self.family_id, self.version

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RecordFacts:
        """From a retrieval row (or a test's dict: `trust_mix` stands in for `untrusted_evidence`)."""
        lexemes = frozenset(row.get("lexemes") or ())
        untrusted = row.get("untrusted_evidence")
        if untrusted is None:
            untrusted = bool((row.get("trust_mix") or {}).get(Trust.UNTRUSTED_TEXT))
        return cls(
            family_id=row["family_id"], version=int(row["version"]), memory_type=row["memory_type"],
            root_cause_category=row.get("root_cause_category"), alert_name=row.get("alert_name"),
            services=tuple(row.get("services") or ()), signals=frozenset(row.get("signals") or ()),
            entities=frozenset(row.get("entities") or ()),
            misleading_signals=frozenset(row.get("misleading_signals") or ()),
            lexemes=lexemes, doc_length=int(row.get("doc_length") or len(lexemes) or 1),
            confidence=float(row["confidence"]), adopted=int(row.get("adopted") or 0),
            refuted=int(row.get("refuted") or 0), last_verified_at=row.get("last_verified_at"),
            observed_at=row.get("observed_at"), environment=row.get("environment"), cluster=row.get("cluster"),
            version_range=row.get("version_range"), topology_fingerprint=row.get("topology_fingerprint"),
            applicability_restricted=bool(row.get("applicability_restricted")), untrusted_evidence=untrusted,
            imported=bool(row.get("imported")),
        )
