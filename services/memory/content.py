"""Pure construction of record-version content from a candidate draft, edits or a supersede request."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from schemas.ledger import Trust
from schemas.memory import ApprovalEdits, CandidateDraft, VersionContent
from services.memory.categories import spelled

UNTRUSTED = Trust.UNTRUSTED_TEXT


def cap_authority(c: VersionContent) -> VersionContent:
    """Anything resting on untrusted text is at most a clue, whatever a reviewer or edit asked."""
    if c.trust_mix.get(UNTRUSTED) and c.authority != "background":
        return c.model_copy(update={"authority": "clue"})
    return c


def revise(draft: CandidateDraft, edits: ApprovalEdits | None,
           categories: Mapping[str, int] | None = None) -> CandidateDraft:
    """The draft with the reviewer's edits to what the incident was (root cause, category, services,
    resolution), its category in the tenant's spelling (`categories`: the tenant's categories and their
    incidents, `categories.spelled`). Matching against existing families and the record's canonical text both
    use the result."""
    update: dict[str, object] = {} if edits is None else {
        k: v for k, v in (("root_cause", edits.root_cause), ("root_cause_category", edits.root_cause_category),
                          ("services", edits.services), ("resolution", edits.resolution)) if v is not None}
    category = edits.root_cause_category if edits and edits.root_cause_category else draft.root_cause_category
    if categories and (tenant_spelling := spelled(category, categories)) != category:
        update["root_cause_category"] = tenant_spelling
    return draft.model_copy(update=update) if update else draft


def from_draft(draft: CandidateDraft, edits: ApprovalEdits | None, valid_from: datetime,
               categories: Mapping[str, int] | None = None) -> VersionContent:
    """A record version from a draft and the reviewer's edits (`revise` first, then the record-level edits)."""
    draft = revise(draft, edits, categories)
    canonical = "\n".join(filter(None, [
        f"Root cause: {draft.root_cause}" if draft.root_cause else "",
        f"Category: {draft.root_cause_category}" if draft.root_cause_category else "",
        f"Verified hypotheses: {'; '.join(draft.verified_hypotheses)}" if draft.verified_hypotheses else "",
        f"Resolution: {draft.resolution}" if draft.resolution else "",
        f"Actions that worked: {'; '.join(draft.procedure)}" if draft.procedure else "",
    ]))
    content = VersionContent(
        memory_type=draft.memory_type, authority=draft.authority, summary=draft.summary,
        canonical_content=canonical, root_cause=draft.root_cause or None, root_cause_category=draft.root_cause_category,
        alert_name=draft.alert_name, services=draft.services, signals=draft.signals, entities=draft.entities,
        misleading_signals=draft.misleading_signals, source_incidents=draft.source_incidents,
        evidence=draft.evidence, verify_with=draft.verify_with, trust_mix=draft.trust_mix,
        confidence=draft.confidence, environment=draft.environment, cluster=draft.cluster,
        version_range=draft.service_version, topology_fingerprint=draft.topology_fingerprint,
        observed_at=draft.observed_at, valid_from=valid_from, last_verified_at=draft.last_verified_at,
        imported=draft.imported,
    )
    return cap_authority(apply_edits(content, edits))


def apply_edits(c: VersionContent, edits: ApprovalEdits | None) -> VersionContent:
    if edits is None:
        return c
    update: dict[str, object] = {}
    if edits.summary is not None:
        update["summary"] = edits.summary
    if edits.valid_until is not None:
        update["valid_until"] = edits.valid_until
    if edits.level is not None:
        update["level"] = edits.level
    if edits.authority is not None:
        update["authority"] = edits.authority
    if edits.owner is not None:
        update["owner"] = edits.owner
    if edits.applicability is not None:
        update.update(edits.applicability.model_dump(exclude_none=True))
        update["applicability_restricted"] = True
    return c.model_copy(update=update)


def merge_into(current: VersionContent, new: VersionContent) -> VersionContent:
    """A candidate approved as the next version of a family keeps the family's earlier sources."""
    incidents = list(dict.fromkeys([*current.source_incidents, *new.source_incidents]))
    seen = {e.event_id for e in new.evidence}
    evidence = [*new.evidence, *[e for e in current.evidence if e.event_id not in seen]][:20]
    mix = dict(current.trust_mix)
    for k, v in new.trust_mix.items():
        mix[k] = mix.get(k, 0) + v
    merged = new.model_copy(update={"source_incidents": incidents, "evidence": evidence, "trust_mix": mix,
                                    "signals": list(dict.fromkeys([*new.signals, *current.signals]))})
    return cap_authority(merged)


def superseding(current: VersionContent, changes: dict[str, object], valid_from: datetime,
                categories: Mapping[str, int] | None = None) -> VersionContent:
    """The next version's content. A new summary that does not restate the root cause means the old
    conclusion no longer holds: its root cause, category and the canonical text built from them stay in
    history (the earlier version), never in the new version, so later briefings cannot show them. A new
    category takes the tenant's spelling (`categories`, as in `revise`).
    Raises ValueError (pydantic) when a change is not valid content."""
    update = dict(changes)
    category = update.get("root_cause_category")
    if categories and isinstance(category, str):
        update["root_cause_category"] = spelled(category, categories)
    if "summary" in update and "root_cause" not in update:
        update.setdefault("root_cause", None)
        update.setdefault("root_cause_category", None)
        update.setdefault("canonical_content", str(update["summary"]))
    return current.model_validate({**current.model_dump(), **update, "valid_from": valid_from})


def _union(*lists: list[str]) -> list[str]:
    return list(dict.fromkeys(x for items in lists for x in items))


def consolidate(keeper: VersionContent, others: list[VersionContent], valid_from: datetime,
                confidence: float | None = None) -> VersionContent:
    """One version that carries the lesson of several: the keeper's text (no new words are written), and the
    union of every source incident, signal, service, entity, misleading signal, check and piece of evidence.
    Confidence is the highest of them unless given; authority is re-capped on the merged trust."""
    group = [keeper, *others]
    seen: set[object] = set()
    evidence = []
    for e in (e for c in group for e in c.evidence):
        if e.event_id not in seen:
            seen.add(e.event_id)
            evidence.append(e)
    checks, queries = [], set()
    for check in (v for c in group for v in c.verify_with):
        if check.query not in queries:
            queries.add(check.query)
            checks.append(check)
    mix: dict[str, int] = {}
    for c in group:
        for k, v in c.trust_mix.items():
            mix[k] = mix.get(k, 0) + v
    verified = [c.last_verified_at for c in group if c.last_verified_at is not None]
    merged = keeper.model_copy(update={
        "source_incidents": _union(*(c.source_incidents for c in group)),
        "signals": _union(*(c.signals for c in group)), "services": _union(*(c.services for c in group)),
        "entities": _union(*(c.entities for c in group)),
        "misleading_signals": _union(*(c.misleading_signals for c in group)),
        "evidence": evidence[:20], "verify_with": checks[:10], "trust_mix": mix,
        "confidence": confidence if confidence is not None else max(c.confidence for c in group),
        "last_verified_at": max(verified) if verified else None, "valid_from": valid_from})
    return cap_authority(merged)
