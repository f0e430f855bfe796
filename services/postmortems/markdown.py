"""A postmortem written in Markdown, parsed with markdown-it-py into `Postmortem` fields. Pure.

Sections are found by their heading text, whatever the level and the order, in English and Chinese
(`SECTION_WORDS`); a heading no field takes is merged into the recognized section above it when it is
deeper (a "### Trigger" under "## Root cause" stays root cause), otherwise it is reported in `unparsed`.
Metadata comes from YAML front matter, from two-column tables whose first column names a known key
(`| Services | checkout |`) and from `Key: value` lines (`**Date:** 2023-01-02`, `Severity: SEV1`,
`服务：订单`). Links are kept (`links`, later an observation's `raw_ref`). Each block (paragraph, list
item, table row, metadata value) that reads like an instruction is set aside as `quarantined`
(`instructions.instruction_reason`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from typing import Any, NamedTuple, get_args

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from schemas.ledger import storable
from services.common.errors import InvalidInput
from services.postmortems.html_blocks import read_html
from services.postmortems.instructions import instruction_reason, withheld_hint
from services.postmortems.model import (
    FIELD_LIMIT,
    MAX_DOCUMENT_CHARS,
    MAX_ITEMS,
    MAX_SYMPTOMS,
    SHORT_LIMIT,
    DocumentTooLarge,
    NotAPostmortem,
    Postmortem,
    Quarantined,
    RootCauseFrom,
    Section,
    TimelineEntry,
    clip,
)
from services.postmortems.prose import causal_paragraph, reads_as_incident
from services.postmortems.times import CHINA, parse_time, parse_zone

# (section, words): a heading belongs to the first section one of whose words it contains (English words
# on word boundaries, Chinese as substrings). Order matters: "Root cause and trigger" is a root cause.
SECTION_WORDS: tuple[tuple[Section, tuple[str, ...]], ...] = (
    # Azure's post-incident reviews ask "What went wrong and why?": a cause, before the lessons' "what went wrong"
    ("root_cause", ("what went wrong and why", "why it went wrong", "how this happened", "how it happened",
                    "how did this happen", "how did it happen")),
    ("lessons", ("lessons learned", "lessons", "what went well", "what went wrong", "where we got lucky",
                 "how'd we do", "how did we do", "what didn't go so well", "what went poorly",
                 "learnings", "经验教训", "教训", "经验总结", "反思", "总结与反思")),
    ("action_items", ("action items", "action item", "follow-up", "follow-ups", "follow up", "followups",
                      "corrective actions", "corrective action", "next steps", "preventive measures",
                      "remediation items", "改进措施", "改进项", "后续", "行动项", "待办", "整改", "优化措施")),
    ("root_cause", ("root cause", "root causes", "root-cause", "cause", "causes", "causal", "why it happened",
                    "why did this happen", "why did it happen", "why this happened", "what caused", "rca",
                    "technical details", "technical analysis",
                    "contributing factors", "contributing factor", "根因", "根本原因", "原因", "故障原因")),
    # a blog's "What we're doing to prevent this", a bare 改进: after the root cause, so "Root cause and
    # prevention" and 根因分析与改进 are causes
    ("action_items", ("preventative measures", "prevention", "prevent this", "prevent it", "prevent recurrence",
                      "what we are doing", "what we're doing", "what we are changing", "what we're changing",
                      "less likely", "less impactful", "where do we go from here", "改进")),
    # Atlassian's template names the failure "Fault" and may carry only "Five whys" for the cause: when no
    # root-cause section exists, the trigger's text stands in for it (as a trigger section's does)
    ("trigger", ("trigger", "triggers", "fault", "five whys", "5 whys", "触发", "诱因")),
    ("detection", ("detection", "detected", "how we found out", "发现", "监控告警")),
    ("resolution", ("resolution", "mitigation", "recovery", "remediation", "how we fixed", "fix",
                    "how did we respond", "how we responded",
                    "处理过程", "处理", "恢复", "解决", "止损", "修复", "应急")),
    ("timeline", ("timeline", "time line", "chronology", "sequence of events", "时间线", "时间轴", "时间线回顾",
                  "事件经过", "经过")),
    # what on-call saw: the symptoms, where a template names them apart from the impact
    ("impact", ("impact", "customer impact", "user impact", "影响", "影响范围", "symptoms", "symptom",
                "observed symptoms", "what we saw", "what users saw", "problem statement", "problem description",
                "what was impacted", "what was affected",
                "issue description", "现象", "故障现象", "问题现象", "异常现象", "故障表现", "问题描述")),
    ("summary", ("summary", "overview", "executive summary", "incident summary", "description", "what happened",
                 "tl;dr", "tldr",
                 "概述", "摘要", "概要", "简介", "事件描述", "故障描述", "背景")),
    ("metadata", ("metadata", "incident details", "details", "incident information", "incident info",
                  "基本信息", "事故信息", "故障信息")),
    # last: a bare "Problem" / "问题" names what was seen only when no other section's word is in the heading
    # ("问题原因" is a cause, "问题描述" a symptom already)
    ("impact", ("problem", "问题")),
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_DATE_IN_TEXT = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4} ?年 ?\d{1,2} ?月 ?\d{1,2} ?日"
                           rf"|\b{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b"
                           rf"|\b\d{{1,2}}(?:st|nd|rd|th)? {_MONTH},? \d{{4}}\b")
_GREETING = re.compile(r"^\W*(?:\w+\W+){0,4}\w+\s*[,，:：]$")  # "Hi all,", "Dear customers:", "尊敬的用户："
OPENING_WORDS = 12  # a paragraph this long (or twice as many Chinese characters) says what happened
PROSE_DATED = 3  # an undated document's date may be in its first paragraphs ("On June 2, 2019, ...")
_NUMBERING = re.compile(r"^[\s#*_>\-–—\d.、)）(（一二三四五六七八九十:：]+")

# `Key: value` and table keys -> field; `None`: a known key whose value no field takes (owner, status, ...)
META_KEYS: dict[str, str | None] = {}
for _name, _keys in (
    ("services", ("services", "service", "affected services", "affected service", "services affected",
                  "components", "affected components", "systems", "affected systems", "服务", "影响服务",
                  "涉及服务", "受影响服务", "涉及系统", "系统", "应用", "模块")),
    ("alert", ("alert", "alerts", "alert name", "alerting rule", "告警", "告警名称", "报警", "告警规则")),
    ("severity", ("severity", "sev", "priority", "incident severity", "level", "级别", "故障级别", "事故级别",
                  "等级", "严重程度", "故障等级")),
    ("started_at", ("date", "started", "start", "start time", "started at", "incident date", "began",
                    "日期", "时间", "发生时间", "开始时间", "故障时间", "发生日期", "故障开始时间")),
    ("resolved_at", ("resolved", "resolved at", "end", "end time", "ended", "recovered", "recovered at",
                     "恢复时间", "结束时间", "解决时间", "故障恢复时间")),
    ("environment", ("environment", "env", "region", "环境", "地域")),
    ("timezone", ("timezone", "time zone", "tz", "时区")),
    ("category", ("root cause category", "category", "cause category", "根因分类", "分类", "类别", "根因类别")),
    ("title", ("title", "incident", "incident title", "name", "标题", "事故名称", "故障名称", "事件名称")),
    ("root_cause", ("root cause", "root causes", "root cause(s)", "cause", "根因", "根本原因", "原因")),
    ("summary", ("summary", "摘要", "概述")),
    ("impact", ("impact", "user impact", "customer impact", "影响", "影响范围", "symptoms", "symptom", "现象",
                "故障现象")),
    ("resolution", ("resolution", "mitigation", "解决方案", "处理方式", "处理", "处理过程", "处理措施", "解决办法")),
    ("trigger", ("trigger", "触发", "诱因")),
    (None, ("owner", "owners", "author", "authors", "status", "incident commander", "ic", "reviewers",
            "participants", "duration", "detected", "detection", "ticket", "jira", "document status",
            "postmortem owner", "incident id", "id", "负责人", "作者", "状态", "参与人", "持续时间", "时长",
            "编号", "事故编号", "复盘人", "记录人", "值班", "故障编号")),
):
    for _k in _keys:
        META_KEYS[_k] = _name
_KEY_VALUE = re.compile(r"^\s*([^:：|]{1,40}?)\s*[:：]\s*(.+?)\s*$")
_SPLIT = re.compile(r"\s*[,;，；、/]\s*|\s+and\s+|\s*和\s*")
_TIME = re.compile(
    r"^\s*[*_`]*\s*("
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4}年\d{1,2}月\d{1,2}日|\d{1,2}月\d{1,2}日)?[ T]?"
    r"(?:\d{1,2}:\d{2}(?::\d{2})?)"
    r"(?:\s*(?:UTC|GMT|PST|PDT|EST|EDT|CET|CEST|CST|BST|JST|Z|[+-]\d{2}:?\d{2}))?"
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4}年\d{1,2}月\d{1,2}日)"
    r"\s*[*_`]*\s*[-–—:：|,，)]?\s*(.*)$")


@dataclass
class Block:
    kind: str  # paragraph | item | row | code | html (markup that shows no text: read for instructions only)
    text: str  # as shown (inline markup removed)
    source: str  # as written (what instruction detection reads: link targets, markup)
    cells: list[str] = field(default_factory=list)


@dataclass
class RawSection:
    level: int
    heading: str | None
    kind: Section | None
    blocks: list[Block] = field(default_factory=list)


def parse_markdown(content: str) -> Postmortem:
    """Parse a postmortem; raises DocumentTooLarge (413) or NotAPostmortem (422, naming what is missing)."""
    if len(content) > MAX_DOCUMENT_CHARS:
        raise DocumentTooLarge(len(content))
    front, body = split_front_matter(content)
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(body)
    links: list[str] = []
    sections = _sections(tokens, links)
    chinese = len(_CJK.findall(body)) * 3 > len(re.findall(r"[A-Za-z]", body))
    pm = _Builder(front, sections, links, chinese).build()
    missing = pm.missing()
    if missing:
        seen = ", ".join(pm.sections) or "none"
        parts = [f"sections recognized: {seen}", f"unparsed: {', '.join(pm.unparsed) or 'none'}", *withheld_hint(pm)]
        raise NotAPostmortem(missing, f" ({'; '.join(parts)})")
    return pm


class _FrontMatterLoader(yaml.SafeLoader):
    """YAML's safe loader without its timestamp type: a date stays the text it was (`parse_time` reads it in the
    document's zone), so `date: 2024-13-45` is an unreadable date, not a crash of the loader."""


_FrontMatterLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def split_front_matter(content: str) -> tuple[dict[str, Any], str]:
    """Front matter at the very start and the rest of the document: YAML (`---` ... `---` or `...`) or TOML
    (`+++` ... `+++`, as Hugo sites write it). Front matter neither can read is no front matter."""
    text = content.lstrip("\ufeff")
    lines = text.split("\n")
    opening = lines[0].strip()
    if opening not in ("---", "+++"):
        return {}, text
    ends = ("---", "...") if opening == "---" else ("+++",)
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ends:
            block = "\n".join(lines[1:i])
            try:
                data = yaml.load(block, Loader=_FrontMatterLoader) if opening == "---" else tomllib.loads(block)
            except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError, TypeError, OverflowError, RecursionError):
                return {}, text
            return (data if isinstance(data, dict) else {}), "\n".join(lines[i + 1:])
    return {}, text


def classify(heading: str) -> Section | None:
    """The section a heading names, or None."""
    text = _NUMBERING.sub("", heading).strip().lower()
    text = text.replace("(s)", "s").replace("\u2019", "'")  # "Contributing Factor(s)": the plural; "we’re"
    text = re.sub(r"[*_`#:：()（）\[\]]", " ", text).strip()
    for kind, pattern in _SECTION_PATTERNS:
        if pattern.search(text):
            return kind
    return None


