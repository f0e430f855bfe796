"""A 422 names the field (`services.api.app._field_of`): the location prefix is dropped, a field's own name never,
so a missing `query` of POST /v1/records/search is named `query`, not `body`."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.app import _field_of


@pytest.mark.parametrize(("loc", "field"), [
    (("body", "query"), "query"),
    (("body",), "body"),
    (("query", "limit"), "limit"),
    (("body", "events", 0, "payload", "path"), "events[0].payload.path"),
    (("path", "family_id"), "family_id"),
])
def test_the_field_is_named_whatever_it_is_called(loc: tuple[Any, ...], field: str) -> None:
    assert _field_of(loc) == field
