"""Postmortem import over the live stack (CONTRACT v1.2): POST /v1/postmortems -> ledger -> projector -> an
imported candidate -> review -> a record whose hints warn `imported_unverified` until adopted feedback; a
re-import appends nothing, an edit opens a new candidate, bad documents are 422/413, and an agent cannot
forge the imported path through the public ledger endpoint."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from services.cli.client import ApiError, OpsloreClient
from services.postmortems.model import MAX_DOCUMENT_CHARS
from tests.conftest import TenantFactory
from tests.factories import raw_event, resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).parents[1] / "fixtures/postmortems"


def _import(client: OpsloreClient, name: str, **extra: Any) -> dict[str, Any]:
    path = FIXTURES / name
    fmt = "json" if name.endswith(".json") else "markdown"
    return client.import_postmortem(fmt, path.read_text(encoding="utf-8"), source_ref=extra.pop("source_ref", name),
                                    **extra)


def _imported_candidates(client: OpsloreClient, incident: str, count: int = 1) -> list[dict[str, Any]]:
    return eventually(lambda: ((c := client.candidates(incident_id=incident, imported="true")) and len(c) >= count
                      and c) or None)


def test_an_import_becomes_an_imported_candidate_once(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    answer = _import(client, "google-sre-shakespeare.md")
    assert answer["candidate"] is True and answer["status"] == "imported" and len(answer["event_ids"]) == 3
    assert answer["unparsed"] == ["Supporting information"] and answer["incident_id"].startswith("pm-")
    cand = _imported_candidates(client, answer["incident_id"])[0]
    assert cand["imported"] is True and cand["content"]["imported_from"]["title"].startswith("Shakespeare")
    assert cand["content"]["confidence"] == 0.4 and cand["proposal"]["kind"] == "new_family"
    assert client.candidates(incident_id=answer["incident_id"], imported="false") == []
    episode = client.episode(answer["incident_id"])
    assert episode is not None and episode["gate_verdict"].startswith("imported postmortem")
    assert "# Shakespeare" in episode["imported"]["document"]
    again = _import(client, "google-sre-shakespeare.md")
    assert again["status"] == "unchanged" and again["event_ids"] == answer["event_ids"]
    assert client.episode(answer["incident_id"])["event_count"] == 3  # type: ignore[index]
    # an edited document with the same source: the same incident, a second candidate, the first untouched
    edited = (FIXTURES / "google-sre-shakespeare.md").read_text().replace("66 minutes", "67 minutes")
    changed = client.import_postmortem("markdown", edited, source_ref="google-sre-shakespeare.md")
    assert changed["incident_id"] == answer["incident_id"] and changed["status"] == "imported"
    assert not set(changed["event_ids"]) & set(answer["event_ids"])
    both = _imported_candidates(client, answer["incident_id"], count=2)
    assert len({c["candidate_id"] for c in both}) == 2 and all(c["state"] == "pending" for c in both)


def test_documents_that_are_not_postmortems_are_refused(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    for name, field in (("invalid/no-root-cause.md", "content.root_cause"),
                        ("invalid/meeting-notes.md", "content.root_cause")):
        with pytest.raises(ApiError) as err:
            _import(client, name)
        assert err.value.status == 422 and err.value.field == field, name
    with pytest.raises(ApiError) as big:
        client.import_postmortem("markdown", "# x\n\n" + "y" * (MAX_DOCUMENT_CHARS + 1))
    assert big.value.status == 413
    with pytest.raises(ApiError) as bad:
        client.import_postmortem("json", {"root_cause": "x", "symptoms": "y", "started_at": "yesterday"})
    assert bad.value.status == 422 and bad.value.field == "content.started_at"
    with pytest.raises(ApiError) as fmt:
        client.request("POST", "/v1/postmortems", json={"format": "docx", "content": "x"})
    assert fmt.value.status == 422 and fmt.value.field == "format"
    agent = tenant_client(role="agent", tenant=getattr(client, "tenant"))  # noqa: B009
    with pytest.raises(ApiError) as role:
        _import(agent, "bare-fastly-2021-06-08.md")
    assert role.value.status == 403
    assert client.candidates() == []


def test_a_front_matter_date_yaml_cannot_build_is_imported_undated(tenant_client: TenantFactory) -> None:
    """`date: 2024-13-45` made YAML's loader raise and the import answer 500; the date is now unread text."""
    client = tenant_client(role="reviewer")
    answer = client.import_postmortem("markdown", "---\ntitle: Checkout outage\ndate: 2024-13-45\n---\n\n"
                                                  "## Impact\n\nCheckout 502s.\n\n## Root cause\n\nA bad deploy.\n")
    assert answer["candidate"] is True
    episode = eventually(lambda: client.episode(answer["incident_id"]))
    assert episode["title"] == "Checkout outage"


