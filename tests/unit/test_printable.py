"""Evidence is shown escaped wherever a person or a model reads it (issue 30): `printable`, the briefing's
`rendered` text, the review UI's templates and the CLI."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from schemas.api import CheckView, Hint, Warning_
from services.api.ui import templates
from services.briefing.render import render
from services.cli import main as cli
from services.cli.terminal import shown
from services.common.printable import printable

ANSI = "\x1b[31mERROR\x1b[0m pool exhausted"
TOOLS_PRINT = f"{ANSI}\x0cnext page\x08\x07 bell\u2028after"
ACTIVE = set("\x1b\x0c\x08\x07\u2028\r")


def test_control_characters_separators_and_bidi_become_visible_escapes() -> None:
    assert printable(ANSI) == "\\x1b[31mERROR\\x1b[0m pool exhausted"
    assert printable(TOOLS_PRINT) == "\\x1b[31mERROR\\x1b[0m pool exhausted\\x0cnext page\\x08\\x07 bell\\u2028after"
    assert printable("a\tb\nc\rd\x7f\x85\u2029\u202eevil\u2066") == "a\tb\nc\\x0dd\\x7f\\x85\\u2029\\u202eevil\\u2066"
    assert printable("a\tb\nc", one_line=True) == "a\\x09b\\x0ac"
    plain = "数据库连接池耗尽 C:\\temp [red]"
    assert printable(plain) is plain  # ordinary text is untouched (and not copied)


@given(st.text())
def test_nothing_active_survives(text: str) -> None:
    out = printable(text, one_line=True)
    assert not any(ch in out for ch in ACTIVE | {"\n", "\x00"})
    assert all(not (0 <= ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F) for ch in out)


def _hint(text: str) -> Hint:
    return Hint(family_id=uuid.uuid4(), version=1, memory_type="episodic", summary=text, root_cause=f"cause {text}",
                confidence=0.7, score=0.9, source_incidents=["INC-1"], evidence=[],
                warnings=[Warning_(code="untrusted_source", message=f"quoted {text}")],
                verify_with=[CheckView(source="logs", query=f"grep {text}", expect="ERROR\nfake line")],
                valid_until=datetime(2030, 1, 1, tzinfo=UTC), last_verified_at=None)


def test_rendered_briefing_text_shows_escapes_one_line_per_field() -> None:
    text = render([_hint(TOOLS_PRINT)])
    assert not ACTIVE & set(text)
    assert "\\x1b[31mERROR\\x1b[0m pool exhausted\\x0cnext page\\x08\\x07 bell\\u2028after" in text
    assert "ERROR\\x0afake line" in text  # a newline in evidence cannot start a line of the briefing
    assert len(text.splitlines()) == 4  # header, the hint, its warning, its check


def test_every_template_expression_is_shown_escaped_then_html_escaped() -> None:
    page = templates.env.from_string("<p>{{ s }}</p><i>{{ n }}</i>").render(s=f"<b>{TOOLS_PRINT}</b>", n=3)
    assert page == ("<p>&lt;b&gt;\\x1b[31mERROR\\x1b[0m pool exhausted\\x0cnext page\\x08\\x07 bell\\u2028after"
                    "&lt;/b&gt;</p><i>3</i>")


def test_the_cli_prints_escapes_and_no_markup_from_data(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=buffer, force_terminal=True, color_system=None, width=400))
    hint = _hint(f"{TOOLS_PRINT} [red]not markup[/red]").model_dump(mode="json")
    cli.print_briefing({"hints": [hint], "token_estimate": 10, "degraded": []})
    out = buffer.getvalue()
    assert "\x1b" not in out and "\x07" not in out and "\x08" not in out and "\u2028" not in out
    assert "\\x1b[31mERROR\\x1b[0m pool exhausted" in out and "[red]not markup[/red]" in out
    assert shown("[bold]x\x1b") == "\\[bold]x\\x1b"
