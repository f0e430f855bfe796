"""Synthetic, realistic workloads for the benchmarks (deterministic for a given seed).

Incidents are drawn from the corpus archetypes (Chinese, English and mixed) with Zipf-like recurrence
of root causes (a few causes recur often, most rarely), spread over many tenants and service variants.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from replay.corpus.build import incident, load
from replay.scenario import Scenario, ScenarioIncident, ledger_events
from schemas.ledger import LedgerRecord, SubmittedEvent, bind_event
from schemas.memory import EvidenceRef, VerifyCheck, VersionContent
from services.lexicon.analyzer import analyze
from services.lexicon.index import SearchDocument, search_text

ARCHETYPES = load()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def zipf_weights(n: int, s: float = 1.1) -> list[float]:
    return [1.0 / (k ** s) for k in range(1, n + 1)]


class Picker:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.order = list(range(len(ARCHETYPES)))
        self.rng.shuffle(self.order)
        self.weights = zipf_weights(len(ARCHETYPES))

    def archetype(self) -> dict[str, Any]:
        return ARCHETYPES[self.rng.choices(self.order, weights=self.weights)[0]]


def ledger(events: int, tenants: int, seed: int = 7) -> Iterator[LedgerRecord]:
    """About `events` ledger records: whole incidents (6 events each) over `tenants` tenants."""
    pick = Picker(seed)
    scenario = Scenario(name=f"bench-{seed}")
    made, n = 0, 0
    while made < events:
        a = pick.archetype()
        tenant = f"bench-t{n % tenants:03d}"
        inc = ScenarioIncident.model_validate(
            incident(a, f"INC-{n:07d}", n, service=f"{a['service']}-{n % 50}"))
        for raw in ledger_events(scenario, inc):
            raw["event_id"] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{seed}/{n}/{raw['event_id']}"))
            yield bind_event(SubmittedEvent.model_validate(raw), tenant, "bench").to_record(T0 + timedelta(seconds=n))
            made += 1
        n += 1


_TOKENS: dict[str, tuple[str, ...]] = {}


def record_content(i: int, pick: Picker) -> tuple[VersionContent, str]:
    """A record version drawn from an archetype, and the archetype's id."""
    a = pick.archetype()
    service = f"{a['service']}-{i % 200}"
    ev = a["evidence"]
    content = VersionContent(
        memory_type="episodic", summary=a["summary"], canonical_content=f"Root cause: {a['root_cause']}",
        root_cause=a["root_cause"], root_cause_category=a["category"], alert_name=a["alert"], services=[service],
        signals=a["signals"], entities=[service], source_incidents=[f"INC-{i:07d}"],
        evidence=[EvidenceRef(event_id=uuid.uuid5(uuid.NAMESPACE_OID, str(i)), incident_id=f"INC-{i:07d}",
                              source=ev["source"], summary=ev["summary"], trust="trusted_tool", query=ev.get("query"),
                              signals=a["signals"])],
        verify_with=[VerifyCheck(source=ev["source"], query=ev.get("query") or ev["source"],
                                 expect=f"supports if {', '.join(a['signals'])} shows again; refutes if absent")],
        trust_mix={"trusted_tool": 1}, confidence=0.55 + (i % 4) * 0.1, environment="prod",
        valid_from=T0, last_verified_at=T0 + timedelta(days=i % 300), observed_at=T0,
    )
    return content, str(a["id"])


def record_document(family_id: uuid.UUID, content: VersionContent, archetype_id: str) -> SearchDocument:
    """The version's search document, as `services.lexicon.index.document` builds it, with the analysis
    of the archetype's text cached (jieba on a million texts would dominate the load); the varying part,
    the service name, is analysed per record."""
    if archetype_id not in _TOKENS:
        _TOKENS[archetype_id] = tuple(analyze(search_text(content.model_copy(update={"services": [], "entities": []}))))
    lexemes = dict.fromkeys([*_TOKENS[archetype_id], *analyze(" ".join(content.services))])
    return SearchDocument(family_id, 1, tuple(lexemes))
