"""A small typed HTTP client of the opslore API, used by the CLI, replay and the tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2

RATE_LIMIT_RETRIES = 8
MAX_RETRY_AFTER = 10.0  # seconds: a longer Retry-After is waited this long, then asked again


def _retry_after(header: str | None) -> float:
    try:
        return min(max(float(header or 1), 0.05), MAX_RETRY_AFTER)
    except ValueError:  # an HTTP date: not what this API sends
        return 1.0


class ApiError(RuntimeError):
    def __init__(self, status: int, body: Any) -> None:
        err = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(f"HTTP {status}: {err.get('message', body)}")
        self.status = status
        self.code = err.get("code")
        self.field = err.get("field")


class OpsloreClient:
    def __init__(self, base_url: str, key: str, timeout: float = 30.0,
                 http: httpx.Client | httpx2.Client | None = None) -> None:
        """`http`: an existing client to use instead (e.g. Starlette's TestClient, an httpx2 client); the key is
        set on each call."""
        self.http = http or httpx.Client(base_url=base_url, timeout=timeout)
        self.key = key

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One call; a 429 (the API's fair share, answered before any work is done) is retried after its
        Retry-After, up to `RATE_LIMIT_RETRIES` times, so a replay or a bulk import paces itself."""
        response = self.http.request(method, path, headers=self._auth(), **kwargs)
        for _ in range(RATE_LIMIT_RETRIES):
            if response.status_code != 429:
                break
            time.sleep(_retry_after(response.headers.get("Retry-After")))
            response = self.http.request(method, path, headers=self._auth(), **kwargs)
        body = response.json() if response.content else None
        if response.status_code >= 400:
            raise ApiError(response.status_code, body)
        return body

    def create_key(self, tenant: str, role: str, project: str | None = None) -> str:
        body = self.request("POST", "/v1/admin/api-keys", json={"tenant": tenant, "project": project, "role": role})
        return str(body["key"])

    def append(self, events: list[dict[str, Any]]) -> list[str]:
        return list(self.request("POST", "/v1/ledger/events", json={"events": events})["accepted"])

    def export(self, since: str | None = None, incident_id: str | None = None) -> Iterator[str]:
        params = {k: v for k, v in {"since": since, "incident_id": incident_id}.items() if v}
        with self.http.stream("GET", "/v1/ledger/export", params=params, headers=self._auth()) as response:
            if response.status_code >= 400:
                response.read()
                raise ApiError(response.status_code, response.json())
            yield from _ndjson_lines(response.iter_bytes())

    def episode(self, incident_id: str) -> dict[str, Any] | None:
        try:
            return dict(self.request("GET", f"/v1/incidents/{incident_id}/episode"))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def _all_pages(self, path: str, key: str, params: dict[str, str]) -> list[dict[str, Any]]:
        """Every item of a paginated list (follows next_cursor)."""
        items: list[dict[str, Any]] = []
        query: dict[str, str] = dict(params)
        while True:
            body = self.request("GET", path, params=query)
            items.extend(body[key])
            if not body.get("next_cursor"):
                return items
            query = {**params, "cursor": str(body["next_cursor"])}

    def candidates(self, **params: str) -> list[dict[str, Any]]:
        return self._all_pages("/v1/candidates", "candidates", params)

    def approve(self, candidate_id: str, **body: Any) -> dict[str, Any]:
        return dict(self.request("POST", f"/v1/candidates/{candidate_id}/approve", json=body))

    def reject(self, candidate_id: str, reason: str) -> dict[str, Any]:
        return dict(self.request("POST", f"/v1/candidates/{candidate_id}/reject", json={"reason": reason}))

    def import_postmortem(self, format: str, content: str | dict[str, Any], source_ref: str | None = None,
                          incident_id: str | None = None) -> dict[str, Any]:
        body = {k: v for k, v in {"format": format, "content": content, "source_ref": source_ref,
                                  "incident_id": incident_id}.items() if v is not None}
        return dict(self.request("POST", "/v1/postmortems", json=body))

    def records(self, **params: str) -> list[dict[str, Any]]:
        return self._all_pages("/v1/records", "records", params)

    def record(self, family_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/v1/records/{family_id}"))

    def record_op(self, family_id: str, op: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.request("POST", f"/v1/records/{family_id}/{op}", json=body))

    def calibrate(self) -> dict[str, Any]:
        return dict(self.request("POST", "/v1/calibration"))

    def calibrate_causes(self) -> dict[str, Any]:
        return dict(self.request("POST", "/v1/causes/calibration"))

    def briefing(self, request: dict[str, Any]) -> dict[str, Any]:
        return dict(self.request("POST", "/v1/briefings", json=request))

    def verify(self, briefing_id: str, incident_id: str) -> dict[str, Any]:
        return dict(self.request("POST", f"/v1/briefings/{briefing_id}/verify", json={"incident_id": incident_id}))

    def feedback(self, briefing_id: str, family_id: str, verdict: str, incident_id: str = "CURRENT") -> list[str]:
        body = {"family_id": family_id, "verdict": verdict, "incident_id": incident_id}
        return list(self.request("POST", f"/v1/briefings/{briefing_id}/feedback", json=body)["accepted"])


def _ndjson_lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """NDJSON lines end at b"\\n" only: a record's text may hold U+2028, U+2029 or U+0085, which JSON leaves
    unescaped and `str.splitlines` (httpx's iter_lines) would take for line ends."""
    pending = b""
    for chunk in chunks:
        *lines, pending = (pending + chunk).split(b"\n")
        yield from (line.decode("utf-8") for line in lines if line.strip())
    if pending.strip():
        yield pending.decode("utf-8")
