"""The review UI under its Content-Security-Policy, in headless Chromium: select-all and the bulk post still work
(the script is a static file), no console reports a CSP violation, and a page that frames the UI shows nothing
of it (frame-ancestors 'none' and X-Frame-Options: DENY)."""

from __future__ import annotations

from functools import partial

import httpx
import pytest
from playwright.sync_api import Browser, Page

from services.api.middleware import UI_CSP
from services.common.settings import Settings
from tests.conftest import TenantFactory
from tests.factories import resolved_incident
from tests.integration.helpers import eventually
from tests.ui.test_review_ui import browser, log_in

pytestmark = pytest.mark.integration
__all__ = ["browser"]  # the module-scoped Chromium fixture


def test_the_headers_are_on_ui_and_api_answers(settings: Settings) -> None:
    for path in ("/ui/login", "/ui/"):
        h = httpx.get(f"{settings.api_url}{path}").headers
        assert h["content-security-policy"] == UI_CSP and h["x-frame-options"] == "DENY", path
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "no-referrer", path
    for path in ("/v1/whoami", "/ui/static/ui.css"):
        h = httpx.get(f"{settings.api_url}{path}").headers
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "no-referrer", path
    briefing = httpx.post(f"{settings.api_url}/v1/briefings", json={"text": "x"})  # the hot route, refused
    assert briefing.status_code == 401 and briefing.headers["x-content-type-options"] == "nosniff"


def test_select_all_and_the_bulk_post_work_under_the_policy(browser: Browser, tenant_client: TenantFactory,
                                                           settings: Settings) -> None:
    client = tenant_client()
    for inc in ("INC-CSP-1", "INC-CSP-2"):
        client.append(resolved_incident(inc, service=f"svc-{inc.lower()}", signal=f"sig_{inc[-1]}"))
        eventually(partial(client.candidates, incident_id=inc, state="pending"))
    page: Page = browser.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    log_in(page, settings, client.key)
    page.goto(f"{settings.api_url}/ui/")
    page.get_by_label("Select all", exact=True).check()
    boxes = page.locator("input.pick")
    assert boxes.count() >= 2 and all(boxes.nth(i).is_checked() for i in range(boxes.count()))
    page.get_by_role("button", name="Approve selected").click()
    page.wait_for_load_state()
    assert eventually(lambda: len(client.records(state="active")) >= 2)
    styled = page.evaluate("getComputedStyle(document.querySelector('header')).display")
    assert styled == "flex"  # the stylesheet loaded: it is a file, not inline
    assert violations == []


def test_a_page_that_frames_the_ui_gets_nothing(browser: Browser, settings: Settings) -> None:
    page = browser.new_page()
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text))
    page.set_content(f'<iframe id="f" src="{settings.api_url}/ui/login" width="600" height="400"></iframe>')
    page.wait_for_timeout(1500)
    frame = next((f for f in page.frames if f.url.startswith(settings.api_url)), None)
    shown = frame.evaluate("document.body ? document.body.innerText : ''") if frame else ""
    assert "API key" not in shown  # the login form never rendered inside the frame
    assert any("frame-ancestors" in m or "X-Frame-Options" in m or "refused" in m.lower() for m in blocked)


def test_the_record_page_shows_what_an_agent_is_told(browser: Browser, tenant_client: TenantFactory,
                                                     settings: Settings) -> None:
    client = tenant_client()
    client.append(resolved_incident("INC-TOLD", signal="db_pool_saturation"))
    cand = eventually(lambda: client.candidates(incident_id="INC-TOLD", state="pending"))[0]
    family = client.approve(str(cand["candidate_id"]))["family_id"]
    answer = client.briefing({"alert": {"name": "HighErrorRate"}, "services": ["checkout-api"],
                              "signals": ["db_pool_saturation"], "text": "db_pool_saturation observed"})
    assert answer["hints"] and answer["hints"][0]["family_id"] == family
    client.feedback(answer["briefing_id"], family, "adopted", "INC-NOW")
    page: Page = browser.new_page()
    log_in(page, settings, client.key)
    page.goto(f"{settings.api_url}/ui/records/{family}")
    told = page.get_by_label("what an agent is told")
    assert "connection pool exhausted by slow queries" in page.locator("#root-cause").inner_text()
    assert "db_connection_pool" in told.inner_text() and "checkout-api" in told.inner_text()
    assert "db_pool_saturation observed" in page.get_by_label("evidence").inner_text()
    assert "trusted_tool" in page.get_by_label("evidence").inner_text()
    assert "pool{service=" in page.get_by_label("checks").inner_text()
    assert "history_is_hypothesis" in page.get_by_label("warnings").inner_text()
    cited = page.get_by_label("citing briefings").inner_text()
    assert "db_pool_saturation observed" in cited

    def feedback_shown() -> bool:  # the feedback reaches the page once the projector has it
        page.reload()
        return "adopted" in page.get_by_label("citing briefings").inner_text()

    assert eventually(feedback_shown)
