"""CausesCalibrator: fits a tenant's causes model (`causes.fit`, pure) on the questions the tenant has lived.

`questions` gathers them through the briefing's own retrieval and ranking (`BriefingService.retrieve`, `rank`
with no threshold), in the tenant's time order:
- every approved record (the newest `SAMPLE`) asked with its own symptoms, alert, services and signals against
  the records approved before it, each family as it was then (`Lived.as_of`: its own as the version before it,
  one a later recurrence replaced as its version of then; later families left out), with the base rates of that
  earlier history: its cause, or NEW when that history had no record of its cause;
- every `adopted` or `refuted` feedback on a briefing, the briefing's request asked again against the records
  approved before the briefing: adopted confirms the cited family's cause, refuted rules it out. Feedback is an
  agent's or an engineer's, or live verification's (`collectors.verify` appends `adopted` for a hint whose checks
  held and `refuted` for one they contradicted): `lived_feedback` reads them all. Feedback on an incident that was
  itself approved into memory is not asked again: that record's own question is the same question with its
  confirmed cause, and asking it twice would count one incident twice (in the fit, and as two paired questions in
  the guard's confidence bound, which then believes a window twice its size).
The questions are returned in the tenant's time order (a feedback question where its briefing was answered): the
guard (`causes.newest_checks`) fits on the older ones and asks the newest, so a question must never be fitted on
one lived after it.
`run` fits with the shipped model as the prior's centre and stores the model and its figures per tenant and ranker
model (`causes_calibration`, under RLS) in one statement; `model` reads it for a briefing (remembered per process
for `ttl` seconds); `refresh_if_stale` starts a run on the process's one thread when the tenant's size moved by a
tenth (or 10 records) since the last run, or feedback arrived. Nothing here decides anything: `causes` does.
"""

from __future__ import annotations

import bisect
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from numpy.typing import NDArray
from pydantic import ValidationError

from schemas.api import BriefingRequest
from services.briefing import causes, retrieval
from services.briefing.calibrator import question_of
from services.briefing.causes import NEW, CausesModel, Question, TenantHistory
from services.briefing.history import MEMBERS_CAP, group_uncategorised
from services.briefing.rank import rank
from services.briefing.symptoms import (
    SymptomClassifier,
    concepts,
    covered,
    novel_concept,
    profiles_of,
)
from services.briefing.tenant_runs import TenantRuns
from services.briefing.vectors import array_vector
from services.common.auth import Principal
from services.common.db import Cursor, Row
from services.memory import records as memory_records

if TYPE_CHECKING:
    from services.briefing.service import BriefingService


SAMPLE = 300  # newest records asked per run (~40 ms each with the embedding)
FEEDBACK_SAMPLE = 500
MIN_HISTORY = 5  # a record is asked once this many records were approved before it
YOUNG = causes.MIN_QUESTIONS + MIN_HISTORY  # fewer records: too few lived questions to fit (a run at every record)
YOUNG_INTERVAL = 5.0  # seconds between two runs of one young tenant (a few dozen questions: a second or two)
_READ = "SELECT model_doc, records, questions FROM causes_calibration WHERE model = %s"
_WRITE = """
INSERT INTO causes_calibration (tenant, model, model_doc, records, questions, report)
VALUES (%(tenant)s, %(model)s, %(model_doc)s::jsonb, %(records)s, %(questions)s, %(report)s::jsonb)
ON CONFLICT (tenant, model) DO UPDATE SET model_doc = EXCLUDED.model_doc, records = EXCLUDED.records,
  questions = EXCLUDED.questions, report = EXCLUDED.report, computed_at = now()
"""
_FEEDBACK = """SELECT e.payload->>'family_id' AS family_id, e.payload->>'verdict' AS verdict, b.request,
  b.created_at, e.incident_id FROM ledger_events e JOIN briefings b ON b.briefing_id = (e.payload->>'briefing_id')::uuid
  WHERE e.type = 'briefing.feedback' AND e.payload->>'verdict' IN ('adopted', 'refuted')
  ORDER BY e.occurred_at DESC, e.event_id LIMIT %s"""


