"""`python -m replay run DIR...`: replay scenario files against a running stack."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from replay.compare import Comparison
from replay.imported_recall import realworld_imported
from replay.report import print_comparison, print_table, write_json
from replay.runner import ScenarioRunner
from replay.scenario import load_scenarios
from services.common.settings import get_settings

app = typer.Typer(no_args_is_help=True, help="replay incident scenarios as regression tests")
app.command("realworld-imported")(realworld_imported)


@app.command()
def run(
    paths: Annotated[list[Path], typer.Argument(help="scenario files or directories")],
    report: Annotated[Path, typer.Option(help="JSON report path")] = Path("replay/results/latest.json"),
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Run every scenario; exit 1 if any expectation fails."""
    s = get_settings()
    if not s.admin_token:
        raise typer.BadParameter("OPSLORE_ADMIN_TOKEN is required to create fresh tenants")
    scenarios = [sc for p in paths for sc in load_scenarios(p)]
    if not scenarios:
        raise typer.BadParameter(f"no scenario files under {', '.join(map(str, paths))}")
    runner = ScenarioRunner(api_url or s.api_url, s.admin_token)
    results = [runner.run(sc) for sc in scenarios]
    comparison = Comparison()
    for sc, res in zip(scenarios, results, strict=True):
        comparison.add(sc, res)
    print_table(results)
    print_comparison(comparison)
    write_json(results, report, comparison)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


