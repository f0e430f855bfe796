"""Structured log lines: the request's context on every line, the caller's trace continued, no secrets."""

from __future__ import annotations

import json
import logging

from services.common import logs


def line(message: str, *args: object, exc: BaseException | None = None) -> dict[str, object]:
    record = logging.LogRecord("opslore.test", logging.INFO, __file__, 1, message, args,
                               (type(exc), exc, None) if exc else None)
    parsed: dict[str, object] = json.loads(logs.JsonFormatter().format(record))
    return parsed


def test_context_fields_travel_with_every_line() -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    ctx = logs.begin(parent, request_id="req-1")
    logs.bind(tenant="acme", incident_id="INC-7")
    logs.bind(briefing_id="b-1", tenant=None)  # None never erases a field
    out = line("briefing answered with %d hints", 2)
    assert out["message"] == "briefing answered with 2 hints" and out["level"] == "info"
    assert out["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736" and out["request_id"] == "req-1"
    assert (out["tenant"], out["incident_id"], out["briefing_id"]) == ("acme", "INC-7", "b-1")
    handed_on = ctx.traceparent()
    assert handed_on is not None and handed_on.split("-")[1] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert handed_on.split("-")[2] != "00f067aa0ba902b7"  # a span of our own under the caller's trace


def test_a_malformed_or_zero_traceparent_starts_a_new_trace() -> None:
    for bad in ("garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", None):
        ctx = logs.begin(bad)
        assert ctx.trace_id is not None and len(ctx.trace_id) == 32 and set(ctx.trace_id) != {"0"}


def test_keys_bearer_tokens_and_dsn_passwords_are_masked() -> None:
    logs.begin()
    secret = "olk_AbCdEf123456_-xyz"
    out = line("auth %s failed; header Bearer %s; dsn postgresql://opslore_app:s3cret-pw@db:5432/opslore",
               secret, secret, exc=RuntimeError(f"token {secret}"))
    text = json.dumps(out)
    assert secret not in text and "s3cret-pw" not in text
    assert "olk_***" in text and "postgresql://opslore_app:***@db:5432" in text
