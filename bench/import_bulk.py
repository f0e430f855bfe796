"""Importing and bulk-approving a team's postmortems, end to end (issue #39): `BENCH_IMPORT_DOCUMENTS` (1,000)
Markdown postmortems, the real-world Markdown history (`replay/realworld/markdown`) repeated under other file
names, imported into a fresh tenant as `opslore import postmortems` does (one `POST /v1/postmortems` each), the
projector's candidates awaited, then every imported candidate approved as `opslore review approve --all
--imported` does (one approval each: its version, lexical document and embedding written in its transaction).
Against the running stack (`make up`). JSON in bench/results/import-bulk-<time>.json.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.run import log, write_result
from services.cli.client import OpsloreClient
from services.cli.postmortems import Tally, bulk_review, documents, one
from services.common.settings import get_settings

SOURCE = Path(__file__).resolve().parents[1] / "replay" / "realworld" / "markdown"
COUNT = int(os.environ.get("BENCH_IMPORT_DOCUMENTS", "1000"))


def write_documents(where: Path, count: int) -> int:
    files = sorted(SOURCE.glob("*.md"))
    for i in range(count):
        f = files[i % len(files)]
        (where / f"{f.stem}-copy{i // len(files):02d}.md").write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    return count


def pending_imported(client: OpsloreClient) -> int:
    return sum(1 for _ in client.candidates(state="pending", imported="true"))


def main() -> None:
    settings = get_settings()
    admin = OpsloreClient(settings.api_url, settings.admin_token)
    tenant = f"bench-import-{uuid.uuid4().hex[:8]}"
    client = OpsloreClient(settings.api_url, admin.create_key(tenant, "reviewer", None))
    doc: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(), "documents": COUNT, "tenant": tenant,
                           "embedding": settings.embedding, "engine": settings.embedding_engine,
                           "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "postmortems"
        where.mkdir()
        write_documents(where, COUNT)
        tally = Tally()
        t0 = time.perf_counter()
        for path, ref in documents([where]):
            one(path, ref, client, tally)
        import_s = time.perf_counter() - t0
    log(f"import: {len(tally.imported)} imported, {len(tally.refused)} refused in {import_s:.0f}s")
    t1 = time.perf_counter()
    seen, still = -1, 0
    while still < 3 and time.perf_counter() - t1 < 600:  # the projector's candidates: stable for 3 polls
        n = pending_imported(client)
        still = still + 1 if n == seen else 0
        seen = n
        time.sleep(2)
    candidates_s = time.perf_counter() - t1 - 6
    log(f"import: {seen} candidates pending after {candidates_s:.0f}s")
    t2 = time.perf_counter()
    outcome = bulk_review(client, approve=True, imported=True, reason="bench: bulk approval", dry_run=False)
    approve_s = time.perf_counter() - t2
    total = time.perf_counter() - t0
    doc.update({"imported": len(tally.imported), "refused": len(tally.refused), "import_seconds": round(import_s, 1),
                "import_documents_per_s": round(COUNT / import_s, 1), "candidates_pending": seen,
                "candidates_wait_seconds": round(candidates_s, 1), "approved": len(outcome.done),
                "skipped": dict(Counter(reason for _, reason in outcome.skipped)),
                "approve_seconds": round(approve_s, 1),
                "approvals_per_s": round(len(outcome.done) / approve_s, 1) if approve_s else None,
                "end_to_end_seconds": round(total, 1), "goal_seconds": 300,
                "load_average_at_end": [round(x, 2) for x in os.getloadavg()]})
    write_result("import-bulk", doc)


if __name__ == "__main__":
    main()
