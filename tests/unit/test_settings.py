"""docs/settings.md is the generated table of every setting; secrets are read from files and never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.settings import Settings
from services.common.settings_doc import render

DOC = Path(__file__).parents[2] / "docs" / "settings.md"


def test_the_settings_table_is_current() -> None:
    assert DOC.read_text() == render(), "regenerate: python -m services.common.settings_doc > docs/settings.md"
    for name in Settings.model_fields:
        assert f"`OPSLORE_{name.upper()}`" in DOC.read_text()


def test_secrets_come_from_a_mounted_directory_and_stay_out_of_reprs(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "opslore_database_url").write_text("postgresql://app:from-file@db:5432/opslore")
    (tmp_path / "opslore_admin_token").write_text("tok-from-file")
    for var in ("OPSLORE_DATABASE_URL", "OPSLORE_ADMIN_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    s = Settings(_secrets_dir=tmp_path)
    assert s.database_url.endswith("from-file@db:5432/opslore") and s.admin_token == "tok-from-file"
    assert "from-file" not in repr(s)
    monkeypatch.setenv("OPSLORE_ADMIN_TOKEN", "tok-from-env")
    assert Settings(_secrets_dir=tmp_path).admin_token == "tok-from-env"
