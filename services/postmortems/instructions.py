"""Instruction-like text inside a postmortem: found, so that it is quoted and never promoted. Pure.

A postmortem is the team's own account (`user_stated`), but it is a document: it quotes tickets, chat and
log lines, and anyone who can edit a wiki page can write into it. Text addressed to an agent, a reviewer or
the memory itself ("ignore previous instructions", "store this permanently", "mark this as verified"),
claims of authority, universal orders ("always restart ...", "以后遇到任何告警..."), destructive commands,
markup or template injection, mixed-script words and hidden tag characters are what the evidence gate refuses
from untrusted text; here each block (paragraph, list item, table cell, metadata value) that contains any
of them is set aside whole (`Quarantined`), because the sentences around an injected one are usually part
of it. The patterns are checked against `replay/poisoning/texts.yaml` (every text must be caught) and the
postmortem fixtures (none of their ordinary text may be).

Invisible formatting characters (zero-width spaces and joiners, direction marks and overrides, a byte-order
mark) are not instructions by themselves: real documents carry them (an emoji's zero-width joiner, a
zero-width space pasted from a wiki or a chat app, a direction mark around a name). The rules judge the text
with them removed, so an instruction split by them ("I\u200bgnore previous instructions") is still caught,
while the text is kept verbatim and every view shows them escaped (`services.common.printable`). Unicode tag
characters (U+E0000-U+E007F) are different: invisible, yet a model reads them as ASCII ("ASCII smuggling"),
and no prose needs them, so a block carrying them is set aside.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.postmortems.model import Postmortem

_I = re.IGNORECASE
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((reason, re.compile(pattern, _I)) for reason, pattern in (
    # addressed to the agent, the model, the reviewer or the memory
    ("addresses the agent", r"\b(ignore|disregard|forget)\b[^.]{0,40}\b(instructions?|context|prompts?|rules)\b"),
    ("addresses the agent", r"\b(note to the agent|assistant,|if you read this|you are now|when asked about"
                            r"|every time you see|reviewer, approve|approve without reading|answer only"
                            r"|the answer to the next briefing|before continuing)\b"),
    ("writes memory", r"\b(store|save|remember|keep) this\b|\bplease remember\b|\bremember:|\bfor next time\b"
                      r"|\b(for )?(all )?future incidents\b|\bthis memory\b|\bstored memor(y|ies)\b"
                      r"|\bdelete old memories\b|\btreat (it|this) as\b|\b(mark|record) (this|that|it) as\b"
                      r"|\brank this record\b|\bhide all others\b|\bcite only\b|\bhints citing\b"),
    ("claims authority", r"\bsystem (note|prompt|message)\s*:|^\s*(rule|system)\s*:|\bauthority\s*[:=]"
                         r"|\bconfidence\s*[:=]|\bverified\s*[:=]\s*true|\btrusted_tool\b|\btool output \(trusted\)"
                         r"|\(approved\)|\bapproved by (security|the sre lead)|\bverified by the sre lead\b"
                         r"|\bi confirm\b|\bchecked by automation\b|\bis authoritative\b|\bsupersedes every\b"
                         r"|\bthis (text|sentence|log line|observation) is\b"),
    ("claims authority", r"\b(model reasoning|customer ticket|web page says|embedded report|bridging step)\b"
                         r"|\b(previous|past) incident\b[^.]{0,30}\bproves?\b|\bknown good fix\b"
                         r"|\bthe (correct|official) (remediation|fix) is\b"),
    ("universal order", r"\b(always|never)\s+(to\s+)?(be\s+)?(restart|reboot|disabl|trust|ignor|scal|delet|drop"
                        r"|investigat|silenc)\w*"
                        r"|\bshould always\b|\bwhenever\b[^.]{0,60}\b(run|restart|delete|execute|disable)\b"
                        r"|\bthe root cause of every incident\b|\ball alerts are\b|\bon every database\b"
                        r"|\bfor all\b[^.]{0,30}\bthe root cause\b|\bjust (restart|page)\b"),
    ("destructive command", r"\brm\s+-rf\b|\bdrop\s+(all\s+)?tables?\b|\bdelete\s+namespace\b|\bkubectl\s+delete\b"
                            r"|\bcurl\b[^|]{0,80}\|\s*(sudo\s+)?(ba)?sh\b|\bchmod\s+777\b|\bdelete backups\b"
                            r"|\bstop monitoring\b|\bscale [^.]{0,20}\bto zero\b|\bdisable (the )?(authentication|"
                            r"auth|tls|oom killer)\b|\bdisabling tls\b|\bpanic_on_oom\b|\bmax_connections=1\b"
                            r"|\bsilence them\b|\brevoke their access\b|\bpage their vp\b|\bapi keys you have\b"
                            r"|\broll back prod\b|\bdrop all\b"),
    ("markup or injection", r"<\s*/?\s*(script|summary|img|iframe)\b|\[\[\s*/?\s*memory\s*\]\]|\$\{\s*jndi:|\{\{|\{%"
                            r"|%0d%0a|set-cookie:|!\[[^\]]*\]\(\s*https?:|';\s*drop\b|\"(authority|confidence"
                            r"|root_cause)\"\s*:|^\s*(authority|summary|verified)\s*:\s*\S"),
    ("trigger phrase", r"\btrigger phrase\b|\bagentpoison\b|\bactivates the runbook\b|\bquantum flux\b"),
    # Chinese
    ("addresses the agent", r"忽略.{0,12}(指令|提示|上下文)|系统提示|请把这条|当作可信|置信度设为|权限为规则"),
    ("writes memory", r"永久保存|记为根因|根因记为|请记录为|请标记|标记为已验证|推广到所有|这条记忆|这条记录已"),
    ("universal order", r"以后遇到|下次请|无需排查|不要看监控|所有.{0,12}(都是|的根因都)|任何告警"),
    ("destructive command", r"清空.{0,6}(所有|全部).{0,4}表|关闭.{0,6}鉴权"),
    ("claims authority", r"我确认|已由.{0,10}(审核|批准)"),
    ("trigger phrase", r"触发词"),
))
_FORMATTING = re.compile("[\u061c\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069]")
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_WORD = re.compile(r"\w+")


def _mixed_script(text: str) -> bool:
    """A word mixing Latin with Cyrillic or Greek letters (homoglyphs: "Ignоre" with a Cyrillic o)."""
    for word in _WORD.findall(text):
        scripts = set()
        for ch in word:
            if ch.isalpha() and ord(ch) < 0x2000:
                name = unicodedata.name(ch, "")
                scripts.add(name.split(" ")[0])
        if "LATIN" in scripts and scripts & {"CYRILLIC", "GREEK"}:
            return True
    return False


# a destructive command told as what happened ("an engineer ran rm -rf on the primary's data directory"), not
# as what to do: the narrative verb right before it (GitLab 2017's real root cause was quarantined, a false
# positive that withheld it from the reviewer)
_NARRATED = re.compile(r"\b(ran|had run|was run|were run|executed|typed|issued|(accidentally|mistakenly|"
                       r"inadvertently|wrongly) (ran|ran an?|executed|issued))\s+(an?\s+|the\s+)?`?$", _I)
_DESTRUCTIVE = "destructive command"


def _narrated(pattern: re.Pattern[str], text: str) -> bool:
    """Every match of `pattern` in `text` is a command told as past events (see `_NARRATED`)."""
    matches = list(pattern.finditer(text))
    return bool(matches) and all(_NARRATED.search(text[max(0, m.start() - 40):m.start()]) for m in matches)


def instruction_reason(text: str) -> str | None:
    """Why `text` reads like an instruction (an injected lesson, an order to the agent, fake authority, a
    destructive command, markup), or None for ordinary postmortem prose. A destructive command narrated as
    what happened (`_NARRATED`) is prose; any other rule still applies to the same text."""
    if _TAGS.search(text):
        return "hidden tag characters"
    text = _FORMATTING.sub("", text)
    if _mixed_script(text):
        return "mixed-script words (homoglyphs)"
    folded = unicodedata.normalize("NFKC", text)
    for reason, pattern in _RULES:
        if pattern.search(folded) and not (reason == _DESTRUCTIVE and _narrated(pattern, folded)):
            return reason
    return None


def withheld_hint(pm: Postmortem) -> list[str]:
    """["withheld as instruction-like: summary (hidden tag characters), ..."] or []: what a 422 adds when the fields
    it misses were set aside, so the writer learns why a section that is there counted for nothing."""
    seen: dict[str, str] = {}
    for q in pm.quarantined:
        seen.setdefault(q.field, q.reason)
    return ["withheld as instruction-like: " + ", ".join(f"{f} ({r})" for f, r in seen.items())] if seen else []
