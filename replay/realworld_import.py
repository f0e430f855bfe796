"""Recall on imported history: the real corpus's history written as the postmortems teams keep, imported, asked.

The history incidents of `replay.realworld` (the frozen split's older half of each class) are rendered as
Markdown postmortems in the templates teams really use (`render`): the Google SRE book's (bold `Key:` lines
for summary, impact, root causes, trigger, resolution, detection; action items as a table), Atlassian's
incident postmortem (a metadata table, then Incident summary, Leadup, Fault, Impact, Detection, Response,
Recovery, Timeline, Five whys, Blameless root cause, Lessons learned, Follow-up tasks), PagerDuty's (YAML
front matter, Overview, What Happened, Impact, Responders, Timeline, Root Cause, Resolution, How'd We Do?,
Action Items) for the English ones, and a 复盘 document (a 项目/内容 table, 一、故障概述 ... 七、经验教训) for
the Chinese ones. Each names its services, alert, severity and root-cause category in its own metadata; the
English templates take turns by a hash of the incident id. The documents are committed under
`replay/realworld/markdown/` and regenerated with `python -m replay.realworld_import` (they depend only on
the corpus, so `replay realworld-imported` refuses to run when they are stale).

`run` imports that directory in one command (`opslore import postmortems DIR`, a subprocess, as a team would)
into a fresh tenant, approves the imported candidates in bulk (`opslore review approve --all --imported`),
learns the same history through the ledger into a second fresh tenant (`realworld.learn_history`), and asks
both the dev and the test questions in English and Chinese (`realworld.opslore_rankings`), scored by
`realworld.score`. The imported records name `pm-<file>-<hash>` incidents (`incident_id_for` of the file's
`source_ref`); their rankings are mapped back to the corpus ids before scoring.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from replay.realworld import (
    Lang,
    Postmortem,
    Ranking,
    Split,
    SystemScore,
    history,
    learn_history,
    load,
    opslore_rankings,
    questions,
    score,
)
from services.cli.client import OpsloreClient
from services.postmortems.events import incident_id_for

MARKDOWN = Path(__file__).parent / "realworld" / "markdown"
Template = Literal["google", "atlassian", "pagerduty", "fupan"]
ENGLISH_TEMPLATES: tuple[Template, ...] = ("google", "atlassian", "pagerduty")
SEVERITY = {"en": "SEV2", "zh": "P1"}


def template_for(pm: Postmortem) -> Template:
    """复盘 for the Chinese postmortems; the English ones take turns by a hash of their id (stable, not by order)."""
    if pm.lang == "zh":
        return "fupan"
    return ENGLISH_TEMPLATES[int(hashlib.sha256(pm.id.encode()).hexdigest(), 16) % len(ENGLISH_TEMPLATES)]


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?。！？；;])\s*", text.strip())
    return [p.strip() for p in parts if p.strip()]


def _first(text: str | None) -> str:
    return (_sentences(text)[0] if text and _sentences(text) else (text or "")).strip()


def file_name(pm: Postmortem) -> str:
    return f"{pm.id}.md"


def render(pm: Postmortem) -> str:
    """The postmortem as its team would have written it (see the module docstring)."""
    return {"google": _google, "atlassian": _atlassian, "pagerduty": _pagerduty, "fupan": _fupan}[template_for(pm)](pm)


def _title(pm: Postmortem) -> str:
    return f"{pm.org} incident of {pm.date.isoformat()}: {pm.alert}"


def _google(pm: Postmortem) -> str:
    summary = pm.summary or _first(pm.root_cause)
    return "\n".join([
        f"# Postmortem: {_title(pm)}", "",
        f"**Date:** {pm.date.isoformat()}", "",
        f"**Authors:** {pm.org} SRE on-call", "",
        "**Status:** Complete, action items in progress", "",
        f"**Services:** {', '.join(pm.services)}", "",
        f"**Alert:** {pm.alert}", "",
        f"**Severity:** {SEVERITY['en']}", "",
        f"**Root cause category:** {pm.cls}", "",
        f"**Summary:** {summary}", "",
        f"**Impact:** {pm.symptoms}", "",
        f"**Root Causes:** {pm.root_cause}", "",
        f"**Resolution:** {pm.resolution or 'Mitigated by the on-call.'}", "",
        f"**Detection:** The {pm.alert} alert paged the on-call.", "",
        "## Action Items", "",
        "| Action Item | Type | Owner | Bug |",
        "|---|---|---|---|",
        f"| Review the runbook for {pm.alert} | mitigate | on-call | n/a |",
        f"| Add a regression check for {pm.services[0]} | prevent | service owners | n/a |", "",
        "## Lessons Learned", "",
        "### What went well", "",
        "- The alert fired and the on-call was paged within minutes.", "",
        "### What went wrong", "",
        f"- {_first(pm.root_cause)}", "",
        "### Where we got lucky", "",
        "- Nothing we know of.", "",
        "## Timeline", "",
        f"{pm.date.isoformat()} (all times UTC)", "",
        f"- 10:00 {pm.alert} fires; on-call paged", "",
        f"- 10:05 {_first(pm.symptoms)}", "",
        f"- 10:40 mitigated: {_first(pm.resolution) or 'service restored'}", "",
        "## Supporting information", "",
        f"- Public report: [{pm.org}]({pm.source})", "",
    ])


def _atlassian(pm: Postmortem) -> str:
    return "\n".join([
        f"# Incident postmortem: {_title(pm)}", "",
        "| Field | Value |",
        "|---|---|",
        f"| Postmortem owner | {pm.org} incident manager |",
        f"| Incident | {pm.id} |",
        f"| Priority | {SEVERITY['en']} |",
        f"| Affected services | {', '.join(pm.services)} |",
        f"| Alert | {pm.alert} |",
        f"| Root cause category | {pm.cls} |",
        f"| Date | {pm.date.isoformat()} |", "",
        "## Incident summary", "",
        pm.summary or _first(pm.root_cause), "",
        "## Leadup", "",
        "The days before were ordinary; no related change was announced.", "",
        "## Fault", "",
        _first(pm.root_cause), "",
        "## Impact", "",
        pm.symptoms, "",
        "## Detection", "",
        f"The {pm.alert} alert paged the on-call engineer.", "",
        "## Response", "",
        "The on-call engineer opened an incident channel and brought in the service owners.", "",
        "## Recovery", "",
        pm.resolution or "Service recovered without intervention.", "",
        "## Timeline", "",
        "| Time (UTC) | Event |",
        "|---|---|",
        f"| {pm.date.isoformat()} 10:00 | {pm.alert} fires |",
        f"| {pm.date.isoformat()} 10:05 | {_first(pm.symptoms)} |",
        f"| {pm.date.isoformat()} 10:40 | Recovered |", "",
        "## Five whys", "",
        f"1. Why did {pm.services[0]} fail? {_first(pm.root_cause)}", "",
        "## Blameless root cause", "",
        pm.root_cause, "",
        "## Lessons learned", "",
        "- Detection worked; diagnosis took longer than it should have.", "",
        "## Follow-up tasks", "",
        "| Task | Owner | Due |",
        "|---|---|---|",
        f"| Prevent a recurrence in {pm.services[0]} | service owners | next quarter |", "",
        f"Source: <{pm.source}>", "",
    ])


def _pagerduty(pm: Postmortem) -> str:
    services = "".join(f"\n  - {s}" for s in pm.services)
    return "\n".join([
        "---",
        f'title: "{_title(pm)}"',
        f"date: {pm.date.isoformat()}",
        f"severity: {SEVERITY['en']}",
        f'alert: "{pm.alert}"',
        f"services:{services}",
        f"category: {pm.cls}",
        "status: resolved",
        "---", "",
        f"# {_title(pm)}", "",
        "## Overview", "",
        pm.summary or _first(pm.root_cause), "",
        "## What Happened", "",
        f"{_first(pm.symptoms)} The responders were paged by {pm.alert}.", "",
        "## Impact", "",
        pm.symptoms, "",
        "## Responders", "",
        "- Incident commander: on-call lead", "- Subject matter experts: service owners", "",
        "## Timeline", "",
        f"- **10:00 UTC** {pm.alert} triggered", "",
        "- **10:20 UTC** root cause identified", "",
        "- **10:40 UTC** resolved", "",
        "## Root Cause", "",
        pm.root_cause, "",
        "## Resolution", "",
        pm.resolution or "Resolved by the responders.", "",
        "## How'd We Do?", "",
        "- The alert was actionable.", "",
        "## Action Items", "",
        f"- [ ] Add coverage for this failure of {pm.services[0]} to the runbook", "",
        "## Messaging", "",
        f"Public report: {pm.source}", "",
    ])


def _fupan(pm: Postmortem) -> str:
    return "\n".join([
        f"# 【故障复盘】{pm.org} {pm.date.year}年{pm.date.month}月{pm.date.day}日 {pm.alert}", "",
        "| 项目 | 内容 |",
        "|---|---|",
        f"| 故障等级 | {SEVERITY['zh']} |",
        f"| 发生时间 | {pm.date.year}年{pm.date.month}月{pm.date.day}日 10:00 |",
        f"| 影响服务 | {'、'.join(pm.services)} |",
        f"| 告警名称 | {pm.alert} |",
        f"| 根因分类 | {pm.cls} |",
        "| 复盘人 | 值班 SRE |", "",
        "## 一、故障概述", "",
        pm.summary or _first(pm.root_cause), "",
        "## 二、影响范围", "",
        pm.symptoms, "",
        "## 三、时间线", "",
        f"- 10:00 {pm.alert} 告警触发，值班同学介入", "",
        f"- 10:05 {_first(pm.symptoms)}", "",
        "- 10:40 服务恢复", "",
        "## 四、根因分析", "",
        pm.root_cause, "",
        "## 五、处理过程", "",
        pm.resolution or "值班同学处理后恢复。", "",
        "## 六、改进措施", "",
        f"1. 完善 {pm.services[0]} 的监控与预案", "",
        "## 七、经验教训", "",
        "- 告警及时，但定位耗时偏长。", "",
        f"参考：{pm.source}", "",
    ])


def documents(pms: list[Postmortem]) -> dict[str, str]:
    """File name -> Markdown of every history incident."""
    return {file_name(pm): render(pm) for pm in history(pms)}


def write(pms: list[Postmortem], directory: Path = MARKDOWN) -> int:
    """(Re)write the directory: one document per history incident, nothing else in it."""
    docs = documents(pms)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.md"):
        if old.name not in docs:
            old.unlink()
    for name, text in docs.items():
        (directory / name).write_text(text, encoding="utf-8")
    return len(docs)


def stale(pms: list[Postmortem], directory: Path = MARKDOWN) -> list[str]:
    """The documents that differ from (or are missing in) the committed directory."""
    docs = documents(pms)
    found = {p.name: p.read_text(encoding="utf-8") for p in directory.glob("*.md")} if directory.exists() else {}
    return sorted(n for n in docs.keys() | found.keys() if docs.get(n) != found.get(n))


def incident_map(pms: list[Postmortem], directory: Path = MARKDOWN) -> dict[str, str]:
    """The import's incident id of each document (as `opslore import postmortems DIR` names its source_ref:
    `<DIR's name>/<file>`) -> the corpus id."""
    return {incident_id_for(f"{directory.resolve().name}/{file_name(pm)}", ""): pm.id for pm in history(pms)}


def mapped(rankings: dict[str, Ranking], ids: dict[str, str]) -> dict[str, Ranking]:
    return {q: Ranking(r.question, [[ids.get(i, i) for i in cited] for cited in r.cited], r.classes)
            for q, r in rankings.items()}


# ------------------------------------------------------------------------ the live run
@dataclass
class CliRun:
    seconds: float
    returncode: int
    stdout: str
    stderr: str

    def count(self, outcome: str) -> int | None:
        m = re.search(rf"\b{outcome}\s*│\s*(\d+)", self.stdout)
        return int(m[1]) if m else None


@dataclass
class ImportOutcome:
    documents: int
    imported: int | None
    refused: list[str]
    import_seconds: float
    documents_per_second: float
    cli_rate: str | None  # the CLI's own "N documents in X s (Y documents/s)"
    candidates: int
    approved: int | None
    skipped: list[str]
    records: int
    unparsed_sections: dict[str, list[str]] = field(default_factory=dict)
    quarantined: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def opslore_cli(api_url: str, key: str, *args: str, timeout: float = 1800) -> CliRun:
    env = os.environ | {"OPSLORE_API_KEY": key, "OPSLORE_API_URL": api_url, "COLUMNS": "220"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return CliRun(time.perf_counter() - started, done.returncode, done.stdout, done.stderr)


def wait_for(check: Callable[[], bool], seconds: float = 300, step: float = 1.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return check()


def import_history(admin: OpsloreClient, api_url: str, pms: list[Postmortem], directory: Path = MARKDOWN,
                   ) -> tuple[OpsloreClient, ImportOutcome]:
    """Into a fresh tenant: the directory in one import command, then one bulk approval of its candidates."""
    key = admin.create_key(f"rw-imported-{uuid.uuid4().hex[:10]}", "reviewer", "default")
    client = OpsloreClient(api_url, key)
    n = len(list(directory.glob("*.md")))
    run = opslore_cli(api_url, key, "import", "postmortems", str(directory))
    if run.returncode != 0:
        raise RuntimeError(f"import failed ({run.returncode}): {run.stderr[-2000:]}{run.stdout[-2000:]}")
    refused = [line.split("refused", 1)[1].strip() for line in run.stdout.splitlines()
               if line.lstrip().startswith("refused ")]
    imported = run.count("imported") or 0
    wait_for(lambda: len(client.candidates(state="pending", imported="true")) >= imported)
    pending = client.candidates(state="pending", imported="true")
    approve = opslore_cli(api_url, key, "review", "approve", "--all", "--imported", "--note",
                          "imported history (replay realworld-imported)")
    m = re.search(r"approved: (\d+)", approve.stdout)
    skipped = [line.split("skipped", 1)[1].strip() for line in approve.stdout.splitlines() if "skipped" in line]
    ids = incident_map(pms, directory)
    unparsed: dict[str, list[str]] = {}
    quarantined: dict[str, list[str]] = {}
    for c in pending:
        mark = c["content"].get("imported_from") or {}
        corpus_id = ids.get(c["incident_id"], c["incident_id"])
        if mark.get("unparsed"):
            unparsed[corpus_id] = list(mark["unparsed"])
        if mark.get("quarantined"):
            quarantined[corpus_id] = [f"{q['field']}: {q['reason']}: {q['text'][:120]}" for q in mark["quarantined"]]
    rate = re.search(r"\d+ documents in [\d.]+ s \([\d.]+ documents/s\)", run.stdout)
    return client, ImportOutcome(
        documents=n, imported=run.count("imported"), refused=refused, import_seconds=round(run.seconds, 2),
        documents_per_second=round(n / run.seconds, 2) if run.seconds else 0.0, cli_rate=rate[0] if rate else None,
        candidates=len(pending), approved=int(m[1]) if m else None, skipped=skipped,
        records=len(client.records(state="active")), unparsed_sections=unparsed, quarantined=quarantined)


def learned_history(admin: OpsloreClient, api_url: str, pms: list[Postmortem],
                    progress: Callable[[str], None]) -> OpsloreClient:
    key = admin.create_key(f"rw-learned-{uuid.uuid4().hex[:10]}", "reviewer", "default")
    client = OpsloreClient(api_url, key)
    learn_history(client, pms, progress)
    return client


def compare(imported: OpsloreClient, learned: OpsloreClient, pms: list[Postmortem], ids: dict[str, str],
            progress: Callable[[str], None] = lambda _: None) -> dict[str, dict[str, list[SystemScore]]]:
    """split -> language -> [imported history's score, ledger-learned history's score] on the same questions."""
    out: dict[str, dict[str, list[SystemScore]]] = {}
    splits: tuple[Split, ...] = ("dev", "test")
    langs: tuple[Lang, ...] = ("en", "zh")
    for split in splits:
        asked = questions(pms, split)
        out[split] = {}
        for lang in langs:
            mine = mapped(opslore_rankings(imported, asked, lang, progress=progress), ids)
            theirs = opslore_rankings(learned, asked, lang, progress=progress)
            out[split][lang] = [score("opslore, imported history", pms, asked, mine),
                                score("opslore, ledger-learned history", pms, asked, theirs)]
    return out


def main() -> None:
    """`python -m replay.realworld_import`: (re)write replay/realworld/markdown/ from the corpus."""
    n = write(load())
    print(f"wrote {n} postmortems to {MARKDOWN}")


if __name__ == "__main__":
    main()
