"""The service container the routers use, and the authentication dependency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request

from services.api.readiness import ReadinessProbe
from services.briefing.service import BriefingService
from services.collectors.verify import VerificationService
from services.common import logs
from services.common.db import Database
from services.common.settings import Settings
from services.gateway.keys import ApiKeyService, Principal
from services.gateway.service import LedgerGateway
from services.governance.service import GovernanceService
from services.intake.alertmanager import AlertIntake
from services.memory.service import MemoryService
from services.projector.queries import EpisodeQueries
from services.review.service import ReviewService


@dataclass
class Services:
    settings: Settings
    db: Database
    keys: ApiKeyService
    gateway: LedgerGateway
    memory: MemoryService
    review: ReviewService
    briefing: BriefingService
    episodes: EpisodeQueries
    verification: VerificationService
    readiness: ReadinessProbe
    intake: AlertIntake
    governance: GovernanceService


def services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


def principal(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    token = None
    if authorization and authorization.lower().startswith("bearer "):
        token = authorization[7:].strip()
    caller = services(request).keys.authenticate(token)
    logs.bind(tenant=caller.tenant)
    return caller


Svc = Annotated[Services, Depends(services)]
Caller = Annotated[Principal, Depends(principal)]