def _vectors(cur: Cursor, model: str, keys: list[tuple[uuid.UUID, int]]) -> dict[tuple[str, int], NDArray[np.float32]]:
    """These stored versions' `model` vectors, by (family id as text, version); a version without one is absent."""
    if not keys:
        return {}
    cur.execute("""SELECT w.family_id::text AS family_id, w.version, array_send(w.vector) AS vector
                   FROM version_vectors w JOIN unnest(%s::uuid[], %s::int[]) k(family_id, version)
                     ON w.family_id = k.family_id AND w.version = k.version
                   WHERE w.model = %s""", ([k[0] for k in keys], [k[1] for k in keys], model))
    return {(r["family_id"], int(r["version"])): array_vector(r["vector"]) for r in cur.fetchall()}


def _cosines(cur: Cursor, model: str, keys: list[tuple[uuid.UUID, int]], question: Any) -> dict[tuple[str, int], float]:
    """The cosine of the question and each of these stored versions' vectors (unit vectors: their dot product)."""
    return {key: float(np.dot(vector, question)) for key, vector in _vectors(cur, model, keys).items()}


def _at(row: Row) -> datetime:
    at = row.get("observed_at") or row["valid_from"]
    return at if isinstance(at, datetime) else datetime.fromisoformat(str(at))


_VERSIONS = """SELECT v.*, f.state AS family_state FROM memory_families f
  JOIN memory_versions v ON v.family_id = f.family_id WHERE f.state = 'active'"""


