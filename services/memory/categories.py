"""CategorySpelling: one root-cause category, one spelling per tenant. Pure.

A category names a cause, and a cause's base rate is the count of its incidents (`briefing.history`): written
two ways it would be two causes at half the rate each, and a recurrence would not find its family
(`review.service.pick_match` matches by category). People and tools write the same category in many ways:
an agent's `incident.resolved` says `DB connection pool`, a JSON export `db-connection-pool`, the Markdown
importer `db_connection_pool`. Every write of a record's category (approval, promotion, supersede) takes the
tenant's existing spelling of it, where one exists under the same key; a new category keeps its writer's
spelling, so labels the team already uses come back in `causes` as they wrote them.

The key: NFKC, case-folded, every run of non-word characters and underscores one `_`, trimmed. It merges case,
width and separators only; "dns" and "dns_failure" stay two categories, and a category with no word character
("???") is only ever itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

_SEPARATORS = re.compile(r"[\W_]+")


def category_key(category: str) -> str:
    """`DB Connection-Pool` -> `db_connection_pool`; Chinese as written (NFKC: full-width letters fold)."""
    return _SEPARATORS.sub("_", unicodedata.normalize("NFKC", category).casefold()).strip("_")


def spelled(category: str | None, known: Mapping[str, int]) -> str | None:
    """`category` as the tenant already spells it. `known`: the tenant's categories with their incidents
    (`records.category_spellings`). Among known spellings with the same key, the one with the most incidents;
    on a tie the writer's own if it is one of them, else the first in code-point order. Unknown key: as written."""
    if category is None:
        return None
    key = category_key(category)
    if not key:
        return category
    same = [(n, name) for name, n in known.items() if name != category and category_key(name) == key]
    if not same:
        return category
    best = max(n for n, _ in same)
    if known.get(category, -1) >= best:
        return category
    return min(name for n, name in same if n == best)