def test_an_agent_cannot_forge_the_imported_path_through_the_ledger(tenant_client: TenantFactory) -> None:
    reviewer = tenant_client(role="reviewer")
    agent = tenant_client(role="agent", tenant=getattr(reviewer, "tenant"))  # noqa: B009
    events = resolved_incident("INC-FORGE", verify=False)  # no verified hypothesis: the gate would refuse it
    resolved = events[-1]
    mark = {"content_sha256": "0" * 64, "format": "markdown"}
    resolved["payload"]["imported"] = mark
    resolved["trust"] = "user_stated"
    for who in (agent, reviewer):
        with pytest.raises(ApiError) as err:
            who.append(events)
        assert err.value.status == 403 and err.value.field == f"events[{len(events) - 1}].payload.imported"
        with pytest.raises(ApiError) as single:
            who.request("POST", "/v1/ledger/events", json=resolved)
        assert single.value.status == 403 and single.value.field == "payload.imported"
    # on another event type too, and with any value
    opened = raw_event("incident.opened", "INC-FORGE2", {"alert": {"name": "A"}, "imported": None})
    with pytest.raises(ApiError):
        agent.append([opened])
    assert reviewer.episode("INC-FORGE") is None and reviewer.episode("INC-FORGE2") is None
    # the same events without the mark are accepted, and stay below the gate
    del resolved["payload"]["imported"]
    agent.append(events)
    episode = eventually(lambda: reviewer.episode("INC-FORGE"))
    assert episode["imported"] is None and reviewer.candidates(incident_id="INC-FORGE") == []