@app.command()
def gate(
    report: Annotated[Path, typer.Option(help="JSON report")] = Path("replay/results/gate.json"),
    html_report: Annotated[Path, typer.Option("--html", help="static HTML")] = Path("replay/results/report.html"),
    corpus_report: Annotated[Path | None, typer.Option(help="a `run` JSON report to chart too")] = None,
    max_harmful_rate: float = 0.10,
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Memory-on vs memory-off with a deterministic planner; exit 1 when memory makes things worse."""
    import json

    from rich.progress import Progress

    from replay.gate import build_memory, live_brief, run_gate, trials_for
    from replay.html import gate_report
    from replay.report import print_gate
    from services.cli.client import OpsloreClient

    s = get_settings()
    url = api_url or s.api_url
    client, archetypes = build_memory(OpsloreClient(url, s.admin_token), url)
    with Progress(transient=True) as progress:
        task = progress.add_task("memory gate", total=len(trials_for(archetypes)))
        result = run_gate(client, archetypes, live_brief(client), lambda _: progress.advance(task),
                          max_harmful_rate=max_harmful_rate)
    doc = result.to_json()
    print_gate(doc)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    comparison = None
    if corpus_report and corpus_report.exists():
        comparison = json.loads(corpus_report.read_text(encoding="utf-8")).get("comparison")
    html_report.write_text(gate_report(doc, comparison), encoding="utf-8")
    typer.echo(f"reports: {report}, {html_report}")
    if not result.passed:
        raise typer.Exit(1)


@app.command()
def regress(
    ledger: Annotated[Path, typer.Argument(help="ledger file (JSON Lines, from `opslore ledger export`)")],
    snapshot: Annotated[Path, typer.Option(help="stored snapshot (written when missing or with --update)")],
    update: bool = False,
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Replay a ledger file into an empty tenant and diff the result against the stored snapshot."""
    from replay.regress import regress as run_regression
    from services.cli.client import OpsloreClient

    s = get_settings()
    url = api_url or s.api_url
    result = run_regression(OpsloreClient(url, s.admin_token), url, ledger, snapshot, update)
    if result.passed:
        typer.echo(f"regression: identical to {snapshot}")
        return
    for line in result.diff:
        typer.secho(line, fg="green" if line.startswith("+") else "red" if line.startswith("-") else None)
    raise typer.Exit(1)


@app.command()
def realworld(
    split: Annotated[str, typer.Option(
        help="dev (tuning), test (the frozen held-out questions), fresh, fresh2 ... fresh48 (each written"
             " after the design froze)")] = "dev",
    report: Annotated[Path | None, typer.Option(help="JSON report")] = None,
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """Real public postmortems, split once by time: opslore vs BM25, e5 top-k and their fusion on the same
    questions, in English and Chinese, with and without alert and signals. Exit 1 when the release gate fails
    (opslore below e5 top-k on Recall@1 or @5 in either language, memory-on checks above half of memory-off's,
    more than 10% of questions made worse)."""
    import json
    import uuid

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from replay import realworld as rw
    from services.cli.client import OpsloreClient

    if split not in ("dev", "test", *rw.FRESH_SETS):
        raise typer.BadParameter(f"--split is dev, test or one of {', '.join(rw.FRESH_SETS)}")
    s = get_settings()
    url = api_url or s.api_url
    pms = rw.load()
    admin = OpsloreClient(url, s.admin_token)
    client = OpsloreClient(url, admin.create_key(f"realworld-{uuid.uuid4().hex[:10]}", "reviewer", "default"))
    asked = rw.questions(pms, split)
    with Progress(transient=True) as progress:
        task = progress.add_task("real postmortems", total=len(rw.history(pms)) + 4 * len(asked))
        outcomes: dict[str, Any] = {}
        results = rw.evaluate(client, pms, split, progress=lambda _: progress.advance(task), causes=outcomes)
    corpus = rw.summary(pms)
    for key, scores in results.items():
        table = Table("system", "R@1", "R@5", "MRR", "false hints", "checks on/off", "worse", title=(
            f"{split} split, questions asked in {key}: {scores[0].questions} recurrences, {scores[0].novel} novel "
            "over {history} approved ({classes} classes)".format(**corpus)))
        for sc in scores:
            table.add_row(sc.name, *(f"{v:.3f}" for v in (sc.recall_at_1, sc.recall_at_5, sc.mrr, sc.false_hint_rate)),
                          f"{sc.checks_on}/{sc.checks_off}", str(sc.worse))
        Console().print(table)
        for other in scores[1:]:
            iv = rw.paired_interval(scores[0], other)
            typer.echo(f"  {key}: opslore - {other.name}, Recall@5 {iv.difference:+.3f} "
                       f"[{iv.low:+.3f}, {iv.high:+.3f}] (95%, paired bootstrap over the questions)")
    for key, o in outcomes.items():
        typer.echo(f"  {key}: causes {json.dumps(o['outcome'].to_json())}; e5 top-1 class {o['e5_top1_class']}"
                   f"/{o['recurrences']}")
        typer.echo(f"  {key}: the m most probable causes as evidence (checks, worse, true cause marked; the oracle "
                   "abstention's checks): " + "; ".join(
            f"m={p.m} {p.checks_on}/{p.checks_off}, {p.worse} worse, {p.recall}/{p.recurrences}; ceiling {p.ceiling}"
            for p in o["tradeoff"]))
    failures = rw.gate(results)
    report = report or Path(f"replay/results/realworld-{split}.json")
    from replay.outcome import reliability_png

    png = reliability_png({k: o["outcome"].reliability for k, o in outcomes.items()},
                          report.parent / f"reliability-realworld-{split}.png",
                          f"causes, real incidents across organisations ({split})")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"split": split, "corpus": corpus,
                                  "results": {k: {sc.name: sc.to_json() for sc in v} for k, v in results.items()},
                                  "recall_at_5_against_opslore": {
                                      k: {sc.name: rw.paired_interval(v[0], sc).to_json() for sc in v[1:]}
                                      for k, v in results.items()},
                                  "causes": {k: {**o["outcome"].to_json(), "e5_top1_class": o["e5_top1_class"],
                                                 "recurrences": o["recurrences"],
                                                 "tradeoff": [p.to_json() for p in o["tradeoff"]]}
                                             for k, o in outcomes.items()},
                                  "reliability_png": str(png) if png else None,
                                  "gate_failures": failures}, indent=2, ensure_ascii=False), encoding="utf-8")
    for failure in failures:
        typer.secho(f"release gate: {failure}", fg="red")
    if failures:
        raise typer.Exit(1)


@app.command("ranker-fit")
def ranker_fit(
    tenant: Annotated[str | None, typer.Option(help="reuse a tenant an earlier fit learned")] = None,
) -> None:
    """Fit the briefing's text model on history (leave-one-out) and choose its abstention point on dev; writes
    services/briefing/data/ranker.json and replay/realworld/ranker-curves.json (see replay/ranker_fit.py)."""
    import json

    from rich.progress import Progress

    from replay import ranker_fit

    with Progress(transient=True) as progress:
        task = progress.add_task("fitting", total=None)
        out = ranker_fit.run(get_settings(), lambda _: progress.advance(task), tenant=tenant)
    typer.echo(json.dumps(out, indent=1))


@app.command()
def within(
    org: Annotated[list[str], typer.Option(help="organisations of replay/realworld/within/split.yaml")] = ["gitlab"],  # noqa: B006
    report: Annotated[Path, typer.Option(help="JSON report")] = Path("replay/results/within.json"),
    api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None,
) -> None:
    """One organisation's own history in time order: causes against its base rates, static and replayed in time
    order with and without feedback (see replay/within.py); a reliability diagram beside the report."""
    import json

    from replay import within as wi
    from services.cli.client import OpsloreClient

    s = get_settings()
    url = api_url or s.api_url
    out = wi.report(OpsloreClient(url, s.admin_token), url, org, report.parent,
                    lambda step: typer.echo(f"  {step}", err=True))
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    typer.echo(json.dumps({o: {lang: r[lang]["outcome"] for lang in ("en", "zh")} for o, r in out["static"].items()},
                          indent=1))