class LivedProfiles:
    """Each cause's class profile (`symptoms.profile_of`) before the n-th lived version, the way a
    briefing then would have computed it: each version's stored vector under its cause, over the newest
    `history.MEMBERS_CAP` versions before it (a briefing reads that many records). Only the versions some question
    needs are read (`since` on), so a large tenant's run holds at most its asked window and that cap of vectors."""

    def __init__(self, lived: Lived, since: int, causes: list[str], cause_of_row: NDArray[np.int64],
                 probabilities: NDArray[np.float64], shares: NDArray[np.float64]) -> None:
        self.lived = lived
        self.shares = shares  # the classifier's training shares (`symptoms.profile_of`)
        self.since = since
        self.causes = causes  # the causes of the rows read, indexed by `cause_of_row`
        self.cause_of_row = cause_of_row  # per row from `since`: its cause's index, -1 without a vector
        self.probabilities = probabilities  # per row from `since`: its class probabilities (zeros without a vector)

    @classmethod
    def read(cls, tenant: str, svc: BriefingService, lived: Lived, classifier: SymptomClassifier,
             first: int) -> LivedProfiles:
        """`first`: the earliest position a question is asked at (its history is the rows before it)."""
        assert svc.semantic is not None
        since = max(0, first - MEMBERS_CAP)
        rows = lived.rows[since:]
        keys = [(str(r["family_id"]), int(r["version"])) for r in rows]
        with svc.db.tenant_transaction(tenant) as cur:
            vectors = _vectors(cur, svc.semantic.model, [(uuid.UUID(f), v) for f, v in keys])
        dims = classifier.coef.shape[1]
        causes = sorted(set(lived.causes[since:]))
        index = {c: i for i, c in enumerate(causes)}
        held = [i for i, k in enumerate(keys) if k in vectors and vectors[k].shape == (dims,)]
        cause_of_row = np.full(len(keys), -1, dtype=np.int64)
        probabilities = np.zeros((len(keys), len(classifier.classes)))
        if held:
            probabilities[held] = classifier.probabilities(np.stack([vectors[keys[i]] for i in held]))
            cause_of_row[held] = [index[lived.causes[since + i]] for i in held]
        return cls(lived, since, causes, cause_of_row, probabilities, classifier.shares)

    def _window(self, n: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The causes and class probabilities of the rows (with a vector) a briefing before the n-th lived version
        read: the newest `MEMBERS_CAP` before it."""
        lo, hi = max(self.since, n - MEMBERS_CAP) - self.since, max(0, min(n, len(self.lived.rows)) - self.since)
        which = self.cause_of_row[lo:hi]
        kept = which >= 0
        return which[kept], self.probabilities[lo:hi][kept]

    def at(self, n: int) -> dict[str, NDArray[np.float64]]:
        which, readings = self._window(n)
        return profiles_of([self.causes[c] for c in which], readings, self.shares)

    def covered_at(self, n: int) -> NDArray[np.bool_]:
        """The classes some record before the n-th lived version is read as (`symptoms.covered`), over the same
        window as `at`."""
        _, readings = self._window(n)
        return covered(readings, self.probabilities.shape[1])


@dataclass(frozen=True)
class Lived:
    """The tenant's approved incidents in time order: every version of an active family (a recurrence merged into
    a family is a version of its own), each with its cause (category, else its uncategorised group); and each
    family's cause as a briefing sees it (its current version's)."""

    rows: list[Row]  # versions, oldest first
    causes: list[str]
    cause: dict[str, str]  # family_id -> its current cause

    @classmethod
    def read(cls, cur: Cursor) -> Lived:
        current = memory_records.current_versions(cur)
        cur.execute(_VERSIONS)
        return cls.of(cur.fetchall(), current)

    @classmethod
    def of(cls, versions: Sequence[Row], current: Sequence[Row]) -> Lived:
        active = [r for r in current if r["family_state"] == "active"]
        grouped = group_uncategorised([(str(r["family_id"]), r.get("root_cause") or r["summary"])
                                       for r in sorted(active, key=_at) if not r["root_cause_category"]])
        cause = {str(r["family_id"]): r["root_cause_category"] or grouped[str(r["family_id"])] for r in active}
        dated = sorted((v for v in versions if str(v["family_id"]) in cause),
                       key=lambda v: (_at(v), str(v["family_id"]), int(v["version"])))
        labels = [v["root_cause_category"] or cause[str(v["family_id"])] for v in dated]
        return cls(rows=dated, causes=labels, cause=cause)

    def sharing(self, n: int, services: Sequence[str]) -> dict[str, float]:
        """Incidents per cause among the first `n`, counted the way a briefing counts them then
        (`history.sharing_services`): each family as its newest version among them was, all its incidents so far
        under that version's cause, when that version names one of `services`."""
        wanted = set(services)
        out: dict[str, float] = {}
        if not wanted:
            return out
        newest: dict[str, tuple[Row, str]] = {}
        incidents: dict[str, int] = {}
        for row, cause in zip(self.rows[:n], self.causes[:n], strict=True):
            family = str(row["family_id"])
            newest[family] = (row, cause)
            incidents[family] = incidents.get(family, 0) + 1
        for family, (row, cause) in newest.items():
            if wanted & set(row.get("services") or ()):
                out[cause] = out.get(cause, 0.0) + incidents[family]
        return out

    def as_of(self, n: int) -> dict[str, tuple[int, str]]:
        """Each family as it was after the first `n` incidents: its newest version among them and that version's
        cause. A family approved later is absent; one a later recurrence replaced is its version of then."""
        out: dict[str, tuple[int, str]] = {}
        for row, cause in zip(self.rows[:n], self.causes[:n], strict=True):
            out[str(row["family_id"])] = (int(row["version"]), cause)
        return out

    def incidents(self) -> set[str]:
        """The incidents approved into memory: every source incident of every lived version."""
        return {str(i) for row in self.rows for i in (row.get("source_incidents") or ())}

    def before(self, when: datetime) -> int:
        """How many incidents happened before `when` (the rows are in time order: a binary search)."""
        return bisect.bisect_left(self.times, when)

    @cached_property
    def times(self) -> list[datetime]:
        return [_at(v) for v in self.rows]