# one pattern per entry of SECTION_WORDS, in its order: English words on word boundaries, Chinese as substrings
_SECTION_PATTERNS: tuple[tuple[Section, re.Pattern[str]], ...] = tuple(
    (kind, re.compile("|".join(re.escape(w) if _CJK.search(w) else rf"(?<![a-z]){re.escape(w)}(?![a-z])"
                               for w in words)))
    for kind, words in SECTION_WORDS)


# inline HTML a Markdown writer uses for formatting (`<b>`, `<br>`, `<span style=...>`): shown as its text, never
# as its tags; any other tag-like text (`<nil>` in a Go error, `<service-name>` in a command) is what it says
_INLINE_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(?:\s[^<>]*)?/?>")
_FORMATTING = frozenset({"a", "abbr", "b", "big", "cite", "code", "del", "dfn", "em", "font", "i", "img", "ins",
                         "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time",
                         "tt", "u", "var", "wbr"})
_BOLD_TAGS = frozenset({"b", "strong"})


def inline_html(fragment: str) -> str:
    """What one inline HTML fragment shows in a paragraph: `<br>` a line break, a formatting tag and a comment
    nothing, anything else as written. The paragraph's source keeps them all for the instruction rules."""
    if fragment.startswith("<!--"):
        return ""
    tag = _INLINE_TAG.fullmatch(fragment.strip())
    if tag is None:
        return fragment
    name = tag.group(2).lower()
    return "\n" if name == "br" else "" if name in _FORMATTING else fragment


def _label_source(tok: Token) -> str:
    """The paragraph as `label_of` reads it: its Markdown, with `<b>`/`<strong>` as `**` and `<br>` as a line
    break, so `<b>Root cause:</b><br>...` names its section as `**Root cause:**` does."""
    if not any(child.type == "html_inline" for child in tok.children or []):
        return tok.content

    def markdown(m: re.Match[str]) -> str:
        name = m.group(2).lower()
        return "**" if name in _BOLD_TAGS else "\n" if name == "br" else m.group(0)
    return _INLINE_TAG.sub(markdown, tok.content)


