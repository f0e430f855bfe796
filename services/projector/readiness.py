"""Is this projector process ready? Pure: it reads what the poll loop last saw (`GroupState`).

Ready when all three hold:
- `group`: the process is a member of the consumer group, holding its partitions or none at all (a standby:
  more replicas than partitions), i.e. the last rebalance completed and no revocation is pending; and its
  loop polled within STALE_AFTER_SECONDS (a loop stuck in a batch, or backing off after a failure, is not);
- `postgresql`: the projection's database answers (checked by the caller, passed in);
- `lag`: the ledger's high watermark minus this process's position, summed over its own partitions, is at
  most OPSLORE_READY_MAX_LAG (a standby's is 0). Another member's lag is that member's readiness, not this one's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STALE_AFTER_SECONDS = 60.0


@dataclass(frozen=True)
class GroupState:
    """What the loop last saw; replaced whole (one attribute assignment) by the loop's thread."""

    member: bool = False
    partitions: frozenset[int] = field(default_factory=frozenset)
    lag: dict[int, int | None] = field(default_factory=dict)  # per own partition; None until the first fetch
    polled_at: float | None = None  # time.monotonic() of the last poll


def checks(state: GroupState, now: float, database: dict[str, Any], max_lag: int) -> dict[str, dict[str, Any]]:
    """The named checks of /readyz; `database` is the caller's PostgreSQL check (`{"ok": bool, ...}`)."""
    stale = state.polled_at is None or now - state.polled_at > STALE_AFTER_SECONDS
    group: dict[str, Any] = {"ok": state.member and not stale, "partitions": sorted(state.partitions),
                             "standby": state.member and not state.partitions}
    if not state.member:
        group["error"] = "not a member of the consumer group (starting, rebalancing or restarting)"
    elif stale:
        group["error"] = f"the loop has not polled for more than {STALE_AFTER_SECONDS:.0f}s"
    known = [v for v in state.lag.values() if v is not None]
    total = sum(known)
    lag: dict[str, Any] = {"ok": state.member and len(known) == len(state.lag) and total <= max_lag,
                           "lag": total, "max": max_lag}
    if len(known) != len(state.lag):
        lag["error"] = "the end offsets of some partitions are not known yet"
    return {"group": group, "postgresql": database, "lag": lag}