class LivedWalk:
    """A tenant's history walked forward in time order, each incident paid once: after `advance(n)`, `was` is every
    family as it was after the first n incidents (`Lived.as_of(n)`) and `sharing(services)` is
    `Lived.sharing(n, services)`. Those two recompute from the start at every question; a run asks up to SAMPLE
    questions of a history of any size, and recomputing cost 5.3 s of CPU per run on a 10k-version history against
    0.08 s walking (O(records x questions) against O(records): `bench/calibration_walk.py`), taken from the
    briefings it shares the cores with. `Lived.as_of` and `Lived.sharing` stay the
    specification: a unit test walks a random history against them."""

    def __init__(self, lived: Lived) -> None:
        self.lived = lived
        self.n = 0
        self.was: dict[str, tuple[int, str]] = {}
        self._incidents: dict[str, int] = {}
        self._services: dict[str, frozenset[str]] = {}  # family -> the services its newest version names
        self._families: dict[str, set[str]] = {}  # service -> the families whose newest version names it

    def advance(self, n: int) -> None:
        """Walk on to just after the first `n` incidents (never back)."""
        if n < self.n:
            raise ValueError(f"a walk goes forward only: at {self.n}, asked for {n}")
        for row, cause in zip(self.lived.rows[self.n:n], self.lived.causes[self.n:n], strict=True):
            family = str(row["family_id"])
            self.was[family] = (int(row["version"]), cause)
            self._incidents[family] = self._incidents.get(family, 0) + 1
            for service in self._services.get(family, ()):
                self._families[service].discard(family)
            named = frozenset(row.get("services") or ())
            self._services[family] = named
            for service in named:
                self._families.setdefault(service, set()).add(family)
        self.n = n

    def sharing(self, services: Sequence[str]) -> dict[str, float]:
        """`Lived.sharing(self.n, services)`."""
        families: set[str] = set()
        for service in set(services):
            families |= self._families.get(service, set())
        out: dict[str, float] = {}
        for family in sorted(families):
            cause = self.was[family][1]
            out[cause] = out.get(cause, 0.0) + self._incidents[family]
        return out


def lived_feedback(cur: Cursor, limit: int = FEEDBACK_SAMPLE) -> list[Row]:
    """The tenant's newest `adopted` and `refuted` feedback (an agent's, an engineer's or live verification's),
    each with the request of the briefing it judged, when that briefing was answered and the incident it was for."""
    cur.execute(_FEEDBACK, (limit,))
    return cur.fetchall()


