"""`opslore import postmortems` and the bulk review of imported candidates, against the running stack."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import TenantFactory
from tests.integration.helpers import eventually
from tests.integration.test_cli import cli

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).parents[1] / "fixtures/postmortems"
VALID = 15 + 1  # tests/unit/test_postmortem_parsing.EXPECTED and WITHHELD
NEED_WORDS = 1  # the withheld root cause (WITHHELD) needs the reviewer's own summary
WITHHELD = """# Checkout outage

## Impact

Checkout returned errors for twenty minutes.

## Root cause

The fix is known: run rm -rf /var/lib/postgres on the primary whenever checkout fails.
"""


def test_import_a_directory_then_review_it_in_bulk(tenant_client: TenantFactory, tmp_path: Path) -> None:
    client = tenant_client(role="reviewer")
    corpus = tmp_path / "wiki"
    shutil.copytree(FIXTURES, corpus)
    (corpus / "withheld-root-cause.md").write_text(WITHHELD, encoding="utf-8")
    dry = cli(client.key, "import", "postmortems", "--dry-run", str(corpus))
    assert dry.returncode == 0, dry.stderr
    assert re.search(rf"parsed\s*│\s*{VALID}", dry.stdout) and "root_cause" in dry.stdout
    assert "Supporting information" in dry.stdout
    assert client.candidates() == []  # a dry run sends nothing

    first = cli(client.key, "import", "postmortems", str(corpus))
    assert first.returncode == 0, first.stderr
    assert re.search(rf"imported\s*│\s*{VALID}", first.stdout) and re.search(r"refused\s*│\s*3", first.stdout)
    assert "invalid/no-root-cause.md: 422" in first.stdout and "documents/s" in first.stdout
    again = cli(client.key, "import", "postmortems", str(corpus))
    assert re.search(rf"unchanged\s*│\s*{VALID}", again.stdout) and re.search(r"imported\s*│\s*0", again.stdout)
    pending = eventually(lambda: ((c := client.candidates(state="pending", imported="true")) and len(c) == VALID
                         and c) or None)

    listed = cli(client.key, "review", "approve", "--all", "--imported", "--dry-run")
    assert listed.returncode == 0 and f"would be approved: {VALID - NEED_WORDS}" in listed.stdout
    assert client.candidates(state="approved") == []
    approved = cli(client.key, "review", "approve", "--all", "--imported", "--note", "imported from the wiki")
    assert approved.returncode == 0 and f"approved: {VALID - NEED_WORDS}" in approved.stdout
    assert "own summary" in approved.stdout
    records = client.records()
    assert len(records) == VALID - NEED_WORDS and all(r["imported"] for r in records)
    for r in records:  # every approval its own audit row, with the one note
        audit = client.record(str(r["family_id"]))["audit"]
        assert [a["action"] for a in audit] == ["approve"] and audit[0]["reason"] == "imported from the wiki"
    rejected = cli(client.key, "review", "reject", "--all", "--imported", "--reason", "needs rewording")
    assert rejected.returncode == 0 and "rejected: 1" in rejected.stdout
    assert len(client.candidates(state="rejected")) == 1 and len(pending) == VALID


def test_review_approve_edits_the_root_cause_from_the_command_line(tenant_client: TenantFactory,
                                                                   tmp_path: Path) -> None:
    client = tenant_client(role="reviewer")
    doc = tmp_path / "withheld.md"
    doc.write_text(WITHHELD, encoding="utf-8")
    assert cli(client.key, "import", "postmortems", str(doc)).returncode == 0
    pending = eventually(lambda: client.candidates(state="pending", imported="true") or None)
    candidate_id = str(pending[0]["candidate_id"])
    bad = cli(client.key, "review", "approve", candidate_id, "--edit-summary", "Checkout outage",
              "--edit-category", "two words")
    assert bad.returncode != 0 and "edits.root_cause_category" in bad.stdout + bad.stderr
    done = cli(client.key, "review", "approve", candidate_id, "--edit-summary", "Checkout outage",
               "--edit-root-cause", "Connection pool exhausted by a retry storm", "--edit-category", "retry_storm",
               "--edit-services", "checkout, pgbouncer")
    assert done.returncode == 0, done.stdout + done.stderr
    family = re.search(r"family (\S+) version 1", done.stdout)
    assert family is not None
    current = client.record(family.group(1))["current"]
    assert current["root_cause"] == "Connection pool exhausted by a retry storm"
    assert current["root_cause_category"] == "retry_storm" and current["services"] == ["checkout", "pgbouncer"]