def _inline_text(tok: Token, links: list[str]) -> str:
    out: list[str] = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "html_inline":
            out.append(inline_html(child.content))
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "link_open":
            href = str(child.attrs.get("href") or "")
            if href and href not in links:
                links.append(href)
        elif child.type == "image":
            out.append(child.content)
    return "".join(out).strip()


_BOLD_LINE = re.compile(r"^(\*\*|__)([^*_\n]{1,80}?)\s*[:：]?\s*\1\s*[:：]?$")
BOLD_LEVEL = 7  # deeper than any Markdown heading (h1-h6)
# a plain line naming a section, as letters and plain-text exports write them ("事故概述：", "处理过程",
# "Root cause:"): short, no sentence punctuation, nothing after its colon
_PLAIN_LABEL = re.compile(r"^([^\n:：.。,，;；!！*_`|<>\[\]]{1,40}?)\s*([:：?？])?$")
LABEL_WORDS = 8


# a bold lead-in naming a section, its text on the same line ("**Resolution:** rolled back", "**Impact**: ..."),
# as postmortems written inside a larger section open their next part
_BOLD_LEAD = re.compile(r"^(\*\*|__)(?P<name>[^*_\n]{1,60}?)(?:\s*[:：]\s*\1|\1\s*[:：])[ \t]*(?P<text>\S.*)$")
_LEAD_FIELDS = frozenset(get_args(Section)) - {"metadata"}  # the sections a lead-in may open
# the sections whose `Key: value` lines `_Builder.metadata_blocks` reads
_METADATA_READ: frozenset[Section | None] = frozenset({None, "metadata", "summary"})


def _metadata_only(key: str) -> bool:
    """Whether `key` names metadata no section takes (`Root cause category`, `Severity`, `Detection`): its bold
    `**Key:** value` line is a metadata line wherever it stands, never a section."""
    k = _key(key)
    return k in META_KEYS and META_KEYS[k] not in _LEAD_FIELDS


class Label(NamedTuple):
    heading: str
    rest: str
    kind: Section
    lead: bool = False  # a bold lead-in: the rest starts on the label's own line


def label_of(paragraph: str) -> Label | None:
    """The heading, the rest of the paragraph and its section when a paragraph's first line names a section: a bold line
    ("**Root Cause**"), a line ending in a colon ("故障原因及处理过程："), or a paragraph of one short line
    ("处理过程", "What went wrong and why?"); None otherwise."""
    first, _, rest = paragraph.strip().partition("\n")
    first = first.strip()
    if (lead := _BOLD_LEAD.match(first)) is not None:
        name = lead.group("name").strip()
        kind = classify(name)
        if kind is None or kind == "metadata" or _metadata_only(name):
            return None
        return Label(name, "\n".join((lead.group("text"), rest)).strip(), kind, lead=True)
    if (bold := _BOLD_LINE.match(first)) is not None:
        name = bold.group(2).strip()
    elif (plain := _PLAIN_LABEL.match(first)) is not None and (plain.group(2) or not rest.strip()):
        name = plain.group(1).strip()
        if len(name.split()) > LABEL_WORDS or _TIME.match(name) or not re.search(r"\w", name):
            return None
    else:
        return None
    kind = classify(name)
    return Label(name, rest.strip(), kind) if kind is not None else None