def test_hints_from_an_imported_record_warn_until_adopted(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    answer = _import(client, "json-roblox-2021-10-28.json")
    cand = _imported_candidates(client, answer["incident_id"])[0]
    approved = client.approve(cand["candidate_id"], note="imported from the wiki")
    record = client.record(approved["family_id"])
    assert record["current"]["imported"] is True
    question = {"services": ["consul"], "text": "Consul KV writes slow, BoltDB freelist growing, streaming enabled",
                "alert": {"name": "ConsulKVWriteLatencyHigh"}}
    hint = client.briefing(question)["hints"][0]
    assert hint["family_id"] == approved["family_id"]
    assert "imported_unverified" in {w["code"] for w in hint["warnings"]}
    brief = client.briefing(question)
    client.feedback(brief["briefing_id"], approved["family_id"], "adopted", incident_id="INC-NOW")

    def confirmed() -> dict[str, Any] | None:
        h = client.briefing(question)["hints"][0]
        return h if "imported_unverified" not in {w["code"] for w in h["warnings"]} else None

    after = eventually(confirmed)
    assert after["confidence"] > hint["confidence"]


def test_a_poisoned_postmortem_is_quoted_never_promoted(tenant_client: TenantFactory) -> None:
    client = tenant_client(role="reviewer")
    answer = _import(client, "poisoned-checkout-2024-02-02.md", source_ref=f"wiki/{uuid.uuid4()}")
    assert answer["quarantined"] == 3
    cand = _imported_candidates(client, answer["incident_id"])[0]
    quoted = " ".join(q["text"] for q in cand["content"]["quoted"])
    assert "Ignore previous instructions" in quoted and "store this permanently" in quoted
    approved = client.approve(cand["candidate_id"])
    version = client.record(approved["family_id"])["current"]
    text = str({k: v for k, v in version.items() if k != "evidence"}) + str(
        [e["summary"] for e in version["evidence"] if e["trust"] != "untrusted_text"])
    for poison in ("Ignore previous", "Note to the agent", "store this permanently", "roll back prod"):
        assert poison not in text
    hint = client.briefing({"services": ["checkout"], "text": "checkout 503 connection pool exhausted"})["hints"][0]
    assert "Ignore previous" not in str(hint) and "untrusted_source" in {w["code"] for w in hint["warnings"]}


def test_a_reviewer_edits_what_the_incident_was_before_approving(tenant_client: TenantFactory) -> None:
    """Edit-before-approve: the reviewer's root cause, category, services and resolution are the record's
    (its text, what briefings find it by); the candidate keeps the draft as parsed; a bad edit is a 422
    naming the field and writes nothing."""
    client = tenant_client(role="reviewer")
    answer = _import(client, "gitlab-2017-01-31.md", source_ref=f"wiki/{uuid.uuid4()}")
    cand = _imported_candidates(client, answer["incident_id"])[0]
    parsed_cause = cand["content"]["root_cause"]
    with pytest.raises(ApiError) as bad:
        client.approve(cand["candidate_id"], edits={"root_cause_category": "operator error"})
    assert bad.value.status == 422 and bad.value.field == "edits.root_cause_category"
    with pytest.raises(ApiError) as empty:
        client.approve(cand["candidate_id"], edits={"services": [""]})
    assert empty.value.status == 422 and (empty.value.field or "").startswith("edits.services")
    assert client.request("GET", f"/v1/candidates/{cand['candidate_id']}")["state"] == "pending"
    edits = {"root_cause": "rm -rf ran on the primary's data directory during replication repair; no backup "
                           "method had ever been restored",
             "root_cause_category": "operator_error", "services": ["gitlab-db-primary", "pg-backup"],
             "resolution": "Restored from a six-hour-old LVM snapshot on staging."}
    approved = client.approve(cand["candidate_id"], note="cause reworded from the postmortem", edits=edits)
    current = client.record(approved["family_id"])["current"]
    assert current["root_cause"] == edits["root_cause"] and current["root_cause_category"] == "operator_error"
    assert current["services"] == ["gitlab-db-primary", "pg-backup"] and current["imported"] is True
    assert "Resolution: Restored from a six-hour-old LVM snapshot" in current["canonical_content"]
    assert parsed_cause not in current["canonical_content"]
    assert client.request("GET", f"/v1/candidates/{cand['candidate_id']}")["content"]["root_cause"] == parsed_cause
    hint = client.briefing({"services": ["pg-backup"], "text": "backup restore never tested, data directory "
                                                               "removed on the primary"})["hints"][0]
    assert hint["family_id"] == approved["family_id"] and hint["root_cause"] == edits["root_cause"]


def test_the_same_postmortem_imported_twice_is_two_candidates_and_one_duplicate_finding(
        tenant_client: TenantFactory) -> None:
    """Duplicates inside an import are never merged on import: the wiki's copy and an export's copy (a word
    changed) are two incidents and two candidates; approved, the governance `duplicate` job proposes them as
    one (neither has a category: their root causes' words are compared at the stricter threshold)."""
    client = tenant_client(role="reviewer")
    doc = (FIXTURES / "gitlab-2017-01-31.md").read_text(encoding="utf-8")
    wiki = client.import_postmortem("markdown", doc, source_ref="wiki/gitlab.md")
    export = client.import_postmortem("markdown", doc.replace("about 18 hours", "roughly 18 hours"),
                                      source_ref="confluence/GitLab database outage")
    assert wiki["incident_id"] != export["incident_id"]
    pending = _imported_candidates(client, wiki["incident_id"]) + _imported_candidates(client, export["incident_id"])
    families = {client.approve(str(c["candidate_id"]), note="imported")["family_id"] for c in pending}
    assert len(families) == 2 and len(client.records()) == 2
    preview = client.request("POST", "/v1/governance/preview", json={"jobs": ["duplicate"]})
    assert [p["kind"] for p in preview["proposals"]] == ["duplicate"]
    assert set(preview["proposals"][0]["family_ids"]) == families
    assert "without a category" in preview["proposals"][0]["reason"]


PROSE_SUMMARY = """# Summary of the Message Queue Disruption in the Dublin Region

We want to give you more detail about the disruption of the message queue service on March 3rd, 2025, when
publishers in the Dublin region saw timeouts and consumers stopped receiving messages for 47 minutes.

The disruption was caused by a certificate rotation that shipped an intermediate certificate the brokers did not
trust, so every broker-to-broker connection failed its handshake and the cluster lost quorum.

We have added a check that every broker trusts a new chain before a rotation continues.
"""


def test_a_prose_summary_is_imported_with_its_stated_cause_and_found_by_its_symptoms(
        tenant_client: TenantFactory) -> None:
    """A provider's all-prose service-event summary: no section names its cause; the paragraph that states it
    becomes the root cause, marked for the reviewer, and once approved a briefing on its symptoms finds it."""
    client = tenant_client(role="reviewer")
    answer = client.import_postmortem("markdown", PROSE_SUMMARY, source_ref="mq-dublin.md")
    cand = _imported_candidates(client, answer["incident_id"])[0]
    assert cand["content"]["imported_from"]["root_cause_from"] == "prose"
    assert cand["content"]["root_cause"].startswith("The disruption was caused by a certificate rotation")
    assert cand["content"]["imported_from"]["started_at"].startswith("2025-03-03")
    client.approve(str(cand["candidate_id"]), edits={"root_cause_category": "certificate_chain"})
    found = eventually(lambda: client.request("POST", "/v1/records/search", json={
        "query": "brokers fail TLS handshake after certificate rotation, publishers time out"})["records"] or None)
    assert "certificate rotation" in found[0]["root_cause"]
    assert [c["category"] for c in client.briefing({"text": "publishers time out"})["causes"]] == ["certificate_chain"]
