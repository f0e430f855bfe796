"""The accepted previous checksums of rewritten migrations (`schemas/migrations/accepted_checksums.txt`): the file
parses, names only migrations that exist, and a line that could accept by mistake is refused."""

from __future__ import annotations

import pytest

from services.common.migrate import accepted_checksums, migration_files, parse_accepted, sha256

_SHA = sha256("old text")


def test_the_committed_file_parses_and_names_existing_migrations() -> None:
    accepted = accepted_checksums()
    names = {name for name, _ in migration_files()}
    assert accepted and set(accepted) <= names
    current = dict(migration_files())
    assert all(sha256(current[name]) not in digests for name, digests in accepted.items())


def test_comments_blank_lines_and_several_texts_of_one_migration() -> None:
    text = f"# why\n\n0005_a.sql {_SHA} squash\n0005_a.sql {sha256('older')} earlier\n"
    assert parse_accepted(text, {"0005_a.sql"}) == {"0005_a.sql": frozenset({_SHA, sha256("older")})}


@pytest.mark.parametrize("line", [
    f"0006_missing.sql {_SHA} squash",          # names no migration
    f"0005_a.sql {_SHA.upper()} squash",        # not a lower-case SHA-256
    f"0005_a.sql {_SHA[:-1]} squash",           # too short
    f"0005_a.sql {_SHA}",                       # no reason
])
def test_a_line_that_could_accept_by_mistake_is_refused(line: str) -> None:
    with pytest.raises(ValueError, match=r"accepted_checksums\.txt line 1"):
        parse_accepted(line + "\n", {"0005_a.sql"})
