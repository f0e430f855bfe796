"""Keyset pagination for list endpoints: a bounded `limit` and an opaque cursor.

A cursor encodes the sort key of the last row returned, `(created_at, id)`; the next page asks for rows
strictly after it, so pages stay consistent while rows are added and cost the same at any depth.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from psycopg import sql

from services.common.errors import InvalidInput

DEFAULT_LIMIT = 100
MAX_LIMIT = 500


@dataclass(frozen=True)
class PageRequest:
    limit: int = DEFAULT_LIMIT
    after: tuple[datetime, UUID] | None = None

    @classmethod
    def parse(cls, limit: int, cursor: str | None) -> PageRequest:
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        return cls(limit, decode_cursor(cursor) if cursor else None)



Filter = tuple[str, Any]
"""An optional condition of a list query: SQL with one placeholder, and its value (None: not applied)."""


def where(filters: Sequence[Filter], extra: Sequence[sql.Composable] = (),
          extra_params: Sequence[Any] = ()) -> tuple[sql.Composable, list[Any]]:
    """` WHERE a AND b ...` of the filters that have a value (and `extra` conditions), or nothing."""
    used = [(cond, value) for cond, value in filters if value is not None and value != ""]
    conditions = [sql.SQL(cond) for cond, _ in used] + list(extra)  # conditions are code, values are params
    if not conditions:
        return sql.SQL(""), []
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions), [v for _, v in used] + list(extra_params)


def keyset_query(select: str, filters: Sequence[Filter], paging: PageRequest, created: str,
                 key: str) -> tuple[sql.Composed, list[Any]]:
    """`select` + the filters + rows after the cursor, ordered by (created, key), one row more than a page
    (so `page` can tell whether another page follows). `select`, `created` and `key` are code, not input."""
    order = sql.SQL("({}, {})").format(sql.SQL(created), sql.SQL(key))
    after = [order + sql.SQL(" > (%s, %s)")] if paging.after is not None else []
    cond, params = where(filters, after, list(paging.after or ()))
    query = sql.SQL(select) + cond + sql.SQL(" ORDER BY {}, {} LIMIT %s").format(sql.SQL(created), sql.SQL(key))
    return query, [*params, paging.limit + 1]


def encode_cursor(created_at: datetime, key: UUID) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([created_at.isoformat(), str(key)])).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, key = orjson.loads(raw)
        return datetime.fromisoformat(created), UUID(key)
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise InvalidInput("cursor is not one this API returned", field="cursor") from None


def page(rows: list[dict[str, Any]], request: PageRequest, created: str, key: str) -> tuple[list[dict[str, Any]],
                                                                                          str | None]:
    """Rows fetched with LIMIT limit + 1 -> the page and the cursor of the next one (None at the end)."""
    if len(rows) <= request.limit:
        return rows, None
    shown = rows[:request.limit]
    return shown, encode_cursor(shown[-1][created], shown[-1][key])
