"""The Prometheus Alertmanager webhook body (version 4), as Alertmanager sends it (CONTRACT "Alert intake").

Fields Alertmanager may add later are kept (extra="allow"); the input guard still applies to all of it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from schemas.guard import Guarded
from schemas.ledger import BoundedTime

LabelValue = Annotated[str, StringConstraints(max_length=1024)]
LabelSet = Annotated[dict[Annotated[str, StringConstraints(min_length=1, max_length=200)], LabelValue],
                     Field(max_length=64)]


class _Body(Guarded):
    model_config = ConfigDict(extra="allow")


class AlertmanagerAlert(_Body):
    status: Literal["firing", "resolved"]
    labels: LabelSet
    annotations: LabelSet = Field(default_factory=dict)
    startsAt: BoundedTime
    endsAt: str | None = Field(default=None, max_length=64)
    generatorURL: str | None = Field(default=None, max_length=2048)
    fingerprint: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9]+$")

    @model_validator(mode="before")
    @classmethod
    def _fingerprint_of_labels(cls, data: Any) -> Any:
        """Alertmanager always sends `fingerprint`; a relay or a hand-written test may not. Then it is the one
        Alertmanager would compute (`label_fingerprint`), so the same alert gets the same incident either way."""
        if isinstance(data, dict) and "fingerprint" not in data and isinstance(data.get("labels"), dict):
            labels = data["labels"]
            if all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
                return {**data, "fingerprint": label_fingerprint(labels)}
        return data


_FNV_OFFSET, _FNV_PRIME, _SEPARATOR = 14695981039346656037, 1099511628211, 255


def label_fingerprint(labels: dict[str, str]) -> str:
    """Prometheus's `LabelSet.Fingerprint()`: FNV-1a 64 over the label names in order, each name and value
    followed by the byte 255, as 16 hex digits."""
    h = _FNV_OFFSET
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in (*part.encode("utf-8", "surrogatepass"), _SEPARATOR):
                h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


class AlertmanagerWebhook(_Body):
    version: str = Field(max_length=8)
    status: Literal["firing", "resolved"]
    receiver: str = Field(max_length=200)
    groupKey: str = Field(default="", max_length=4096)
    groupLabels: LabelSet = Field(default_factory=dict)
    commonLabels: LabelSet = Field(default_factory=dict)
    commonAnnotations: LabelSet = Field(default_factory=dict)
    externalURL: str = Field(default="", max_length=2048)
    alerts: list[AlertmanagerAlert] = Field(min_length=1, max_length=1000)


class IntakeIncident(BaseModel):
    """Flat fields a webhook relay or an enrichment workflow can copy onto the alert."""

    incident_id: str
    fingerprint: str
    status: Literal["firing", "resolved"]
    briefing_id: str | None
    hint_count: int
    top_hint: str | None


class IntakeAnswer(BaseModel):
    incidents: list[IntakeIncident]
