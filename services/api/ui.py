"""Review web UI under /ui: server-rendered pages over the same services (and audit) as the API.

Login takes a reviewer API key and keeps it in the signed, HttpOnly, SameSite=Strict session cookie;
each session has a CSRF token that every form posts back. Handlers are thin: parse the form, call one
service method, redirect (POST/redirect/GET) or render.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import jinja2
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from schemas.memory import ApprovalEdits
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


@router.get("/", response_class=HTMLResponse)
def queue(request: Request, svc: Svc, who: Reviewer) -> HTMLResponse:
    pending = svc.review.list_candidates(who, "pending", None, PageRequest(limit=MAX_LIMIT)).candidates
    return render(request, "queue.html", candidates=pending,
                  conflicts=[c for c in pending if c.proposal is not None and c.proposal.kind == "conflict"])


@router.get("/candidates/{candidate_id}", response_class=HTMLResponse)
def candidate(request: Request, candidate_id: UUID, svc: Svc, who: Reviewer) -> HTMLResponse:
    cand = svc.review.get_candidate(who, candidate_id)
    current = None
    proposal = cand.proposal
    if proposal is not None and proposal.family_id is not None:
        current = svc.memory.get_record(who, proposal.family_id).current
    return render(request, "candidate.html", c=cand, content=cand.content, episode=cand.episode,
                  proposal=proposal.model_dump() if proposal else {}, current=current,
                  warnings=candidate_warnings(cand))


def candidate_warnings(cand: CandidateView) -> list[str]:
    content = cand.content
    out = []
    if (content.get("trust_mix") or {}).get("untrusted_text"):
        out.append("Part of the evidence is untrusted text (ticket, chat, web or log text): quoted, never a rule.")
    if content.get("memory_type") == "procedural" or content.get("procedure"):
        out.append("Contains steps that were taken (procedural knowledge): approve only what you would run again.")
    if cand.proposal is not None and cand.proposal.kind == "conflict":
        out.append("Contradicts the current version of an existing record: compare both sides before deciding.")
    return out


@router.post("/candidates/{candidate_id}/approve")
def approve(request: Request, candidate_id: UUID, svc: Svc, who: Reviewer, _: Csrf,
            summary: Annotated[str, Form()] = "", note: Annotated[str, Form()] = "",
            expected_version: Annotated[str, Form()] = "", resolution: Annotated[str, Form()] = "auto") -> Response:
    cand = svc.review.get_candidate(who, candidate_id)
    edited = summary.strip()  # the form shows the summary escaped (printable): sent back unchanged, it is no edit
    edits = ApprovalEdits(summary=edited) if edited and edited not in (cand.summary, printable(cand.summary)) else None
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
    return render(request, "record.html", r=rec, lineage=svc.memory.lineage(who, family_id).edges)


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