@app.command("within-freeze")
def within_freeze(
    org: Annotated[str, typer.Option(help="the organisation's key in the split")],
    file: Annotated[list[str], typer.Option(help="its incident files under replay/realworld/within")],
    role: Annotated[str, typer.Option(help="dev (design may look at it) or test (asked once the design froze)")],
    about: Annotated[str, typer.Option(help="who wrote it, when, from what")],
) -> None:
    """Freeze a within-organisation history into replay/realworld/within/split.yaml, once, before anything is
    asked of it (see replay/within.py `freeze`)."""
    from replay import within as wi

    entry = wi.freeze(org, file, role, about)
    typer.echo(f"{org}: {entry['incidents']} incidents, {entry['history']} history, sha {entry['ids_sha256']}")


@app.command("causes-fit")
def causes_fit(
    tenant: Annotated[str | None, typer.Option(help="reuse a tenant an earlier fit learned")] = None,
) -> None:
    """Fit the shipped causes model on history (time order) and the tuning questions; writes
    services/briefing/data/causes.json (see replay/causes_fit.py)."""
    import json

    from replay import causes_fit as fit

    out = fit.run(get_settings(), lambda step: typer.echo(f"  {step}", err=True), tenant=tenant)
    typer.echo(json.dumps(out, indent=1))


@app.command("symptom-fit")
def symptom_fit() -> None:
    """Fit the shipped symptom classifier on the corpus's frozen cross-organisation sets (never its history);
    writes services/briefing/data/symptoms.json (see replay/symptom_fit.py). Fit it before `causes-fit`."""
    from replay import symptom_fit as fit

    fit.main()


@app.command("worse-cost")
def worse_cost(api_url: Annotated[str | None, typer.Option(help="default OPSLORE_API_URL")] = None) -> None:
    """Choose the price of a longer investigation the causes' evidence choice uses, on the spent cross-org sets the
    causes model never saw, each answered by a symptom classifier that never saw its fold; writes
    services/briefing/data/worse_cost.json (see replay/worse_cost_fit.py). Run it after `causes-fit`."""
    import json

    from replay import worse_cost_fit as fit

    s = get_settings()
    if api_url:
        s = s.model_copy(update={"api_url": api_url})
    doc = fit.main(s, lambda step: typer.echo(f"  {step}", err=True))
    for point in doc["grid"]:
        typer.echo(json.dumps(point))
    typer.echo(f"worse_cost {doc['worse_cost']} ({doc['questions']} questions, {doc['answers']} answers)")


@app.command("realworld-split")
def realworld_split(
    fresh: Annotated[str | None, typer.Option(
        help="freeze the incidents outside every frozen set as the next fresh set (fresh, fresh2, ... fresh48),"
             " naming the commit the design froze at")] = None,
    despite_duplicates: Annotated[bool, typer.Option(
        help="freeze even when an incident looks like one already frozen (after reading each pair)")] = False,
) -> None:
    """Make the frozen split of the real-incident corpus (once: refuses when replay/realworld/split.yaml exists);
    with --fresh, freeze the incidents added since as the next fresh set (each once), refusing while any of them
    looks like an incident already frozen (`realworld.likely_duplicates`)."""
    from replay import realworld as rw

    if fresh:
        # the rule reads every history incident, the checkers' organisations' too (`load`'s excluded ones)
        pms = rw.load(split=None, excluded=frozenset())
        pairs = rw.likely_duplicates(pms, rw.frozen_roles())
        if pairs and not despite_duplicates:
            for new, old in pairs:
                typer.echo(f"{new} looks like the frozen {old}", err=True)
            typer.echo(f"{len(pairs)} likely duplicates: drop them, or read each and pass --despite-duplicates",
                       err=True)
            raise typer.Exit(1)
        typer.echo(rw.write_fresh(pms, fresh))
        return
    typer.echo(rw.write_split(rw.load(split=None, excluded=frozenset())))


@app.command()
def check(paths: Annotated[list[Path], typer.Argument()]) -> None:
    """Parse scenario files without running them."""
    scenarios = [sc for p in paths for sc in load_scenarios(p)]
    typer.echo(f"{len(scenarios)} scenarios parse")


if __name__ == "__main__":
    app()
