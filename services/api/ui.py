"""Review web UI under /ui: server-rendered pages over the same services (and audit) as the API.

Login takes a reviewer API key and keeps it in the signed, HttpOnly, SameSite=Strict session cookie;
each session has a CSRF token that every form posts back. Handlers are thin: parse the form, call one
service method, redirect (POST/redirect/GET) or render.

Review at the scale of an import (CONTRACT v1.2): the queue filters imported candidates (`?imported=true`)
and decides a selection in one form post (`POST /ui/candidates/bulk`: checkboxes and one note or reason),
calling `ReviewService.approve` / `reject` once per candidate, so each is its own review and audit row and
a candidate the service refuses (a conflict, a withheld root cause) is skipped with its reason. An imported
candidate's page shows the parsed fields beside the source document; approving takes the approve API's
edits (summary, owner, valid until, environment and cluster).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import jinja2
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError

from schemas.memory import Applicability, ApprovalEdits
from schemas.views import CandidateView
from services.api.deps import services
from services.common.auth import Principal
from services.common.errors import Forbidden, OpsloreError, Unauthenticated
from services.common.paging import MAX_LIMIT, PageRequest
from services.common.printable import printable
from services.container import Services
from services.review.service import Resolution


def _shown(value: object) -> object:
    """Every `{{ }}` of every template: text from the ledger is shown with its control characters, line
    separators and bidi overrides as visible escapes (services.common.printable), then HTML-escaped."""
    return printable(value) if isinstance(value, str) else value


templates = Jinja2Templates(env=jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=jinja2.select_autoescape(), finalize=_shown))
router = APIRouter(prefix="/ui", include_in_schema=False)
Svc = Annotated[Services, Depends(services)]


class LoginRequired(Exception):
    """Raised by `reviewer` when the session has no valid reviewer key (the app redirects to login)."""


def reviewer(request: Request, svc: Svc) -> Principal:
    key = request.session.get("key")
    if not key:
        raise LoginRequired
    try:
        who = svc.keys.authenticate(key)
        who.require("reviewer")
    except (Unauthenticated, Forbidden):
        request.session.clear()
        raise LoginRequired from None
    return who


Reviewer = Annotated[Principal, Depends(reviewer)]


def check_csrf(request: Request, csrf_token: Annotated[str, Form()] = "") -> None:
    expected = request.session.get("csrf")
    if not expected or not secrets.compare_digest(csrf_token, expected):
        raise Forbidden("the form's CSRF token is missing or stale; reload the page")


Csrf = Annotated[None, Depends(check_csrf)]


def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("flash", request.session.pop("flash", None))
    return templates.TemplateResponse(request, name, {"csrf": request.session.get("csrf", ""), **context},
                                      status_code=status)


def back(url: str, request: Request, flash: str | None = None) -> RedirectResponse:
    if flash:
        request.session["flash"] = flash
    return RedirectResponse(url, status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> HTMLResponse:
    request.session.setdefault("csrf", secrets.token_urlsafe(24))
    return render(request, "login.html")


@router.post("/login")
def login(request: Request, svc: Svc, _: Csrf, api_key: Annotated[str, Form()] = "") -> Response:
    try:
        who = svc.keys.authenticate(api_key.strip())
        who.require("reviewer")
    except (Unauthenticated, Forbidden) as exc:
        return render(request, "login.html", status=401, error=exc.message)
    request.session.update(key=api_key.strip(), csrf=secrets.token_urlsafe(24), who=f"{who.tenant}/{who.role}")
    return back("/ui/", request)


@router.post("/logout")
def logout(request: Request, _: Csrf) -> Response:
    request.session.clear()
    return back("/ui/login", request)


QUEUE_FILTERS = {"true": True, "false": False}  # ?imported=: imported postmortems only, investigations only
BULK_LIMIT = MAX_LIMIT  # candidates decided by one form post (the queue shows at most one page of them)


def queue_url(imported: str) -> str:
    """The queue, keeping only a known filter (a form's `back` field never redirects anywhere else)."""
    return f"/ui/?imported={imported}" if imported in QUEUE_FILTERS else "/ui/"


@router.get("/", response_class=HTMLResponse)
def queue(request: Request, svc: Svc, who: Reviewer, imported: str = "") -> HTMLResponse:
    page = svc.review.list_candidates(who, "pending", None, PageRequest(limit=MAX_LIMIT),
                                      QUEUE_FILTERS.get(imported))
    pending = page.candidates
    return render(request, "queue.html", candidates=pending, imported=imported if imported in QUEUE_FILTERS else "",
                  more=page.next_cursor is not None,
                  conflicts=[c for c in pending if c.proposal is not None and c.proposal.kind == "conflict"])


def bulk_item(value: str) -> tuple[UUID, int | None] | None:
    """A checkbox's value, `<candidate id>:<current version the queue showed, or empty>`, or None."""
    cid, _, version = value.partition(":")
    try:
        return UUID(cid), int(version) if version.isdigit() else None
    except ValueError:
        return None


@router.post("/candidates/bulk")
def bulk(request: Request, svc: Svc, who: Reviewer, _: Csrf,
         candidate: Annotated[list[str] | None, Form()] = None, decision: Annotated[str, Form()] = "",
         reason: Annotated[str, Form()] = "", back_to: Annotated[str, Form()] = "") -> Response:
    """Approve or reject the selected candidates with one note (reason): one service call, and so one review
    and audit row, per candidate; the ones the service refuses are listed with why."""
    here = queue_url(back_to)
    chosen = list(dict.fromkeys(candidate or []))
    if decision not in ("approve", "reject"):
        return back(here, request, "Choose Approve selected or Reject selected.")
    if not chosen:
        return back(here, request, "Select at least one candidate.")
    if len(chosen) > BULK_LIMIT:
        return back(here, request, f"At most {BULK_LIMIT} candidates at a time.")
    note = reason.strip()
    if decision == "reject" and not note:
        return back(here, request, "A reason is required to reject.")
    done = 0
    skipped: list[str] = []
    for value in chosen:
        item = bulk_item(value)
        if item is None:
            skipped.append(f"{value[:40]}: not a candidate id")
            continue
        cid, version = item
        try:
            if decision == "approve":
                svc.review.approve(who, cid, note=note or None, edits=None, expected_version=version)
            else:
                svc.review.reject(who, cid, note)
        except OpsloreError as exc:
            skipped.append(f"{cid}: {exc.message}")
            continue
        done += 1
    verb = "Approved" if decision == "approve" else "Rejected"
    message = f"{verb} {done} of {len(chosen)}."
    if skipped:
        message += f" Skipped {len(skipped)} (decide them one by one): " + "; ".join(skipped[:10])
        message += " …" if len(skipped) > 10 else ""
    return back(here, request, message)


@router.get("/candidates/{candidate_id}", response_class=HTMLResponse)
def candidate(request: Request, candidate_id: UUID, svc: Svc, who: Reviewer) -> HTMLResponse:
    cand = svc.review.get_candidate(who, candidate_id)
    current = None
    proposal = cand.proposal
    if proposal is not None and proposal.family_id is not None:
        current = svc.memory.get_record(who, proposal.family_id).current
    mark = (cand.episode or {}).get("imported") or {}
    return render(request, "candidate.html", c=cand, content=cand.content, episode=cand.episode,
                  proposal=proposal.model_dump() if proposal else {}, current=current,
                  warnings=candidate_warnings(cand),
                  imported=cand.content.get("imported_from") or mark if cand.imported else None,
                  document=mark.get("document"))


def candidate_warnings(cand: CandidateView) -> list[str]:
    content = cand.content
    out = []
    if (content.get("trust_mix") or {}).get("untrusted_text"):
        out.append("Part of the evidence is untrusted text (ticket, chat, web or log text): quoted, never a rule.")
    if content.get("memory_type") == "procedural" or content.get("procedure"):
        out.append("Contains steps that were taken (procedural knowledge): approve only what you would run again.")
    if cand.proposal is not None and cand.proposal.kind == "conflict":
        out.append("Contradicts the current version of an existing record: compare both sides before deciding.")
    if cand.imported:
        out.append("Imported from the team's postmortem: nothing here was observed by a tool; hints citing it "
                   "warn imported_unverified until feedback or a live check confirms it.")
    return out


@dataclass(frozen=True)
class ApprovalForm:
    """The approve form's fields as sent (text, unvalidated)."""

    summary: str = ""
    root_cause: str = ""
    root_cause_category: str = ""
    services: str = ""
    resolution_text: str = ""
    owner: str = ""
    valid_until: str = ""
    environment: str = ""
    cluster: str = ""


def _changed(sent: str, current: str | None) -> str | None:
    """The form's text when the reviewer changed it: the form shows text escaped (printable), so the
    shown text sent back unchanged is no edit, and neither is an emptied field."""
    edited = sent.strip()
    if not edited or (current is not None and edited in (current.strip(), printable(current).strip())):
        return None
    return edited


def approval_edits(cand: CandidateView, form: ApprovalForm) -> ApprovalEdits | None:
    """The approve API's edits from the form (raises ValidationError or ValueError on a bad value).
    `valid_until` is a date, the record valid until that day ends (UTC); services are comma-separated."""
    content = cand.content
    fields: dict[str, Any] = {}
    for name, sent, current in (("summary", form.summary, cand.summary),
                                ("root_cause", form.root_cause, content.get("root_cause")),
                                ("root_cause_category", form.root_cause_category, content.get("root_cause_category")),
                                ("resolution", form.resolution_text, content.get("resolution"))):
        if (edited := _changed(sent, current)) is not None:
            fields[name] = edited
    services = [s.strip() for s in form.services.split(",") if s.strip()]
    shown = [printable(s) for s in content.get("services") or []]
    if form.services.strip() and services not in (content.get("services") or [], shown):
        fields["services"] = services
    if form.owner.strip():
        fields["owner"] = form.owner.strip()
    if form.valid_until.strip():
        fields["valid_until"] = datetime.combine(datetime.fromisoformat(form.valid_until.strip()).date(), time.max,
                                                 tzinfo=UTC)
    where = {k: v.strip() for k, v in (("environment", form.environment), ("cluster", form.cluster)) if v.strip()}
    if where:
        fields["applicability"] = Applicability(**where)
    return ApprovalEdits(**fields) if fields else None


@router.post("/candidates/{candidate_id}/approve")
def approve(request: Request, candidate_id: UUID, svc: Svc, who: Reviewer, _: Csrf,
            summary: Annotated[str, Form()] = "", note: Annotated[str, Form()] = "",
            expected_version: Annotated[str, Form()] = "", resolution: Annotated[str, Form()] = "auto",
            root_cause: Annotated[str, Form()] = "", root_cause_category: Annotated[str, Form()] = "",
            services: Annotated[str, Form()] = "", resolution_text: Annotated[str, Form()] = "",
            owner: Annotated[str, Form()] = "", valid_until: Annotated[str, Form()] = "",
            environment: Annotated[str, Form()] = "", cluster: Annotated[str, Form()] = "") -> Response:
    cand = svc.review.get_candidate(who, candidate_id)
    form = ApprovalForm(summary, root_cause, root_cause_category, services, resolution_text, owner, valid_until,
                        environment, cluster)
    try:
        edits = approval_edits(cand, form)
    except (ValidationError, ValueError) as exc:
        detail = exc.errors(include_url=False)[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        return back(f"/ui/candidates/{candidate_id}", request, f"Not approved: an edit is invalid ({detail}).")
    how: Resolution = "new_version" if resolution == "new_version" else "new_family" if resolution == "new_family" \
        else "auto"
    try:
        out = svc.review.approve(who, candidate_id, note=note or None, edits=edits,
                                 expected_version=int(expected_version) if expected_version else None, resolution=how)
    except OpsloreError as exc:
        return back(f"/ui/candidates/{candidate_id}", request, f"Not approved: {exc.message}")
    return back(f"/ui/records/{out.family_id}", request, f"Approved as version {out.version}.")


@router.post("/candidates/{candidate_id}/reject")
def reject(request: Request, candidate_id: UUID, svc: Svc, who: Reviewer, _: Csrf,
           reason: Annotated[str, Form()] = "") -> Response:
    if not reason.strip():
        return back(f"/ui/candidates/{candidate_id}", request, "A reason is required to reject.")
    svc.review.reject(who, candidate_id, reason.strip())
    return back("/ui/", request, "Candidate rejected.")


@router.get("/records", response_class=HTMLResponse)
def records(request: Request, svc: Svc, who: Reviewer) -> HTMLResponse:
    page = svc.memory.list_records(who, None, None, PageRequest(limit=MAX_LIMIT))
    return render(request, "records.html", records=page.records)


@router.get("/records/{family_id}", response_class=HTMLResponse)
def record(request: Request, family_id: UUID, svc: Svc, who: Reviewer) -> HTMLResponse:
    rec = svc.memory.get_record(who, family_id)
    told = svc.briefing.told(who, family_id, rec.current_version)
    return render(request, "record.html", r=rec, lineage=svc.memory.lineage(who, family_id).edges, told=told)


@router.post("/records/{family_id}/{op}")
def record_op(request: Request, family_id: UUID, op: str, svc: Svc, who: Reviewer, _: Csrf,
              reason: Annotated[str, Form()] = "", summary: Annotated[str, Form()] = "",
              to_version: Annotated[str, Form()] = "") -> Response:
    here = f"/ui/records/{family_id}"
    if not reason.strip():
        return back(here, request, "A reason is required.")
    try:
        if op == "rollback" and to_version.isdigit():
            out = svc.memory.rollback(who, family_id, int(to_version), reason.strip())
            return back(here, request, f"Rolled back: version {out.version} restores version {to_version}.")
        if op == "supersede" and summary.strip():
            out = svc.memory.supersede(who, family_id, {"summary": summary.strip()}, reason.strip())
            return back(here, request, f"New version {out.version}.")
        if op == "retract":
            svc.memory.retract(who, family_id, reason.strip())
            return back(here, request, "Retracted; roll back to a version to restore it.")
    except OpsloreError as exc:
        return back(here, request, f"Not done: {exc.message}")
    return back(here, request, "Unknown action or missing field.")


# ---------------------------------------------------------------- governance tab
@router.get("/governance", response_class=HTMLResponse)
def governance(request: Request, svc: Svc, who: Reviewer) -> HTMLResponse:
    return render(request, "governance.html", proposals=svc.governance.proposals(who, "proposed", None),
                  decided=[p for p in svc.governance.proposals(who, None, None, limit=50) if p.state != "proposed"])


@router.post("/governance/preview")
def governance_preview(request: Request, svc: Svc, who: Reviewer, _: Csrf) -> Response:
    found = svc.governance.preview(who)
    return back("/ui/governance", request, f"Preview wrote {len(found.proposals)} open proposal(s); nothing changed.")


@router.get("/governance/{proposal_id}", response_class=HTMLResponse)
def governance_proposal(request: Request, proposal_id: UUID, svc: Svc, who: Reviewer) -> HTMLResponse:
    return render(request, "proposal.html", **svc.governance.detail(who, proposal_id))


@router.post("/governance/{proposal_id}/{op}")
def governance_op(request: Request, proposal_id: UUID, op: str, svc: Svc, who: Reviewer, _: Csrf,
                  reason: Annotated[str, Form()] = "") -> Response:
    here = f"/ui/governance/{proposal_id}"
    try:
        if op == "execute":
            done = svc.governance.execute(who, proposal_id)
            return back(here, request, "Executed: " + ", ".join(f"{w.state} v{w.version}" for w in done.wrote))
        if not reason.strip():
            return back(here, request, "A reason is required.")
        if op == "dismiss":
            svc.governance.dismiss(who, proposal_id, reason.strip())
            return back("/ui/governance", request, "Proposal dismissed.")
        if op == "revert":
            svc.governance.revert(who, proposal_id, reason.strip())
            return back(here, request, "Reverted.")
    except OpsloreError as exc:
        return back(here, request, f"Not done: {exc.message}")
    return back(here, request, "Unknown action.")