class CausesCalibrator:
    def __init__(self, briefing: BriefingService, ttl: float = 60.0, min_interval: float = 120.0) -> None:
        self.briefing = briefing
        self.ttl = ttl
        self.min_interval = min_interval
        self._read: dict[tuple[str, str], tuple[float, CausesModel | None, int | None]] = {}
        self._floors: dict[tuple[str, int], float | None] = {}  # `floor_now`'s, per tenant and history size
        self._lock = threading.Lock()
        self.runs = TenantRuns("causes-calibration", min_interval)
        self.young_runs = TenantRuns("causes-young", YOUNG_INTERVAL)  # young tenants: at every new record

    def model(self, cur: Cursor, tenant: str, ranker_model: str, records: int | None = None) -> CausesModel:
        """The tenant's calibrated causes model for `ranker_model`, else the shipped one without the concept.
        `records`: the tenant's size now; a young tenant's (under YOUNG records) remembered model is read again as
        soon as its size moved (one row by key): its background run follows every record within seconds, and a model
        remembered for `ttl` would answer with the floor of a smaller history long after the run had stored the
        right one."""
        now = time.monotonic()
        with self._lock:
            hit = self._read.get((tenant, ranker_model))
        moved = hit is not None and records is not None and records < YOUNG and hit[2] != records
        if hit is None or hit[0] <= now or moved:
            cur.execute(_READ, (ranker_model,))
            row = cur.fetchone()
            try:
                stored = CausesModel.from_json(row["model_doc"]) if row else None
            except ValueError:  # fitted over other features: the shipped model until the next run
                stored = None
            hit = (now + self.ttl, stored, int(row["records"]) if row else None)
            with self._lock:
                self._read[(tenant, ranker_model)] = hit
        # before the tenant's first run its guard has not judged anything: the shipped model without the concept
        # a stored model keeps the price its guard judged it at (a run applies the deployment's)
        if hit[1] is not None:
            return hit[1]
        shipped = self.priced(causes.shipped_causes_model(ranker_model, concept=False))
        # young (its floor measured by the briefing, `floor_now`) only when it is known to be: a tenant that imported
        # a large history answers its first questions with the shipped model until its first run lands
        return replace(shipped, young=records is not None and records < YOUNG)

    def floor_now(self, tenant: str, model: CausesModel, records: int) -> CausesModel:
        """`model` with the evidence floor of the tenant's history as it is now, when its floor is pending
        (`causes.floor_pending`: a young tenant's model computed while it had one cause, answering a history of
        more). The floor is what the tenant's next run would store (`unrelated`, over its under-YOUNG records: a
        few dozen rankings, 0.2-1 s), measured here once per history size: a young tenant's questions follow its
        approvals within seconds (a team importing its history, a replay), before the background run lands, and
        without it they would answer over a floor of nothing. Still no floor (no record could be asked): `model`
        unchanged, and the answer stays the base rates."""
        key = (tenant, records)
        with self._lock:
            known = key in self._floors
            floor = self._floors.get(key)
        if not known:
            floor = causes.unrelated_floor(self.unrelated(tenant)[1])
            with self._lock:
                if len(self._floors) > 4096:
                    self._floors.clear()
                self._floors[key] = floor
        return model if floor is None else replace(model, evidence_floor=floor)

    def priced(self, model: CausesModel) -> CausesModel:
        """`model` at the price on a longer investigation the deployment sets (`causes_worse_cost`), else the
        shipped one; the same for every tenant, young or judged: the price is what a wrong lead costs an agent, not
        a property of the tenant. (Until 2026-12-04 a tenant too young for its guard answered at 0, the
        expected-checks rule, so that a three- or four-record tenant's near-verbatim recurrence kept its hint. Real
        young tenants paid for it with look-alikes of another cause: at 0 a four-record 2i2c history marked a record
        sharing the question's service (p 0.49 against a base rate of 0.14, novelty 0.25: 5 checks against the base
        rates' 4, 7 against 5 replayed); the six-record Let's Encrypt history, asked at 0 after its first run at the
        price (9 against 9, 12 against 12 replayed), marked a record whose OCSP responses had also gone stale (0.35
        against 0.05, novelty 0.35: 10 against 9, 13 against 12). At the price both hold the base rates' checks,
        and the 62 scenarios still pass.
        What the price costs: a young tenant's recurrence whose probability stays under about one half gets no hint
        (three integration tests' matches: a one-record tenant asked in its record's own words, and three- and
        four-record tenants' near-verbatim questions, p 0.37-0.38 at a novelty of 0.52); search still finds it, and
        the causes still put it first, raised above its base rate. By the model's own numbers the look-alikes were
        the stronger cases, so no rule over these probabilities keeps one and drops the other.)"""
        price = self.briefing.settings.causes_worse_cost
        return model if price is None or model.worse_cost == price else replace(model, worse_cost=price)

    def refresh_if_stale(self, tenant: str, ranker_model: str, records: int) -> None:
        """Start a run in the background when the tenant's calibration is missing or its size moved: under YOUNG
        records at every new record (at most every YOUNG_INTERVAL seconds: a young tenant's run asks a few dozen
        questions), from YOUNG records when the size moved by a tenth (or 10 records)."""
        if records < 2:
            return
        with self._lock:
            hit = self._read.get((tenant, ranker_model))
        known = hit[2] if hit else None
        young = records < YOUNG
        if hit is None or (known is not None and abs(records - known) < (1 if young else max(10, known // 10))):
            return
        (self.young_runs if young else self.runs).start(tenant, lambda t: self.run(t)[2])

    def questions(self, tenant: str, now: datetime | None = None) -> tuple[str, list[Question], int]:
        """(ranker model, the tenant's lived questions oldest first, its active records)."""
        svc = self.briefing
        now = now or datetime.now(UTC)
        principal = Principal(key_id=None, tenant=tenant, project=None, role="agent", service="calibrator")
        with svc.db.tenant_transaction(tenant) as cur:
            lived = Lived.read(cur)
            feedback = lived_feedback(cur)
        # (question, how many incidents came before it, its cause, the cause it refuted, its own family: asked
        # against every family as it was then, its own as the version before it, for a family's current text may
        # be this very incident's or a later one's)
        asked: list[tuple[BriefingRequest, int, str | None, str | None, str | None]] = []
        start = max(MIN_HISTORY, len(lived.rows) - SAMPLE)
        for i in range(start, len(lived.rows)):
            req = question_of(lived.rows[i])
            if req is not None:
                row = lived.rows[i]
                asked.append((req, i, lived.causes[i], None, str(row["family_id"])))
        approved = lived.incidents()
        for f in reversed(feedback):
            if f["incident_id"] in approved:  # its record's own question asks it, with the confirmed cause
                continue
            cause = lived.cause.get(str(f["family_id"]))
            try:
                req = BriefingRequest.model_validate({**dict(f["request"]), "limit": 10, "explain": False})
            except ValidationError:
                continue
            if cause is not None:
                adopted = f["verdict"] == "adopted"
                asked.append((req, lived.before(f["created_at"]), cause if adopted else None,
                              None if adopted else cause, None))
        out: list[Question] = []
        walk = LivedWalk(lived)
        classifier = svc.classifier
        first = min((a[1] for a in asked), default=len(lived.rows))
        profiles = LivedProfiles.read(tenant, svc, lived, classifier, first) if classifier is not None else None
        # the ranker a briefing would use now, also when nothing is asked (under MIN_HISTORY records): the model is
        # stored under this name and a briefing reads it under its own (a young tenant's floor stored as "lexical"
        # while its briefings ranked with the embedding was never applied)
        name = svc.policy(now, svc.semantic is not None, threshold=0.0).model.name
        # walked and returned in time order (a stable sort: a record before feedback answered when it was the newest)
        for req, n, cause, refuted, family in sorted(asked, key=lambda a: a[1]):
            if n < MIN_HISTORY:
                continue
            history = TenantHistory.of_sequence(lived.causes[:n])
            walk.advance(n)
            was = walk.was  # every family as it was when the question was asked (its own: the version before)
            question = svc.embed(req)
            with svc.db.tenant_transaction(tenant) as cur:
                found = svc.retrieve(cur, principal, req, now, question)
                policy = svc.policy(now, found.similarities is not None, threshold=0.0)
                name = policy.model.name
                rows = [r for r in found.rows if str(r.family_id) in was and r.version == was[str(r.family_id)][0]]
                kept = {str(r.family_id) for r in rows}
                older = sorted({str(r.family_id) for r in found.rows} | ({family} if family else set()))
                older = [f for f in older if f in was and f not in kept]
                keys = [(uuid.UUID(f), was[f][0]) for f in older]
                rows += retrieval.version_facts(cur, keys)
                similarities = found.similarities
                if similarities is not None and question.vector is not None and svc.semantic is not None:
                    similarities = {**similarities, **_cosines(cur, svc.semantic.model, keys, question.vector)}
            ranked = rank(found.query, rows, policy, 10, similarities, found.stats)
            evidence = causes.gather(causes.candidate(was[str(s.facts.family_id)][1], s) for s in ranked.candidates)
            if profiles is not None and classifier is not None and question.vector is not None \
                    and found.similarities is not None:
                ratios = classifier.ratios(question.vector, svc.lexemes(req))
                evidence = causes.with_concepts(evidence, concepts(ratios, profiles.at(n)), novel_concept(
                    ratios, profiles.covered_at(n), classifier.shares))
            label = None if cause is None else cause if cause in history.counts else NEW
            out.append(Question(history, evidence, cause=label, refuted=refuted if refuted in history.counts else None,
                                near=walk.sharing(req.services)))
        return name, out, len(lived.rows)

    def unrelated(self, tenant: str, now: datetime | None = None) -> tuple[str | None, list[float]]:
        """How alike the tenant's unrelated incidents look (`causes.unrelated_floor`'s samples): each active
        family's newest incident asked as its own briefing (`question_of`) against every current record (the
        briefing's retrieval and ranking, no threshold), the best relevance of a record of another cause. Not a
        question of time order: no cause is predicted, only how near records of different causes come. Returns
        the ranker model that answered (None when nothing was asked) and the samples."""
        svc = self.briefing
        now = now or datetime.now(UTC)
        principal = Principal(key_id=None, tenant=tenant, project=None, role="agent", service="calibrator")
        with svc.db.tenant_transaction(tenant) as cur:
            lived = Lived.read(cur)
        if len(set(lived.cause.values())) < 2:
            return None, []
        newest = {str(r["family_id"]): r for r in lived.rows}  # dated order: the last is the newest
        name: str | None = None
        out: list[float] = []
        for family, row in list(newest.items())[-SAMPLE:]:
            req = question_of(row)  # `Lived` holds only active families: each has its cause
            if req is None:
                continue
            question = svc.embed(req)
            with svc.db.tenant_transaction(tenant) as cur:
                found = svc.retrieve(cur, principal, req, now, question)
                policy = svc.policy(now, found.similarities is not None, threshold=0.0)
                ranked = rank(found.query, found.rows, policy, 10, found.similarities, found.stats)
            name = policy.model.name
            own = lived.cause[family]
            out.append(max((s.relevance for s in ranked.candidates
                            if lived.cause.get(str(s.facts.family_id), own) != own), default=0.0))
        return name, out

    def run(self, tenant: str, now: datetime | None = None) -> tuple[str, CausesModel, dict[str, Any]]:
        """Calibrate `tenant`'s causes model now and store it. A tenant its guard cannot judge yet (too few lived
        questions: `causes.guard_judges`) keeps the shipped weights behind its evidence floor, without the concept
        (`causes.shipped_causes_model`)."""
        name, questions, records = self.questions(tenant, now)
        judged = causes.guard_judges(questions)
        samples = [] if judged else self.unrelated(tenant, now)[1]
        floor = causes.unrelated_floor(samples)  # every model below carries it: fit, guard and answers apply it
        beta = causes.fit_service_beta(questions)
        shipped = replace(self.priced(causes.shipped_causes_model(name, concept=judged)), evidence_floor=floor,
                          young=not judged)
        services_guard: dict[str, int] = {}
        if beta is not None:
            services_ok, services_guard = causes.services_pay(questions, shipped, beta)
            beta = beta if services_ok else None
        centre = replace(shipped, service_beta=beta)  # the shipped weights over this tenant's service priors
        fitted = causes.fit(questions, centre)
        report = evaluate(questions, {"base_rates": CausesModel.base_rates(), "shipped": shipped, "fitted": fitted})
        pays, guard = causes.evidence_pays(questions, centre)
        report.update(guard, **services_guard, evidence_pays=pays, service_beta=beta, evidence_floor=floor,
                      unrelated_samples=len(samples))
        if pays is False:  # the evidence did not shorten the tenant's newest investigations: say less
            fitted = replace(CausesModel.base_rates(), source="base rates (the evidence did not shorten this "
                             "tenant's investigations)", questions=len(questions))
        self._store(tenant, name, fitted, records, len(questions), report)
        return name, fitted, report

    def _store(self, tenant: str, model: str, fitted: CausesModel, records: int, questions: int,
               report: dict[str, Any]) -> None:
        doc = {"tenant": tenant, "model": model, "model_doc": orjson.dumps(fitted.to_json()).decode(),
               "records": records, "questions": questions, "report": orjson.dumps(report).decode()}
        with self.briefing.db.tenant_transaction(tenant) as cur:
            cur.execute(_WRITE, doc)
        with self._lock:
            self._read.pop((tenant, model), None)

    def close(self) -> None:
        self.runs.close()
        self.young_runs.close()


def evaluate(questions: Sequence[Question], models: dict[str, CausesModel]) -> dict[str, Any]:
    """Mean Brier score of each model over the questions with a known cause (in sample for a fitted model)."""
    known = [q for q in questions if q.cause is not None]
    out: dict[str, Any] = {"questions": len(questions), "with_cause": len(known),
                           "novel": sum(1 for q in known if q.cause == NEW)}
    for label, m in models.items():
        total = 0.0
        for q in known:
            p, p_new = causes.posterior(q.history, q.evidence, m, q.near)
            total += causes.brier(p, p_new, q.cause or NEW)
        out[f"brier_{label}"] = round(total / len(known), 4) if known else None
    return out
