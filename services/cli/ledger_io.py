"""Ledger files: export a tenant's ledger to JSON Lines, import a file into another tenant or cluster.

An exported line is the record exactly as stored on the topic. Importing re-submits each envelope
through the gateway of the target (which binds the target key's tenant and recomputes the hash);
event ids are kept, so importing the same file twice is a no-op.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from services.cli.client import OpsloreClient

SYSTEM_FIELDS = ("tenant", "project", "recorded_at", "content_hash")


def read_ledger(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None


def envelope_for_import(record: dict[str, Any], keep_project: bool) -> dict[str, Any]:
    drop = SYSTEM_FIELDS if not keep_project else tuple(f for f in SYSTEM_FIELDS if f != "project")
    return {k: v for k, v in record.items() if k not in drop}


def import_ledger(client: OpsloreClient, records: Iterable[dict[str, Any]], *, keep_project: bool = False,
                  batch: int = 500) -> int:
    sent = 0
    chunk: list[dict[str, Any]] = []
    for record in records:
        chunk.append(envelope_for_import(record, keep_project))
        if len(chunk) == batch:
            sent += len(client.append(chunk))
            chunk = []
    if chunk:
        sent += len(client.append(chunk))
    return sent
