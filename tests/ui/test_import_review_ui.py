"""Reviewing an import in the browser (headless Chromium, Debian package, via Playwright) against the running stack.

Postmortems imported through `POST /v1/postmortems` (four of the real corpus's Markdown documents, one per
template, one with terminal escapes in its text, and one whose root cause is an order, withheld); in the review UI:
the queue filtered to imported candidates, a candidate's parsed fields beside its escaped source document,
then the selection approved in one form post with one note. Each approval is its own record (imported) and
its own audit row; the withheld one is skipped with its reason and approved alone with the reviewer's own
words (summary and root cause) and the other edits the approve API takes. Clicks per candidate are counted
for the bulk path and the single path and written to test-artifacts/ui/import-review-clicks.json.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually
from tests.integration.test_cli import cli
from tests.integration.test_postmortem_cli import WITHHELD as WITHHELD_TEXT
from tests.ui.test_review_ui import ARTIFACTS, browser, log_in, shot

pytestmark = pytest.mark.integration
__all__ = ["browser"]  # the module-scoped Chromium fixture
ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "replay/realworld/markdown"
DOCUMENTS = [  # one per template: Google SRE, Atlassian, PagerDuty (front matter), 复盘
    "PM-2017-02-28-aws-s3-playbook-typo.md", "PM-2010-09-23-facebook-config-feedback.md",
    "PM-2016-01-21-gocardless-ams-chassis-reboot.md", "PM-2015-05-28-ctrip-prod-code-deleted.md",
]
WITHHELD = "withheld-root-cause.md"
ESCAPES = "\x1b[31mRED\x1b[0m and \u202eevil"


class Clicks:
    """Every click the reviewer makes, counted."""

    def __init__(self) -> None:
        self.n = 0

    def click(self, target: object) -> None:
        target.click()  # type: ignore[attr-defined]
        self.n += 1


def test_bulk_review_of_an_import_in_the_browser(browser: Browser, tenant_client: TenantFactory,
                                                 settings: Settings) -> None:
    client = tenant_client(role="reviewer")
    docs = [(name, (REAL / name).read_text(encoding="utf-8")) for name in DOCUMENTS]
    name, text = docs[1]
    docs[1] = (name, text.replace("## Responders", f"Seen in the log: {ESCAPES}\n\n## Responders", 1))
    docs.append((WITHHELD, WITHHELD_TEXT))
    answers = {name: client.import_postmortem("markdown", text, source_ref=f"wiki/{name}") for name, text in docs}
    assert all(a["status"] == "imported" for a in answers.values())
    client.append(resolved_incident("INC-LEDGER"))  # a candidate from an investigation: not in the filtered queue
    eventually(lambda: len(client.candidates(state="pending")) == len(docs) + 1 or None, timeout=60)
    withheld_incident = answers[WITHHELD]["incident_id"]

    page: Page = browser.new_page(viewport={"width": 1400, "height": 900})
    log_in(page, settings, client.key)
    bulk = Clicks()
    bulk.click(page.get_by_role("link", name="imported postmortems"))
    expect(page.get_by_text(f"{len(docs)} pending candidates from imported postmortems")).to_be_visible()
    table = page.get_by_role("table", name="pending candidates")
    expect(table.locator("tbody tr")).to_have_count(len(docs))
    expect(table).not_to_contain_text("INC-LEDGER")
    shot(page, "6-import-queue")

    # one candidate's page: the parsed fields beside the source document, escaped
    front_matter = answers[DOCUMENTS[1]]["incident_id"]
    page.get_by_role("link", name=front_matter).click()
    fields = page.get_by_role("table", name="parsed fields")
    expect(fields).to_contain_text("read as invalid by an automated system that repairs cached config")  # root cause
    expect(fields).to_contain_text("config-verification-system, persistent-config-db-cluster, memcache-tier")
    expect(fields).to_contain_text("Responders")  # the section no field took
    source = page.get_by_label("source document", exact=True)
    expect(source).to_contain_text("## Root Cause")
    expect(source).to_contain_text("\\x1b[31mRED\\x1b[0m and \\u202eevil")  # shown as escapes, never interpreted
    assert "\x1b" not in source.inner_text() and "\u202e" not in page.content()
    shot(page, "7-import-candidate")
    page.go_back()

    # the selection in one post, one note
    bulk.click(page.get_by_label("Select all", exact=True))
    page.get_by_label("Note for approval, reason for rejection").fill("imported from the wiki")
    bulk.click(page.get_by_role("button", name="Approve selected"))
    expect(page.get_by_role("status")).to_contain_text(f"Approved {len(docs) - 1} of {len(docs)}. Skipped 1")
    expect(page.get_by_role("status")).to_contain_text("write the summary yourself")
    shot(page, "8-import-bulk-approved")

    records = client.records()
    assert len(records) == len(docs) - 1 and all(r["imported"] for r in records)
    for r in records:  # each approval its own review and audit row, with the one note
        audit = client.record(str(r["family_id"]))["audit"]
        assert [(a["action"], a["reason"]) for a in audit] == [("approve", "imported from the wiki")]
    assert {c["incident_id"] for c in client.candidates(state="approved")} == {
        a["incident_id"] for n, a in answers.items() if n != WITHHELD}

    # the one left, alone: the reviewer's own words and the approve API's other edits
    single = Clicks()
    single.click(page.get_by_role("link", name=withheld_incident))
    expect(page.get_by_role("table", name="parsed fields")).to_contain_text("withheld")
    page.get_by_label("Summary (edit to approve with a change)").fill("Checkout outage; its fix was an order")
    page.get_by_label("Root cause", exact=True).fill("A retry storm from the checkout workers saturated the pool")
    page.get_by_label("Root-cause category (one word, e.g. bad_deploy)").fill("retry_storm")
    page.get_by_label("Services (comma-separated)").fill("checkout, pgbouncer")
    page.get_by_label("Owner (empty: project:default)").fill("team:database")
    page.get_by_label("Applies only to environment (optional)").fill("prod")
    single.click(page.get_by_role("button", name="Approve", exact=True))
    expect(page.get_by_role("status")).to_have_text("Approved as version 1.")
    alone = next(r for r in client.records() if withheld_incident in r["source_incidents"])
    current = client.record(str(alone["family_id"]))["current"]
    assert current["summary"] == "Checkout outage; its fix was an order" and current["imported"]
    assert current["owner"] == "team:database" and current["environment"] == "prod"
    assert current["root_cause"] == "A retry storm from the checkout workers saturated the pool"
    assert current["root_cause_category"] == "retry_storm" and current["services"] == ["checkout", "pgbouncer"]
    page.goto(f"{settings.api_url}/ui/?imported=true")
    expect(page.get_by_text("Nothing to review.")).to_be_visible()

    # CSRF as every form: the same session without the token is refused
    ledger = client.candidates(state="pending", incident_id="INC-LEDGER")[0]
    forged: dict[str, str | float | bool] = {"decision": "reject", "reason": "forged",
                                             "candidate": f"{ledger['candidate_id']}:"}
    refused = page.request.post(f"{settings.api_url}/ui/candidates/bulk", form=forged, max_redirects=0)
    assert refused.status == 403 and client.candidates(state="pending", incident_id="INC-LEDGER")
    page.close()

    clicks = {"candidates": len(docs), "bulk_clicks": bulk.n, "bulk_approved": len(docs) - 1,
              "bulk_clicks_per_candidate": round(bulk.n / (len(docs) - 1), 2),
              "single_clicks_per_candidate": single.n}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "import-review-clicks.json").write_text(json.dumps(clicks, indent=2), encoding="utf-8")
    assert bulk.n == 3 and single.n == 2  # filter, select all, approve selected; open, approve


def test_bulk_reject_needs_a_reason_and_writes_one_review_each(browser: Browser, tenant_client: TenantFactory,
                                                               settings: Settings) -> None:
    client = tenant_client(role="reviewer")
    for name in DOCUMENTS[:2]:
        client.import_postmortem("markdown", (REAL / name).read_text(encoding="utf-8"), source_ref=f"wiki/{name}")
    eventually(lambda: len(client.candidates(state="pending", imported="true")) == 2 or None, timeout=60)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    log_in(page, settings, client.key)
    page.goto(f"{settings.api_url}/ui/?imported=true")
    page.get_by_label("Select all", exact=True).click()
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_role("status")).to_have_text("A reason is required to reject.")
    assert len(client.candidates(state="pending")) == 2
    page.get_by_label("Select all", exact=True).click()
    page.get_by_label("Note for approval, reason for rejection").fill("duplicates of the wiki's copy")
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_role("status")).to_have_text("Rejected 2 of 2.")
    rejected = client.candidates(state="rejected")
    assert len(rejected) == 2 and all(c["review"]["note"] == "duplicates of the wiki's copy" for c in rejected)
    assert client.records() == []
    page.close()


def test_the_real_history_imported_in_one_command_is_approved_in_one_post(
        browser: Browser, tenant_client: TenantFactory, settings: Settings) -> None:
    """The recall corpus's history as a team's wiki (replay/realworld/markdown: four templates, 复盘 among
    them): one `opslore import postmortems` command, then the queue filtered to imported, select all, one
    note, Approve selected. Every document is a candidate and every candidate its own record and audit row."""
    client = tenant_client(role="reviewer")
    documents = sorted(REAL.glob("*.md"))
    done = cli(client.key, "import", "postmortems", str(REAL))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"imported\W+{len(documents)}\b", done.stdout), done.stdout
    eventually(lambda: len(client.candidates(state="pending", imported="true")) == len(documents) or None,
               timeout=180)
    page: Page = browser.new_page(viewport={"width": 1400, "height": 900})
    log_in(page, settings, client.key)
    page.goto(f"{settings.api_url}/ui/?imported=true")
    expect(page.get_by_role("table", name="pending candidates").locator("tbody tr")).to_have_count(len(documents))
    page.get_by_label("Select all", exact=True).click()
    page.get_by_label("Note for approval, reason for rejection").fill("imported from the wiki")
    page.set_default_timeout(300_000)  # one post approves them all, one transaction each
    started = time.perf_counter()
    page.get_by_role("button", name="Approve selected").click()
    expect(page.get_by_role("status")).to_contain_text(f"Approved {len(documents)} of {len(documents)}.")
    seconds = time.perf_counter() - started
    page.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "import-review-bulk-time.json").write_text(json.dumps(
        {"candidates": len(documents), "seconds": round(seconds, 2),
         "seconds_per_candidate": round(seconds / len(documents), 3)}, indent=2), encoding="utf-8")
    records = client.records()
    assert len(records) == len(documents) and all(r["imported"] for r in records)
    assert client.candidates(state="pending") == []
