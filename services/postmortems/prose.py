"""CausalPassage: the paragraph of a prose postmortem that states its cause. Pure.

Many published postmortems have no "Root cause" heading: a provider's service-event summary is a few paragraphs of
prose, a status-page update has "What happened?" and "Where do we go from here?", a Chinese 故障说明 is a letter to
customers. Their cause is stated in a sentence ("was caused by", "the root cause", "原因是", "由于 ... 导致"),
and refusing the document would leave a team's most careful write-ups out of its memory. `causal_paragraph`
picks the paragraph whose causal wording weighs most (each cue counted once per paragraph, the earliest
paragraph on a tie) and none below `MIN_WEIGHT`: one explicit cue ("caused by", "原因") or two weaker ones (a
connective, "due to", "由于"; a word for a fault, "bug", "incorrectly", "误操作"). The importer marks such a root
cause `root_cause_from: prose`, and a reviewer reads it beside the document before anything is approved."""

from __future__ import annotations

import re
from collections.abc import Sequence

# (pattern, weight): an explicit statement of the cause weighs 3-2, a causal connective 1
CUES: tuple[tuple[re.Pattern[str], int], ...] = tuple((re.compile(p, re.IGNORECASE), w) for p, w in (
    (r"\broot[- ]?causes?\b", 3),
    (r"\bcaused by\b", 2),
    (r"\b(?:the|a|primary|underlying|proximate) cause\b|\bcause of (?:the|this)\b", 2),
    (r"\btriggered by\b|\bthe trigger\b", 2),
    (r"\bdue to\b", 1),
    (r"\bbecause\b", 1),
    (r"\bresult(?:ed)? (?:of|from|in)\b|\bas a result\b", 1),
    (r"\bled to\b|\bleading to\b", 1),
    # what failed, in the words write-ups use for a fault (not for its symptoms)
    (r"\bbugs?\b|\bdefect\b|\bregression\b|\brace condition\b|\bdeadlock|\bmemory leak", 1),
    (r"\bmisconfigur|\bincorrect(?:ly)?\b|\berroneous(?:ly)?\b|\bmistaken(?:ly)?\b|\binadvertent(?:ly)?\b", 1),
    (r"\bunintended\b|\bunexpected(?:ly)?\b|\bunfortunately\b", 1),
    (r"根因|根本原因|原因是|原因为|原因在于|起因|故障原因", 3),
    (r"原因", 2),
    (r"由于|因为", 1),
    (r"导致|引起|造成|引发", 1),
    (r"缺陷|漏洞|误操作|配置错误|错误|bug", 1),
))
MIN_WEIGHT = 2
# a paragraph that says the cause is not known states none ("The root cause is still unknown.", "原因尚不明确")
UNKNOWN = re.compile(r"\b(?:root )?cause (?:is|was|remains) (?:still |as yet |yet )?(?:unknown|unclear|not (?:yet )?"
                     r"(?:known|understood|identified))|原因(?:尚|仍|还)?(?:不明|未明|未知|未查明|待查)", re.IGNORECASE)
# what makes prose an incident's story rather than any text that explains something (a README, a design note): one
# word only incident write-ups use, and one more of either kind
INCIDENT_WORDS = re.compile(
    r"\b(?:outages?|incidents?|disruptions?|downtime|post-?mortems?|post-incident|service event|went down|was down"
    r"|were down|status page|unavailab(?:le|ility))\b|故障|事故|宕机|复盘|不可用", re.IGNORECASE)
INCIDENT_HINTS = re.compile(
    r"\b(?:degrad(?:ed|ation)|interruptions?|impact(?:ed)?|customers? (?:saw|were)|stall(?:ed)?|halt(?:ed)?|paged"
    r"|on-call|errors?|latency|timeouts?)\b|中断|异常|告警|影响|报错|超时", re.IGNORECASE)
INCIDENT_CUES = 2  # distinct incident words the document must carry for its prose to state a cause


def causal_weight(text: str) -> int:
    """The weight of the causal cues in `text`, each cue once; 0 when it says the cause is unknown."""
    if UNKNOWN.search(text):
        return 0
    return sum(w for pattern, w in CUES if pattern.search(text))


def causal_paragraph(paragraphs: Sequence[str]) -> str | None:
    """The paragraph that states the cause, or None when no paragraph weighs `MIN_WEIGHT`. A lead-in ("The root
    cause was the following:", "故障原因如下：") comes with the paragraph it introduces."""
    best, weight = -1, MIN_WEIGHT - 1
    for i, text in enumerate(paragraphs):
        if (w := causal_weight(text)) > weight:
            best, weight = i, w
    if best < 0:
        return None
    stated = paragraphs[best]
    if stated.rstrip().endswith((":", "：")) and best + 1 < len(paragraphs):
        return f"{stated} {paragraphs[best + 1]}"
    return stated


def reads_as_incident(texts: Sequence[str]) -> bool:
    """True when `texts` (a document's title, headings and paragraphs) use an incident word and at least
    `INCIDENT_CUES` distinct incident words or hints: only then may its prose stand for symptoms or a cause."""
    strong: set[str] = set()
    weak: set[str] = set()
    for text in texts:
        strong.update(m.group(0).lower() for m in INCIDENT_WORDS.finditer(text))
        weak.update(m.group(0).lower() for m in INCIDENT_HINTS.finditer(text))
        if strong and len(strong) + len(weak) >= INCIDENT_CUES:
            return True
    return False
