"""The review UI in headless Chromium (Debian package) driven by Playwright, against the running stack.

Log in with a reviewer key, open a candidate (evidence with trust badges, warnings), approve it with an
edited summary, add a version, roll back, and see each step in the record's history. Screenshots of
the main pages go to test-artifacts/ui/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from services.cli.client import OpsloreClient
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import raw_event, resolved_incident
from tests.integration.helpers import eventually

pytestmark = pytest.mark.integration
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def log_in(page: Page, settings: Settings, key: str) -> None:
    page.goto(f"{settings.api_url}/ui/login")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Log in").click()


def test_approve_with_edit_then_roll_back(browser: Browser, tenant_client: TenantFactory, settings: Settings) -> None:
    client = tenant_client()
    events = resolved_incident("INC-UI")
    ticket = raw_event("observation.recorded", "INC-UI", {"source": "ticket", "summary": "Customer: checkout is slow"},
                       trust="untrusted_text", minute=2)
    events.insert(2, ticket)
    events[-1]["payload"]["evidence_refs"].append(ticket["event_id"])
    client.append(events)
    eventually(lambda: client.candidates(incident_id="INC-UI"))

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    log_in(page, settings, client.key)
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    shot(page, "1-queue")

    page.get_by_role("link", name="INC-UI").click()
    expect(page.get_by_role("heading", name="Candidate from INC-UI")).to_be_visible()
    expect(page.locator(".badge.trusted_tool").first).to_be_visible()
    expect(page.locator(".badge.untrusted_text").first).to_be_visible()
    expect(page.get_by_role("note").first).to_contain_text("untrusted text")
    shot(page, "2-candidate")

    page.get_by_label("Summary (edit to approve with a change)").fill("Pool exhausted by slow queries (edited)")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_have_text("Approved as version 1.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Pool exhausted by slow queries (edited)")
    shot(page, "3-record-approved")

    page.get_by_label("Summary", exact=True).fill("Second wording of the lesson")
    page.locator("#sup-reason").fill("clearer wording")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_role("status")).to_have_text("New version 2.")

    page.locator("#rb-1").fill("the first wording was right")
    page.get_by_role("button", name="Roll back to version 1").click()
    expect(page.get_by_role("status")).to_contain_text("version 3 restores version 1")
    rows = page.get_by_role("table", name="versions").locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Pool exhausted by slow queries (edited)")
    expect(rows.first).to_contain_text("active")
    shot(page, "4-record-history")

    family = client.records(incident_id="INC-UI")[0]["family_id"]
    record = client.record(str(family))
    assert [a["action"] for a in record["audit"]] == ["approve", "supersede", "rollback"]
    assert record["current"]["summary"] == "Pool exhausted by slow queries (edited)"
    assert record["current"]["authority"] == "clue"  # untrusted evidence caps it

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.close()


def test_login_requires_a_reviewer_and_forms_require_csrf(
    browser: Browser, tenant_client: TenantFactory, settings: Settings,
) -> None:
    agent = tenant_client(role="agent")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    log_in(page, settings, agent.key)
    expect(page.get_by_role("alert")).to_contain_text("'reviewer' is required")
    log_in(page, settings, "not-a-key")
    expect(page.get_by_role("alert")).to_contain_text("unknown or revoked")
    page.goto(f"{settings.api_url}/ui/records")
    expect(page).to_have_url(f"{settings.api_url}/ui/login")
    page.close()

    forged = OpsloreClient(settings.api_url, "")
    response = forged.http.post("/ui/login", data={"api_key": agent.key})
    assert response.status_code == 403  # no CSRF token


def test_governance_tab_previews_shows_the_consolidation_and_executes(browser: Browser, tenant_client: TenantFactory,
                                                                      settings: Settings) -> None:
    client = tenant_client()
    for incident, service in (("INC-G1", "checkout-api"), ("INC-G2", "payments")):
        client.append(resolved_incident(incident, service=service))
        cand = eventually(lambda i=incident: client.candidates(incident_id=i, state="pending"))[0]  # type: ignore[misc]
        client.approve(str(cand["candidate_id"]), resolution="new_family")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    log_in(page, settings, client.key)
    page.get_by_role("link", name="Governance").click()
    page.get_by_role("button", name="Preview now").click()
    expect(page.get_by_role("status")).to_contain_text("nothing changed")
    page.get_by_role("link", name="duplicate").click()
    expect(page.get_by_role("heading", name="Consolidated version it would write")).to_be_visible()
    expect(page.locator(".diff-new")).to_contain_text("INC-G1, INC-G2")
    shot(page, "5-governance-proposal")
    page.get_by_role("button", name="Execute").click()
    expect(page.get_by_role("status")).to_contain_text("Executed: active v2, consolidated v1")
    records = client.records(state="active")
    assert len(records) == 1 and set(records[0]["source_incidents"]) == {"INC-G1", "INC-G2"}
