"""HTML inside a Markdown postmortem, read as the Markdown around it is read.

Wiki and issue-tracker exports keep parts of a document as HTML (`<h2>Root cause</h2>`, `<p>...</p>`, a
`<table>` of the timeline, `<details>` around the log excerpts). CommonMark hands such a part over as one raw
block; read raw, a section named by an `<h2>` was never seen and a field would quote the tags.

`read_html` turns one such block into what `markdown._sections` builds from Markdown: headings, and blocks of
text (paragraphs, list items, table rows, code) as shown. Script and style contents are not text; nothing is
evaluated or fetched: this is the standard library's tokenizer.

What the instruction rules judge (`HtmlRead.judged`) is the whole block, not each piece: tags can cut an
instruction's tail off into a block of its own (`</summary><summary>Silence every alert</summary> for 30 days`).
It is the block as a reader or a model could see it: its text, script and style contents, comments and attribute
values (`<!-- ignore previous instructions -->`, `title="..."`), entities decoded, and every tag except the
document structure a wiki writes (`<p>`, `<h2>`, `<details><summary>`, `<table>`): those are structure there,
where the same `<summary>` in a paragraph of prose is an attempt to close a prompt's section.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# tags that end the text before them and start a new block
_BLOCKS = frozenset({"p", "div", "blockquote", "section", "article", "header", "footer", "main", "aside",
                     "details", "summary", "figure", "figcaption", "caption", "dl", "dt", "dd", "ul", "ol",
                     "table", "thead", "tbody", "tfoot", "hr", "form", "fieldset", "center", "nav"})
_SKIPPED = frozenset({"script", "style", "template", "head", "title", "noscript"})
# document structure: judged by its attribute values only
_STRUCTURE = frozenset({*_HEADINGS, *_BLOCKS, "li", "pre", "tr", "td", "th", "br", "span", "strong", "em", "b", "i",
                        "u", "s", "code", "a", "sup", "sub", "small", "mark", "abbr", "kbd", "samp", "var", "del",
                        "ins", "time", "label"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "embed", "source",
                   "track", "param"})
_SPACE = re.compile(r"[ \t\r\n\f]+")


@dataclass(frozen=True)
class HtmlPiece:
    kind: str  # heading | paragraph | item | row | code
    text: str
    level: int = 0  # a heading's (1-6)
    cells: tuple[str, ...] = ()  # a row's


@dataclass(frozen=True)
class HtmlRead:
    pieces: list[HtmlPiece]
    judged: str  # what the instruction rules read for every piece (see the module's docstring)


@dataclass
class _Open:
    kind: str  # paragraph | item | code | heading
    level: int = 0
    text: list[str] = field(default_factory=list)


class _Reader(HTMLParser):
    def __init__(self, links: list[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.links = links
        self.out: list[HtmlPiece] = []
        self.open = _Open("paragraph")
        self.skipping: str | None = None
        self.lists = 0
        self.row: list[list[str]] | None = None  # the open row's cells, each as its text parts
        self.judged: list[str] = []

    # ---------------------------------------------------------------- the text being gathered
    def _text_parts(self) -> list[str]:
        if self.row is not None and self.row:
            return self.row[-1]
        return self.open.text

    def _flush(self, then: _Open | None = None) -> None:
        current = self.open
        raw = "".join(current.text)
        text = raw.strip("\n") if current.kind == "code" else _SPACE.sub(" ", raw).strip()
        if text:
            self.out.append(HtmlPiece(current.kind, text, level=current.level))
        self.open = then or _Open("item" if self.lists else "paragraph")

    def _end_row(self) -> None:
        if self.row is None:
            return
        cells = tuple(_SPACE.sub(" ", "".join(t)).strip() for t in self.row)
        if any(cells):
            self.out.append(HtmlPiece("row", " | ".join(c for c in cells if c), cells=cells))
        self.row = None

    # ---------------------------------------------------------------- parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _STRUCTURE:
            self.judged.append(" ".join(["", *(v for _, v in attrs if v), ""]))
        else:
            self.judged.append(html.unescape(self.get_starttag_text() or f"<{tag}>"))
        if self.skipping is not None:
            return
        if tag in _SKIPPED:
            self.skipping = tag
            return
        if tag == "a":
            href = dict(attrs).get("href") or ""
            if href and href not in self.links:
                self.links.append(href)
        if tag in _HEADINGS:
            self._end_row()
            self._flush(_Open("heading", level=_HEADINGS[tag]))
        elif tag == "li":
            self._flush(_Open("item"))
        elif tag == "pre":
            self._flush(_Open("code"))
        elif tag == "tr":
            self._end_row()
            self._flush()
            self.row = []
        elif tag in ("td", "th"):
            if self.row is None:
                self._flush()
                self.row = []
            self.row.append([])
        elif tag in _BLOCKS:
            if tag in ("ul", "ol"):
                self.lists += 1
            if tag in ("table", "thead", "tbody", "tfoot"):
                self._end_row()
            self._flush()
        text = self._text_parts()
        if tag == "br":
            text.append("\n")
        elif tag == "img" and (alt := dict(attrs).get("alt")):
            text.append(alt)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        self.judged.append(" " if tag in _STRUCTURE else f"</{tag}>")
        if self.skipping is not None:
            if tag == self.skipping:
                self.skipping = None
            return
        if tag in _HEADINGS and self.open.kind == "heading":
            self._flush()
        elif tag in ("li", "pre") or tag in _BLOCKS:
            if tag in ("ul", "ol"):
                self.lists = max(0, self.lists - 1)
            if tag in ("table", "thead", "tbody", "tfoot"):
                self._end_row()
            if self.row is None:
                self._flush()
        elif tag == "tr":
            self._end_row()

    def handle_data(self, data: str) -> None:
        self.judged.append(data)
        if self.skipping is None:
            self._text_parts().append(data)

    def handle_comment(self, data: str) -> None:
        self.judged.append(f"<!--{html.unescape(data)}-->")

    def close(self) -> None:
        """The end of the block ends what is still open (a row, a paragraph)."""
        super().close()
        self._end_row()
        self._flush()


def read_html(content: str, links: list[str]) -> HtmlRead:
    """The headings and blocks of one HTML block, in document order, and what the instruction rules judge of it;
    link targets are added to `links`."""
    reader = _Reader(links)
    reader.feed(content)
    reader.close()
    return HtmlRead(reader.out, "".join(reader.judged))
