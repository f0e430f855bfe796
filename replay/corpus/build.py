"""Builds the generated replay corpus from `archetypes.yaml` into `replay/scenarios/generated/`.

`python -m replay.corpus.build` rewrites the files deterministically. Kinds of scenario:
recall (paraphrased question among distractors, plus an unrelated question that must get nothing),
same alert with different causes, environment and topology changes (warning vs reviewer restriction),
misleading signals, lifecycle (expired, superseded, retracted), feedback, and untrusted-only evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
OUT = HERE.parent / "scenarios" / "generated"
Arch = dict[str, Any]


def load() -> list[Arch]:
    return list(yaml.safe_load((HERE / "archetypes.yaml").read_text(encoding="utf-8"))["archetypes"])


def incident(a: Arch, inc: str, day: int, **over: Any) -> dict[str, Any]:
    """The ledger events of one past incident of archetype `a` (overrides: service, alert, env...)."""
    service, alert = over.get("service", a["service"]), over.get("alert", a["alert"])
    opened: dict[str, Any] = {"alert": {"name": alert}, "services": [service],
                              "environment": over.get("environment", "prod")}
    for key in ("cluster", "topology_fingerprint"):
        if key in over:
            opened[key] = over[key]
    ev = dict(a["evidence"])
    obs = {"source": ev["source"], "summary": ev["summary"], "signals": a["signals"], "entities": [service]}
    if ev.get("query"):
        obs["query"] = ev["query"]
    at = f"2026-{(day % 9) + 1:02d}-{(day % 27) + 1:02d}T"
    events: list[dict[str, Any]] = [
        {"type": "incident.opened", "at": at + "10:00:00Z", "writer": {"kind": "tool", "id": "alertmanager"},
         "payload": opened},
        {"type": "observation.recorded", "at": at + "10:04:00Z", "ref": "ev",
         "trust": over.get("evidence_trust", "trusted_tool"), "writer": {"kind": "tool", "id": ev["source"]},
         "payload": obs},
    ]
    for signal, reason in over.get("misleading", []):
        events.append({"type": "signal.misleading", "at": at + "10:06:00Z", "payload": {"signal": signal,
                                                                                      "reason": reason}})
    events += [
        {"type": "hypothesis.proposed", "at": at + "10:07:00Z", "trust": "model_inferred",
         "writer": {"kind": "agent", "id": "sre-agent"},
         "payload": {"hypothesis_id": "h1", "statement": a["hypothesis"], "root_cause_category": a["category"]}},
        {"type": "hypothesis.verified", "at": at + "10:15:00Z", "payload": {"hypothesis_id": "h1",
                                                                            "evidence_refs": ["ev"]}},
        {"type": "incident.resolved", "at": at + "10:45:00Z", "trust": "user_stated",
         "writer": {"kind": "human", "id": "oncall"},
         "payload": {"root_cause": over.get("root_cause", a["root_cause"]), "root_cause_category": a["category"],
                     "summary": over.get("summary", a["summary"]), "evidence_refs": ["ev"]}},
    ]
    spec: dict[str, Any] = {"id": inc, "events": events}
    for key in ("review", "approve_edits", "expect_candidate"):
        if key in over:
            spec[key] = over[key]
    return spec


def ask(a: Arch, *, signals: bool = True, service: str | None = None, **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"services": [service or a["service"]], "text": a["ask"]}
    if signals:
        request["signals"] = a["signals"]
    return {**request, **extra}


def recall(a: Arch, distractors: list[Arch], n: int) -> dict[str, Any]:
    incs = [incident(a, "INC-T", n)] + [incident(d, f"INC-D{i}", n + i + 1) for i, d in enumerate(distractors)]
    return {"name": f"recall-{a['id']}", "lang": a["lang"],
            "about": f"A paraphrase of the {a['category']} incident on {a['service']} ranks its cause first among "
                     f"the distractors' (a hint only where the tiny history supports one: v1.3 causes); an unrelated "
                     f"question gets nothing.",
            "incidents": incs,
            "queries": [
                {"name": "paraphrase", "request": {"text": a["ask"]},
                 "expect": {"top_cause": a["category"], "not_cites": [f"INC-D{i}" for i in range(len(distractors))]}},
                {"name": "unrelated", "request": {"services": [a["unrelated"]["service"]],
                                                  "text": a["unrelated"]["text"]}, "expect": {"no_hints": True}},
            ]}


def same_alert(a: Arch, b: Arch, n: int) -> dict[str, Any]:
    over = {"service": a["service"], "alert": a["alert"]}
    return {"name": f"same-alert-{a['id']}-vs-{b['id']}", "lang": a["lang"],
            "about": f"{a['alert']} had two causes ({a['category']}, {b['category']}); today's signals pick "
                     f"the order and both hints warn of the alternative.",
            "incidents": [incident(a, "INC-A", n), incident(b, "INC-B", n + 3, **over)],
            "queries": [
                {"name": "signals-of-b", "request": ask(b, service=a["service"], alert={"name": a["alert"]}),
                 "expect": {"top1_cites": "INC-B", "warnings": {"INC-B": ["alternative_root_causes"]}}},
                {"name": "signals-of-a", "request": ask(a, alert={"name": a["alert"]}),
                 "expect": {"top1_cites": "INC-A", "warnings": {"INC-A": ["alternative_root_causes"]}}},
            ]}


def env_change(a: Arch, n: int, restricted: bool) -> dict[str, Any]:
    over: dict[str, Any] = {"environment": "prod", "cluster": "prod-1"}
    if restricted:
        over["approve_edits"] = {"applicability": {"environment": "prod"}}
    expect: dict[str, Any] = ({"not_cites": ["INC-E"]} if restricted
                              else {"top1_cites": "INC-E", "warnings": {"INC-E": ["environment_mismatch"]}})
    kind = "restricted" if restricted else "learned"
    return {"name": f"env-{kind}-{a['id']}", "lang": a["lang"],
            "about": ("A reviewer restricted this lesson to prod, so a staging question never sees it."
                      if restricted else "A prod lesson is still offered in staging, with an environment warning."),
            "incidents": [incident(a, "INC-E", n, **over)],
            "queries": [{"name": "from-staging", "request": ask(a, environment="staging", cluster="stg-1"),
                         "expect": expect}]}


def topology(a: Arch, n: int) -> dict[str, Any]:
    return {"name": f"topology-{a['id']}", "lang": a["lang"],
            "about": "The service topology changed since the lesson was learned; the hint says so.",
            "incidents": [incident(a, "INC-P", n, topology_fingerprint="topo-2026-01")],
            "queries": [{"name": "new-topology", "request": ask(a, topology_fingerprint="topo-2026-09"),
                         "expect": {"top1_cites": "INC-P", "warnings": {"INC-P": ["topology_changed"]}}}]}


def misleading(a: Arch, n: int) -> dict[str, Any]:
    reason = "high CPU was a symptom of retries, not the cause"
    req = ask(a)
    req["signals"] = [*a["signals"], "cpu_high"]
    return {"name": f"misleading-{a['id']}", "lang": a["lang"],
            "about": "A signal that misled the past investigation is flagged when it shows up again.",
            "incidents": [incident(a, "INC-M", n, misleading=[("cpu_high", reason)])],
            "queries": [{"name": "with-cpu", "request": req,
                         "expect": {"top1_cites": "INC-M", "warnings": {"INC-M": ["misleading_signal"]}}}]}


def lifecycle(a: Arch, n: int, op: str) -> dict[str, Any]:
    over: dict[str, Any] = {}
    after: list[dict[str, Any]] = []
    expect: dict[str, Any]
    if op == "expired":
        over["approve_edits"] = {"valid_until": "2026-01-01T00:00:00Z"}
        expect = {"no_hints": True}
    elif op == "superseded":
        over["summary"] = f"OLD-WORDING {a['summary']}"
        after.append({"op": "supersede", "incident": "INC-L", "summary": a["summary"], "reason": "clearer"})
        expect = {"top1_cites": "INC-L", "max_hints": 1, "text_absent": ["OLD-WORDING"]}
    else:
        after.append({"op": "retract", "incident": "INC-L", "reason": "the real cause was elsewhere"})
        expect = {"not_cites": ["INC-L"]}
    return {"name": f"{op}-{a['id']}", "lang": a["lang"],
            "about": f"A {op} record never reaches a briefing in its old form.",
            "incidents": [incident(a, "INC-L", n, **over)], "after": after,
            "queries": [{"name": "ask-again", "request": ask(a), "expect": expect}]}


def feedback(a: Arch, n: int, verdict: str) -> dict[str, Any]:
    first: dict[str, Any] = {"name": "first", "request": ask(a),
                             "feedback": [{"incident": "INC-F", "verdict": verdict}],
                             "expect": {"top1_cites": "INC-F", "no_warnings": {"INC-F": ["low_confidence"]}}}
    then_expect: dict[str, Any] = ({"warnings": {"INC-F": ["low_confidence"]}} if verdict == "refuted"
                                   else {"top1_cites": "INC-F", "no_warnings": {"INC-F": ["low_confidence"]}})
    return {"name": f"feedback-{verdict}-{a['id']}", "lang": a["lang"],
            "about": f"{verdict.capitalize()} feedback flows through the ledger into the record's confidence.",
            "incidents": [incident(a, "INC-F", n)],
            "queries": [first, {"name": "after-feedback", "eventually": True, "request": ask(a),
                                "expect": then_expect}]}


def untrusted(a: Arch, n: int) -> dict[str, Any]:
    return {"name": f"untrusted-only-{a['id']}", "lang": a["lang"],
            "about": "When the only evidence is untrusted text, no candidate and no memory is produced.",
            "incidents": [incident(a, "INC-U", n, evidence_trust="untrusted_text", expect_candidate=False)],
            "queries": [{"name": "ask", "request": ask(a), "expect": {"no_hints": True}}]}


def pooled(archs: list[Arch]) -> dict[str, Any]:
    """Every archetype in one tenant; each paraphrase (text only, no service) must find its own incident."""
    return {"name": "pooled-recall", "lang": "mixed",
            "about": "All archetype incidents in one tenant; every paraphrased question, with no service or "
                     "signal given, must raise its own incident's cause above that cause's base rate (v1.3: a weak "
                     "match does not outrank a cause three times as frequent). Asked as the tenant's calibration "
                     "catches up (eventually): it follows every record in the background, within seconds, and until "
                     "then a smaller history's evidence floor answers.",
            "incidents": [incident(a, f"INC-{a['id']}", k) for k, a in enumerate(archs)],
            "queries": [{"name": f"ask-{a['id']}", "eventually": True, "request": {"text": a["ask"]},
                         "expect": {"raises": [a["category"]]}} for a in archs]}


def scenarios(archs: list[Arch]) -> list[dict[str, Any]]:
    by_id = {a["id"]: a for a in archs}
    out = []
    for i, a in enumerate(archs):
        others = [d for d in archs[i + 1:] + archs[:i] if d["category"] != a["category"]]
        out.append(recall(a, others[:2], i))
    pairs = [("pool-slow-query", "tls-client-cert"), ("tls-client-cert", "dns-coredns"),
             ("bad-deploy-null", "config-timeout"), ("zh-pool-batch", "zh-deploy"),
             ("mixed-oom", "mixed-lag"), ("cache-stampede", "retry-storm")]
    out += [same_alert(by_id[x], by_id[y], 30 + k) for k, (x, y) in enumerate(pairs)]
    out += [env_change(by_id[x], 40 + k, restricted=r) for k, (x, r) in enumerate(
        [("dns-coredns", False), ("zh-oom", False), ("kafka-lag-poison", False), ("zh-cert", True),
         ("disk-full-wal", True)])]
    out += [topology(by_id[x], 50 + k) for k, x in enumerate(["node-not-ready", "mixed-tls"])]
    out += [misleading(by_id[x], 55 + k) for k, x in enumerate(["retry-storm", "zh-kafka", "rate-limit-partner"])]
    out += [lifecycle(by_id[x], 60 + k, op) for k, (x, op) in enumerate(
        [("oom-java-heap", "expired"), ("zh-disk", "expired"), ("kafka-lag-poison", "superseded"),
         ("mixed-pool", "superseded"), ("cache-stampede", "retracted"), ("zh-dns", "retracted")])]
    out += [feedback(by_id[x], 70 + k, v) for k, (x, v) in enumerate(
        [("bad-deploy-null", "refuted"), ("zh-deploy", "refuted"), ("config-timeout", "adopted")])]
    out += [untrusted(by_id[x], 75 + k) for k, x in enumerate(["rate-limit-partner", "zh-pool-batch"])]
    out.append(pooled(archs))
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.yaml"):
        old.unlink()
    built = scenarios(load())
    for sc in built:
        lang = sc.pop("lang")
        sc["project"] = "corpus"
        sc["about"] = f"[{lang}] {sc['about']}"
        (OUT / f"{sc['name']}.yaml").write_text(
            yaml.safe_dump(sc, allow_unicode=True, sort_keys=False, width=120), encoding="utf-8")
    print(f"wrote {len(built)} scenarios to {OUT}")


if __name__ == "__main__":
    main()