def _sections(tokens: list[Token], links: list[str]) -> list[RawSection]:
    sections = [RawSection(level=0, heading=None, kind=None)]
    depth_list = 0
    paragraph = False
    row: list[tuple[str, str]] | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            heading = _inline_text(tokens[i + 1], links)
            sections.append(RawSection(level=int(tok.tag[1]), heading=heading, kind=classify(heading)))
            i += 3
            continue
        current = sections[-1]
        if tok.type == "paragraph_open":
            paragraph = True
        elif tok.type == "paragraph_close":
            paragraph = False
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            depth_list += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            depth_list -= 1
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            cells = [c[0] for c in row]
            current.blocks.append(Block("row", " | ".join(c for c in cells if c), " | ".join(c[1] for c in row),
                                        cells))
            row = None
        elif tok.type == "inline":
            text = _inline_text(tok, links)
            label = label_of(_label_source(tok)) if row is None and not depth_list and paragraph else None
            if label is not None and label.lead and current.kind in _METADATA_READ:
                label = None  # where `Key: value` lines are metadata, "**Impact:** ..." is one of them
            if label is not None:
                # a paragraph that opens with a section's name ("**Root Cause**", as word processors export
                # their headings; "处理过程：" in a letter): a heading below any written one, so it opens a
                # section inside the current; the paragraph's other lines are that section's first block
                sections.append(RawSection(level=BOLD_LEVEL, heading=label.heading, kind=label.kind))
                if label.rest:
                    shown = re.split(r"[:：]", text, maxsplit=1)[-1] if label.lead else text.partition("\n")[2]
                    sections[-1].blocks.append(Block("paragraph", shown.strip(), label.rest))
                i += 1
                continue
            if row is not None:
                row.append((text, tok.content))
            elif text:
                current.blocks.append(Block("item" if depth_list else "paragraph", text, tok.content))
        elif tok.type in ("fence", "code_block"):
            current.blocks.append(Block("code", tok.content.strip(), tok.content))
        elif tok.type == "html_block":
            # a wiki export's <h2>, <p>, <table> and <li>; every block of it carries what the instruction rules
            # judge of the whole (`html_blocks.HtmlRead.judged`) as its source
            read = read_html(tok.content, links)
            if depth_list:  # HTML inside a list item is that item
                text = " ".join(p.text for p in read.pieces if p.kind != "heading")
                current.blocks.append(Block("item" if text else "html", text, read.judged))
            elif not read.pieces:  # markup that shows nothing (a comment) is judged all the same
                current.blocks.append(Block("html", "", read.judged))
            else:
                for piece in read.pieces:
                    if piece.kind == "heading":
                        sections.append(RawSection(level=piece.level, heading=piece.text, kind=classify(piece.text)))
                    else:
                        sections[-1].blocks.append(Block(piece.kind, piece.text, read.judged, list(piece.cells)))
        i += 1
    return sections


def _plain_date(text: str) -> str:
    """`February 28th, 2017` -> `February 28, 2017`; `Sept. 4 2018` -> `Sep 4, 2018`; `2016 年 3 月 29 日` ->
    `2016年3月29日`: what `parse_time` reads."""
    text = re.sub(r" ?([年月日]) ?", r"\1", text)  # "2016 年 3 月 29 日", as Chinese typesetting spaces numbers
    text = re.sub(r"(\d)(?:st|nd|rd|th)\b", r"\1", text).replace(".", "")
    text = re.sub(r"\bSept\b", "Sep", text)
    return re.sub(r"^([A-Za-z]+) (\d{1,2}) (\d{4})$", r"\1 \2, \3", text)


TITLE_WORDS = 6  # a first heading this long (or 16 Chinese characters) names the document, not a section


def _is_title(s: RawSection) -> bool:
    """A document's first heading is its title when it is long ("Summary of the Amazon S3 Service Disruption in
    ...", "Corrective Action Update for the June 10th Outage") even if it contains a section's word."""
    return s.level == 1 and s.heading is not None and (
        len(s.heading.split()) >= TITLE_WORDS or len(_CJK.findall(s.heading)) >= 16)


def _key(text: str) -> str:
    return re.sub(r"[*_`]", "", text).strip().strip(":：").strip().lower()


