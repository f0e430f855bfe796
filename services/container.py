"""The application's service container: one instance per API process, built by `services.api.app`.

Adapters (the HTTP routes, the review UI, the MCP server) receive it and call one service per use case;
nothing here holds state of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.briefing.service import BriefingService
from services.collectors.verify import VerificationService
from services.common.db import Database
from services.common.settings import Settings
from services.gateway.keys import ApiKeyService
from services.gateway.service import LedgerGateway
from services.governance.service import GovernanceService
from services.intake.alertmanager import AlertIntake
from services.memory.service import MemoryService
from services.operations.readiness import ReadinessProbe
from services.postmortems.service import PostmortemImporter
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
    postmortems: PostmortemImporter