class _Builder:
    def __init__(self, front: dict[str, Any], sections: list[RawSection], links: list[str],
                 chinese: bool = False) -> None:
        self.chinese = chinese
        self.front = front
        self.sections = sections
        self.links = links
        self.meta: dict[str, str] = {}
        self.quarantined: list[Quarantined] = []
        self.unparsed: list[str] = []
        self.preamble: list[Block] = []
        self.flow: list[tuple[Section | None, Block]] = []  # every paragraph, in document order, with its section
        self._story: bool | None = None
        self.said: list[str] = []  # the text of every paragraph, list item and table row (what the story is told in)
        self._verdicts: dict[str, str | None] = {}  # a source or text -> its instruction verdict

    # ------------------------------------------------------------ helpers
    def default_zone(self) -> tzinfo:
        """The zone of the document's times that name none: its `timezone` (`时区`) when given; else UTC+8 for a
        document written in Chinese (China has one zone; a 复盘 writes local time); else UTC."""
        _, zone = parse_zone(self.meta.get("timezone"))
        return zone or (CHINA if self.chinese else UTC)

    def clean(self, where: str, block: Block) -> str | None:
        reason = self.instruction(block)
        if reason:
            self.quarantined.append(Quarantined(field=where, text=clip(block.text or block.source), reason=reason))
            return None
        return block.text

    def clean_value(self, where: str, value: str) -> str | None:
        reason = instruction_reason(value)
        if reason:
            self.quarantined.append(Quarantined(field=where, text=clip(value), reason=reason))
            return None
        return value

    def take_meta(self, key: str, value: str, where: str) -> bool:
        """Record a metadata value when `key` is known; True when the key was known (the block is consumed)."""
        k = _key(key)
        if k not in META_KEYS:
            return False
        name = META_KEYS[k]
        if name is None:
            return True
        value = value.strip().strip("*` ").strip()
        clean = self.clean_value(f"metadata {name}", value)
        if clean and name not in self.meta:
            self.meta[name] = clean
        return True

    # ------------------------------------------------------------ assembly
    def grouped(self) -> list[RawSection]:
        """Recognized sections with their deeper unrecognized subsections merged in (a subsection of an
        unrecognized section stays unrecognized); a document's first unrecognized top heading is its title
        and its blocks are the preamble's (a `### Title` above `## Impact` is still the title)."""
        out: list[RawSection] = []
        stack: list[RawSection] = []  # the open headings, outermost first (as grouped)
        title_taken = False
        for s in self.sections:
            if s.heading is None:
                out.append(RawSection(s.level, None, None, list(s.blocks)))
                continue
            while stack and stack[-1].level >= s.level:
                stack.pop()
            if (s.kind is None or _is_title(s)) and not title_taken and len(out) == 1:  # the first, any level
                title_taken = True
                self.meta.setdefault("heading_title", s.heading)
                out[0].blocks.extend(s.blocks)
                continue
            parent = stack[-1] if stack else None
            if s.kind is None and parent is not None and parent.heading is not None and parent.kind != "metadata":
                parent.blocks.extend(s.blocks)  # a deeper, unnamed part of the section above
                stack.append(RawSection(s.level, s.heading, parent.kind, parent.blocks))
                continue
            group = RawSection(s.level, s.heading, s.kind, list(s.blocks))
            out.append(group)
            stack.append(group)
        return out

    def build(self) -> Postmortem:
        groups = self.grouped()
        self.front_matter()
        by_kind: dict[str, list[Block]] = {}
        order: list[str] = []
        for g in groups:
            if g.kind in _METADATA_READ:
                g.blocks = self.metadata_blocks(g.blocks)
            else:
                g.blocks = [b for b in g.blocks if not self.bold_metadata(b)]
            if g.kind != "metadata":
                self.flow.extend((g.kind, b) for b in g.blocks if b.kind == "paragraph")
                self.said.extend(b.text for b in g.blocks if b.kind in ("paragraph", "item", "row"))
            if g.heading is None:  # the preamble: its prose (not the lines that cite a source) summarises
                self.preamble = [b for b in g.blocks if b.kind == "paragraph" and "http" not in b.source
                                 and not _GREETING.match(b.text)]
                continue
            if g.kind is None or g.kind == "metadata":
                if g.heading is not None and g.kind is None and g.blocks:
                    self.unparsed.append(g.heading)
                continue
            if g.kind not in by_kind:
                order.append(g.kind)
            by_kind.setdefault(g.kind, []).extend(g.blocks)
        return self.fields(by_kind, order)

    def front_matter(self) -> None:
        for key, value in self.front.items():
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value)
            elif isinstance(value, (date, datetime)):
                value = value.isoformat()
            if isinstance(value, (str, int, float)):
                name = str(key).replace("_", " ")
                if _key(name) == "symptoms":
                    self.meta.setdefault("impact", str(value))
                elif META_KEYS.get(_key(name)) == "title":
                    if (clean := self.clean_value("metadata title", str(value))) is not None:
                        self.meta.setdefault("front_title", clean)
                else:
                    self.take_meta(name, str(value), "front matter")

    def bold_metadata(self, b: Block) -> bool:
        """Whether `b` is a bold `**Key:** value` line of a metadata key (`**Severity:** SEV2`, `**Root cause
        category:** ...`) inside a section, taken as metadata as it is in the preamble: the section a bold lead-in
        opened would otherwise swallow the lines after it."""
        if b.kind != "paragraph" or "\n" in b.text or not b.source.lstrip().startswith(("**", "__", "<b>", "<strong>")):
            return False
        m = _KEY_VALUE.match(b.text)
        return m is not None and _metadata_only(m[1]) and self.take_meta(m[1], m[2], "metadata line")

    def metadata_blocks(self, blocks: list[Block]) -> list[Block]:
        """Take metadata out of tables and `Key: value` lines; return the blocks that are not metadata."""
        rest: list[Block] = []
        for b in blocks:
            if b.kind == "row" and len(b.cells) >= 2:
                if _key(b.cells[0]) in ("field", "key", "item", "项目", "字段", ""):
                    continue  # a header row
                if self.take_meta(b.cells[0], " ".join(c for c in b.cells[1:] if c), "metadata table"):
                    continue
                rest.append(b)
                continue
            if b.kind in ("paragraph", "item"):
                kept = []
                for line in b.text.split("\n"):
                    m = _KEY_VALUE.match(line)
                    if m and self.take_meta(m[1], m[2], "metadata line"):
                        continue
                    kept.append(line)
                if kept:
                    text = "\n".join(kept).strip()
                    if text:
                        source = b.source if len(kept) == len(b.text.split("\n")) else text
                        rest.append(Block(b.kind, text, source))
                continue
            rest.append(b)
        return rest

    def text_of(self, where: str, blocks: list[Block]) -> str | None:
        parts = [t for b in blocks if b.kind != "code" and (t := self.clean(where, b))]
        return clip("\n".join(parts)) if parts else None

    def items_of(self, where: str, blocks: list[Block]) -> list[str]:
        out: list[str] = []
        for b in blocks:
            if b.kind == "code":
                continue
            if b.kind == "row":
                if not b.cells or _key(b.cells[0]) in ("action", "action item", "item", "task", "措施", "事项",
                                                        "改进措施", "行动项", "description", "描述"):
                    continue
                b = Block("row", b.cells[0] + (f" ({', '.join(c for c in b.cells[1:] if c)})"
                                               if any(b.cells[1:]) else ""), b.source)
            text = self.clean(where, b)
            if text:
                out.append(clip(text))
        return out[:MAX_ITEMS]

    def timeline_of(self, blocks: list[Block]) -> list[TimelineEntry]:
        entries: list[TimelineEntry] = []
        for b in blocks:
            if b.kind == "row":
                if len(b.cells) >= 2 and not _TIME.match(b.cells[0]):
                    continue  # header row
                lines: list[tuple[str | None, str]] = (
                    [(b.cells[0], " ".join(c for c in b.cells[1:] if c))] if len(b.cells) >= 2 else [])
            else:
                lines = []
                for line in b.text.split("\n"):
                    m = _TIME.match(line)
                    lines.append((m[1].strip(), m[2].strip()) if m and m[2].strip() else (None, line.strip()))
            flagged = instruction_reason(b.source)
            for at, text in lines:
                reason = flagged or instruction_reason(text)
                if reason:
                    self.quarantined.append(Quarantined(field="timeline", text=clip(text), reason=reason))
                elif text:
                    entries.append(TimelineEntry(at=at or None, text=clip(text)))
        return entries[:MAX_ITEMS]

    def started_at(self, title: str | None, timeline: list[TimelineEntry]) -> datetime | None:
        """When it started: the document's date or start time, else the earliest dated timeline entry, else a date
        in the title ("2024-06-01 支付网关故障报告") or in its first paragraphs ("On February 28th, 2017, ...").
        Without one the import is dated when it arrives, and the tenant's history, which its calibration walks in
        time order, would be in import order."""
        zone = self.default_zone()
        if (written := self.declared("started_at")) is not None:
            return written
        dated = [t for e in timeline if e.at and (t := parse_time(e.at, zone)) is not None and storable(t)]
        if dated:
            return min(dated)
        for text in [title or "", *self.prose(PROSE_FIRST)[:PROSE_DATED]]:
            if (found := _DATE_IN_TEXT.search(text)) is not None:
                guess = parse_time(_plain_date(found.group(0)), zone)
                return guess if guess is not None and storable(guess) else None
        return None

    def declared(self, name: str) -> datetime | None:
        """The document's own start or end time; one the ledger cannot store (before 1970, after 8999: a typo
        like 0001-01-01) is a 422 naming it, not a guess."""
        written = parse_time(self.meta.get(name), self.default_zone())
        if written is not None and not storable(written):
            raise InvalidInput(f"content: {name} {self.meta.get(name)!s:.40} is outside 1970-01-01 to 8999-12-31",
                               field=f"content.{name}")
        return written

    def fields(self, by_kind: dict[str, list[Block]], order: list[str]) -> Postmortem:
        meta = self.meta
        summary = self.text_of("summary", by_kind.get("summary", []))
        if summary is None and "summary" in meta:
            summary = meta["summary"]
        if summary is None and not by_kind.get("impact") and "impact" not in meta:
            summary = self.text_of("summary", self.preamble)
        impact_blocks = [b for b in by_kind.get("impact", []) if b.kind != "code"]
        symptoms = [clip(t) for b in impact_blocks if (t := self.clean("impact", b))]
        if not symptoms and "impact" in meta:
            symptoms = [meta["impact"]]
        timeline = self.timeline_of(by_kind.get("timeline", []))
        symptoms_from = "impact" if symptoms else "none"
        if not symptoms and summary:
            symptoms, symptoms_from = [summary], "summary"
        elif not symptoms and timeline:
            symptoms, symptoms_from = [e.text for e in timeline[:3]], "timeline"
        if not symptoms and self.story() and (opening := self.prose(("resolution", "timeline", "detection", None))):
            # a letter's first paragraph that says something ("Hi all," and "尊敬的用户：" do not): what was seen
            said = [t for t in opening if len(t.split()) >= OPENING_WORDS or len(_CJK.findall(t)) >= 2 * OPENING_WORDS]
            symptoms, symptoms_from = [clip((said or opening)[0])], "prose"
        root_blocks = by_kind.get("root_cause", [])
        root_cause = self.text_of("root_cause", root_blocks)
        trigger = self.text_of("trigger", by_kind.get("trigger", []))
        withheld = bool(root_blocks) and root_cause is None
        root_cause_from: RootCauseFrom = "section"
        if root_cause is None and not withheld:
            root_cause, root_cause_from = (meta["root_cause"], "metadata") if meta.get("root_cause") else (
                trigger, "trigger")
            if root_cause is None and by_kind.get("trigger"):
                withheld = True
        if root_cause is None and not withheld and self.story():
            stated = causal_paragraph(self.prose(PROSE_FIRST)) or causal_paragraph(self.prose(PROSE_THEN))
            root_cause, root_cause_from = stated, "prose"
        resolution = self.text_of("resolution", by_kind.get("resolution", [])) or meta.get("resolution")
        services = [s for s in (x.strip() for x in _SPLIT.split(meta.get("services", ""))) if s]
        title = self.title() or None
        if title and instruction_reason(title):
            self.quarantined.append(Quarantined(field="title", text=clip(title), reason="instruction"))
            title = None
        return Postmortem(
            format="markdown", title=clip(title, SHORT_LIMIT) if title else None,
            started_at=self.started_at(title, timeline),
            resolved_at=self.declared("resolved_at"),
            services=[clip(s, SHORT_LIMIT) for s in services][:50],
            alert=clip(meta["alert"], SHORT_LIMIT) if meta.get("alert") else None,
            severity=clip(meta["severity"], SHORT_LIMIT) if meta.get("severity") else None,
            environment=clip(meta["environment"], SHORT_LIMIT) if meta.get("environment") else None,
            summary=summary, symptoms=symptoms[:MAX_SYMPTOMS], symptoms_from=symptoms_from,
            root_cause=clip(root_cause, FIELD_LIMIT) if root_cause else None,
            root_cause_category=_category(meta.get("category")),
            trigger=trigger, detection=self.text_of("detection", by_kind.get("detection", [])),
            resolution=resolution,
            action_items=self.items_of("action_items", by_kind.get("action_items", [])),
            lessons=self.items_of("lessons", by_kind.get("lessons", [])),
            timeline=timeline, links=self.links[:MAX_ITEMS], sections=order, unparsed=self.unparsed,
            quarantined=self.quarantined, root_cause_withheld=withheld,
            root_cause_from=root_cause_from if root_cause else None,
        )

    def story(self) -> bool:
        """Whether the document reads as an incident's story (`prose.reads_as_incident`), so that its prose may
        stand for what a section would have said; read only for a document that lacks such a section."""
        if self._story is None:
            self._story = reads_as_incident([self.title(), *(s.heading or "" for s in self.sections), *self.said])
        return self._story

    def title(self) -> str:
        return self.meta.get("front_title") or self.meta.get("heading_title") or self.meta.get("title") or ""

    def prose(self, sections: tuple[Section | None, ...]) -> list[str]:
        """The paragraphs of these sections (None: unrecognized ones, and the preamble) in document order,
        without the ones that read like an instruction (each section's own reading quarantines those)."""
        return [b.text for kind, b in self.flow if kind in sections and not self.instruction(b)]

    def instruction(self, block: Block) -> str | None:
        """`instruction_reason` of a block's source, else of its text, each asked once per document (the blocks of
        one HTML block share its source)."""
        return self.verdict(block.source) or self.verdict(block.text)

    def verdict(self, text: str) -> str | None:
        if text not in self._verdicts:
            self._verdicts[text] = instruction_reason(text)
        return self._verdicts[text]


# where a document without a root-cause section states its cause: the narrative first (the preamble, the summary,
# what was seen, unrecognized sections), then the story of the response
PROSE_FIRST: tuple[Section | None, ...] = (None, "summary", "impact", "detection")
PROSE_THEN: tuple[Section | None, ...] = ("resolution", "timeline", "lessons")


def _category(value: str | None) -> str | None:
    """A category as a lowercase identifier (`Bad deploy` -> `bad_deploy`); Chinese kept as written."""
    if not value:
        return None
    ident = re.sub(r"[^\w]+", "_", value.strip().lower()).strip("_")
    return ident[:SHORT_LIMIT] or None
