"""The `opslore` command line: run the services, operate the database, brief and review."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from services.cli import operations
from services.cli.client import ApiError, OpsloreClient
from services.cli.governance import governance_app
from services.cli.postmortems import bulk_review, import_app, print_bulk
from services.cli.terminal import shown
from services.common.errors import OpsloreError
from services.common.settings import get_settings

app = typer.Typer(help="opslore: event-sourced incident memory for SRE agents", no_args_is_help=True)
db_app = typer.Typer(help="database schema", no_args_is_help=True)
projector_app = typer.Typer(help="the ledger -> episode projector", no_args_is_help=True)
review_app = typer.Typer(help="review memory candidates", no_args_is_help=True)
index_app = typer.Typer(help="derived indexes (lexical, embeddings)", no_args_is_help=True)
ledger_app = typer.Typer(help="export and import ledger files", no_args_is_help=True)
collect_app = typer.Typer(help="run an investigation collector for an incident, once or on a schedule",
                          no_args_is_help=True)
records_app = typer.Typer(help="governed memory records", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(projector_app, name="projector")
app.add_typer(review_app, name="review")
app.add_typer(records_app, name="records")
app.add_typer(index_app, name="index")
app.add_typer(ledger_app, name="ledger")
app.add_typer(collect_app, name="collect")
app.add_typer(governance_app, name="governance")
app.add_typer(import_app, name="import")
app.command("mcp")(operations.mcp)
app.command("backup")(operations.backup_cmd)
app.command("restore")(operations.restore_cmd)
console = Console()


def _client() -> OpsloreClient:
    s = get_settings()
    if not s.api_key:
        raise typer.BadParameter("set OPSLORE_API_KEY (or api_key in the OPSLORE_CONFIG file)")
    return OpsloreClient(s.api_url, s.api_key)


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except ApiError as exc:
        console.print(f"[red]error:[/red] {shown(exc)}")
        raise typer.Exit(1) from None


@app.command()
def api(host: str | None = None, port: int | None = None,
        workers: Annotated[int | None, typer.Option(help="processes; default OPSLORE_API_WORKERS")] = None) -> None:
    """Run the HTTP API (default 127.0.0.1:9001) with OPSLORE_API_WORKERS processes; SIGTERM drains
    in-flight requests for up to 20 s."""
    import os
    import secrets
    import tempfile

    import uvicorn

    s = get_settings()
    n = workers or s.api_workers
    if n > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # /metrics sums every worker's samples
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="opslore-metrics-")
    if n > 1 and not s.ui_secret:  # one cookie-signing secret for every worker of this server
        os.environ["OPSLORE_UI_SECRET"] = secrets.token_urlsafe(32)
    bind_host, bind_port = host or s.api_host, port or s.api_port
    target: dict[str, Any] = {"host": bind_host, "port": bind_port}
    listener = listening_socket(bind_host, bind_port) if n > 1 else None  # kept open for the workers
    if listener is not None:  # workers share our socket: with TCP_NODELAY set on it, which uvicorn's does not get
        target = {"fd": listener.fileno()}
    uvicorn.run("services.api.app:create_app", factory=True, workers=n, log_config=None, access_log=False,
                timeout_graceful_shutdown=20, **target)


def listening_socket(host: str, port: int) -> Any:
    """A TCP listening socket with TCP_NODELAY (inherited by accepted connections): without it, workers of a
    multi-process uvicorn answer keep-alive clients 40 ms late (Nagle against delayed ACK)."""
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


@db_app.command("migrate")
def db_migrate() -> None:
    """Apply the forward-only SQL migrations (owner role)."""
    from services.common.migrate import apply_migrations

    applied = apply_migrations(get_settings().owner_database_url)
    console.print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")


@app.command("topics")
def topics() -> None:
    """Create the ledger and dead-letter topics if they are missing."""
    from services.common.kafka import ensure_topics

    ensure_topics(get_settings())


@projector_app.command("run")
def projector_run(processes: Annotated[int, typer.Option(min=1, help="projector processes sharing the "
                                                          "ledger's partitions (one consumer group)")] = 1) -> None:
    """Consume the ledger and maintain episodes and candidates until SIGTERM."""
    import time

    from services.common import logs
    from services.common.db import Database
    from services.common.metrics_server import Readiness, database_check, serve_metrics
    from services.projector import readiness
    from services.projector.runner import ProjectorRunner

    s = get_settings()
    logs.configure(s.log_format)
    if processes > 1:
        from services.projector.supervisor import supervise

        supervise(s, processes)
        return
    db = Database(s.database_url, max_size=2)  # the loop's connection and the readiness probe's
    db.open()
    runner = ProjectorRunner(s, db)

    def ready() -> Readiness:  # /readyz: group membership, PostgreSQL, own partitions' lag
        return Readiness(readiness.checks(runner.group, time.monotonic(), database_check(db), s.ready_max_lag))

    serve_metrics(s.projector_metrics_host, s.projector_metrics_port, ready)
    try:
        runner.run_forever()
    finally:
        db.close()


@projector_app.command("rebuild")
def projector_rebuild() -> None:
    """Empty the projection and its offsets; a running projector must be restarted to replay from 0."""
    from services.projector.runner import rebuild

    s = get_settings()
    rebuild(s, s.owner_database_url)
    console.print("projection emptied; restart the projector to rebuild from offset 0")


def _each_tenant(tenants: list[str] | None, work: Callable[[Any, str], dict[str, Any]]) -> None:
    """Run a maintenance step for the given tenants, or every tenant that holds memory."""
    from services.common.db import Database

    db = Database(get_settings().database_url, max_size=2)
    db.open()
    try:
        with db.transaction() as cur:
            cur.execute("SELECT opslore_memory_tenants() AS tenant")
            found = [r["tenant"] for r in cur.fetchall()]
        for t in tenants or found:
            console.print(work(db, t))
    finally:
        db.close()


TenantOption = Annotated[list[str] | None, typer.Option(help="tenant (repeatable); default: every tenant")]


def _reindex_semantic(model: str, tenant: list[str] | None, activate: bool, batch: int) -> None:
    import os

    from rich.progress import Progress

    from services.briefing.semantic import SemanticIndex, make_embedder, reindex

    embedder = make_embedder(model, threads=os.cpu_count() or 1)  # bulk work: every core on each batch
    if embedder is None:
        raise typer.BadParameter("choose an embedding model to index")
    index = SemanticIndex(embedder)

    def one(db: Any, t: str) -> dict[str, object]:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(f"{t}: {index.model}", total=None)
            return reindex(db, index, t, activate=activate, batch=batch,
                           progress=lambda done, total: bar.update(task, completed=done, total=total))

    _each_tenant(tenant, one)


ModelOption = Annotated[str, typer.Option(help="embedder: e5-small (the default model) or hash-ngram")]
BatchOption = Annotated[int, typer.Option(min=1, max=1024, help="versions per embedder call and transaction")]
ActivateOption = Annotated[bool, typer.Option(help="serve from the new vectors once they are complete")]


@index_app.command("reindex-semantic")
def index_reindex_semantic(model: ModelOption = "e5-small", tenant: TenantOption = None,
                           activate: ActivateOption = True, batch: BatchOption = 32) -> None:
    """Compute a model's vectors for every current record version, in batches, with a progress bar; with
    --activate (the default) the tenant serves from them once complete. Run after an embedding model upgrade
    (the model key names model, version, dimensions and the embedded text's version)."""
    _reindex_semantic(model, tenant, activate, batch)


@index_app.command("reindex")
def index_reindex(model: ModelOption = "e5-small", tenant: TenantOption = None,
                  activate: Annotated[bool, typer.Option(help="serve from the new vectors once they are complete")]
                  = False, batch: BatchOption = 32) -> None:
    """Compute a model's vectors for every current record version; the old model serves until --activate."""
    _reindex_semantic(model, tenant, activate, batch)


@index_app.command("snapshots")
def index_snapshots(once: Annotated[bool, typer.Option(help="one pass, then exit (else until SIGTERM)")] = False,
                    tenant: TenantOption = None,
                    full: Annotated[bool, typer.Option(help="rebuild from PostgreSQL, not from the last "
                                                       "snapshot")] = False,
                    force: Annotated[bool, typer.Option(help="with --once: build even below the thresholds")]
                    = False) -> None:
    """Build and publish each tenant's semantic index snapshot under OPSLORE_INDEX_DIR, which the machine's API
    processes memory-map (run one beside them: `make up` does; in Kubernetes a container of the API pod)."""
    from services.briefing import snapshot_builder

    s = get_settings()
    if not once:
        snapshot_builder.run(s)
        return
    from services.briefing.semantic import make_embedder, model_key
    from services.briefing.snapshots import SnapshotStore
    from services.common.db import Database

    embedder = make_embedder(s.embedding)
    if embedder is None:
        console.print("OPSLORE_EMBEDDING=off: no semantic index to build")
        return
    db = Database(s.database_url, max_size=2)
    db.open()
    builder = snapshot_builder.SnapshotBuilder(db, SnapshotStore(s.index_dir), model_key(embedder), embedder.dims)
    try:
        if force or full:
            for t in tenant or builder.tenants():
                console.print({"tenant": t, "published": builder.refresh(t, full=full, force=True)})
        else:
            console.print(builder.tick(tenant))
    finally:
        db.close()


@index_app.command("reindex-lexical")
def index_reindex_lexical(tenant: TenantOption = None) -> None:
    """Rebuild the lexical index with the current analyzer and alias dictionary (run after changing
    OPSLORE_ALIAS_FILE or upgrading); each tenant is swapped in one transaction."""
    from services.memory.service import reindex_lexical

    _each_tenant(tenant, reindex_lexical)


@ledger_app.command("export")
def ledger_export(since: Annotated[str | None, typer.Option(help="RFC 3339 time")] = None,
                  incident: str | None = None) -> None:
    """Write the key's tenant ledger to stdout as JSON Lines (admin key)."""
    for line in _call(lambda: list(_client().export(since, incident))):
        print(line)


@ledger_app.command("import")
def ledger_import(path: Path, keep_project: bool = False) -> None:
    """Append a ledger file to the key's tenant (event ids kept: importing twice is a no-op)."""
    from services.cli.ledger_io import import_ledger, read_ledger

    try:
        sent = _call(import_ledger, _client(), read_ledger(path), keep_project=keep_project)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {shown(exc)}")
        raise typer.Exit(1) from None
    console.print(f"imported {sent} events")


def _schedule(job: Any, every: float | None, times: int) -> None:
    """Run `job` once, or every `every` seconds for `times` runs (0 = until interrupted), with APScheduler."""
    if not every:
        job()
        return
    from apscheduler.schedulers.blocking import BlockingScheduler

    scheduler = BlockingScheduler()
    runs = {"n": 0}

    def tick() -> None:
        try:
            job()
        except Exception as exc:  # report and keep the schedule alive
            console.print(f"[red]collector run failed:[/red] {shown(exc)}")
        runs["n"] += 1
        if times and runs["n"] >= times:
            scheduler.shutdown(wait=False)

    scheduler.add_job(tick, "interval", seconds=every, next_run_time=datetime.now(UTC), max_instances=1)
    scheduler.start()


@collect_app.command("prometheus")
def collect_prometheus(
    incident: Annotated[str, typer.Option(help="incident id to append to")],
    query: Annotated[list[str], typer.Option(help="PromQL (repeatable)")],
    range_minutes: Annotated[int, typer.Option(help="0 = instant query")] = 0,
    every: Annotated[float | None, typer.Option(help="seconds between runs")] = None,
    times: Annotated[int, typer.Option(help="stop after this many runs (0 = never)")] = 0,
) -> None:
    """Query Prometheus and append trusted observations (query, summary, signals) to the incident."""
    from services.collectors.observations import observation
    from services.collectors.prometheus import PrometheusCollector
    from services.collectors.signals import load_rules

    s = get_settings()
    if not s.prometheus_url:
        raise typer.BadParameter("set OPSLORE_PROMETHEUS_URL")
    collector, client = PrometheusCollector(s.prometheus_url, load_rules(s.signal_rules)), _client()

    def job() -> None:
        for q in query:
            r = collector.range(q, range_minutes) if range_minutes else collector.instant(q)
            event = observation(incident, "prometheus", r.summary, writer="opslore-collector", query=q,
                                signals=r.signals, values=r.values())
            _call(client.append, [event])
            console.print(f"{shown(incident)}: {shown(r.summary)} signals={shown(r.signals)}")

    _schedule(job, every, times)


@collect_app.command("kubernetes")
def collect_kubernetes(
    incident: Annotated[str, typer.Option(help="incident id to append to")],
    selector: Annotated[str, typer.Option(help="pod label selector, e.g. app=search-api")],
    namespace: str | None = None,
    deployment: str | None = None,
    every: Annotated[float | None, typer.Option(help="seconds between runs")] = None,
    times: Annotated[int, typer.Option(help="stop after this many runs (0 = never)")] = 0,
) -> None:
    """Read pods, warning events and (optionally) rollout history; append trusted observations."""
    from services.collectors.kubernetes import KubernetesCollector, api_client
    from services.collectors.observations import observation

    s = get_settings()
    ns = namespace or s.kube_namespace
    collector, client = KubernetesCollector(api_client(s.kube_host, s.kubeconfig)), _client()

    def job() -> None:
        found = [collector.pods(ns, selector), collector.events(ns, selector.split("=")[-1])]
        if deployment:
            found.append(collector.rollout(ns, deployment))
        events = [observation(incident, "kubernetes", o.summary, writer="opslore-collector", query=o.query,
                              signals=o.signals, values=o.values) for o in found]
        _call(client.append, events)
        for o in found:
            console.print(f"{shown(incident)}: {shown(o.summary)} signals={shown(o.signals)}")

    try:
        _schedule(job, every, times)
    except OpsloreError as exc:
        console.print(f"[red]error:[/red] {shown(exc.message)}")
        raise typer.Exit(1) from None


@app.command()
def keys(tenant: str, role: str = "reviewer", project: str | None = None) -> None:
    """Create an API key with the bootstrap token (OPSLORE_ADMIN_TOKEN)."""
    s = get_settings()
    client = OpsloreClient(s.api_url, s.admin_token)
    print(_call(client.create_key, tenant, role, project))


@app.command()
def brief(
    text: Annotated[str, typer.Option(help="what the agent sees")] = "",
    alert: str | None = None,
    service: Annotated[list[str] | None, typer.Option(help="service (repeatable)")] = None,
    signal: Annotated[list[str] | None, typer.Option(help="signal (repeatable)")] = None,
    limit: int = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Ask for a briefing and print it."""
    req: dict[str, Any] = {"text": text or None, "services": service or [], "signals": signal or [], "limit": limit}
    if alert:
        req["alert"] = {"name": alert}
    answer = _call(_client().briefing, req)
    if as_json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return
    print_briefing(answer)


def print_causes(answer: dict[str, Any]) -> None:
    """The likely causes: the evidence-backed ones against their base rates, then the tenant's usual ones."""
    causes = answer.get("causes") or []
    if not causes:
        console.print("[yellow]No approved history yet: every cause is new to this memory.[/yellow]")
        return
    table = Table("cause", "probability", "base rate", "basis", title="likely causes (check in this order)")
    for c in causes[:6]:
        table.add_row(shown(c["category"], one_line=True), f"{c['probability']:.0%}", f"{c['prior']:.0%}",
                      c["basis"])
    console.print(table)
    console.print(f"a cause new to this tenant: {answer.get('novelty', 0):.0%}")


def print_briefing(answer: dict[str, Any]) -> None:
    print_causes(answer)
    if not answer["hints"]:
        console.print("[yellow]No specific past incident matches: investigate from current evidence.[/yellow]")
    for i, h in enumerate(answer["hints"], 1):
        console.rule(f"hint {i}  score {h['score']:.3f}  confidence {h['confidence']:.2f}  ({h['authority']})")
        console.print(f"[bold]{shown(h['summary'])}[/bold]\nroot cause: {shown(h['root_cause'])}")
        console.print(f"from: {shown(', '.join(h['source_incidents']))}")
        for w in h["warnings"]:
            console.print(f"  [magenta]! {shown(w['code'])}[/magenta]: {shown(w['message'])}")
        for c in h["verify_with"]:
            console.print(f"  [cyan]check[/cyan] {shown(c['source'])}: {shown(c['query'])}\n        "
                          f"{shown(c['expect'])}")
    console.print(f"(~{answer['token_estimate']} tokens, degraded: {answer['degraded'] or 'none'})")


@review_app.command("list")
def review_list(state: str = "pending", incident: str | None = None) -> None:
    """List candidates waiting for review."""
    params = {"state": state, **({"incident_id": incident} if incident else {})}
    rows = _call(_client().candidates, **params)
    table = Table("candidate", "incident", "type", "proposal", "summary")
    for c in rows:
        kind = (c.get("proposal") or {}).get("kind", c["state"])
        table.add_row(str(c["candidate_id"]), shown(c["incident_id"]), shown(c["memory_type"]), shown(kind),
                      shown(c["summary"][:70], one_line=True))
    console.print(table)


@review_app.command("show")
def review_show(candidate_id: str) -> None:
    """A candidate: what it claims, its evidence with trust, and what it would replace (as a diff)."""
    client = _client()
    c = _call(client.request, "GET", f"/v1/candidates/{candidate_id}")
    content, proposal = c["content"], c.get("proposal") or {}
    console.rule(f"candidate {c['candidate_id']} from {shown(c['incident_id'])} ({shown(c['state'])})")
    console.print(f"[bold]{shown(c['summary'])}[/bold]\nroot cause: {shown(content['root_cause'])} "
                  f"\\[{shown(content.get('root_cause_category') or '-')}]  confidence {content['confidence']:.2f}")
    table = Table("trust", "source", "observation", "query")
    for e in content["evidence"]:
        table.add_row(shown(e["trust"]), shown(e["source"]), shown(e["summary"]), shown(e.get("query") or ""))
    console.print(table)
    if (content.get("trust_mix") or {}).get("untrusted_text"):
        console.print("[magenta]! part of the evidence is untrusted text: quoted, never a rule[/magenta]")
    if proposal.get("family_id"):
        current = _call(client.record, str(proposal["family_id"]))["current"]
        console.print(f"proposal: {shown(proposal['kind'])} of family {proposal['family_id']} "
                      f"(current version {proposal['current_version']})")
        for field in ("summary", "root_cause", "root_cause_category", "signals"):
            if current.get(field) != content.get(field):
                console.print(f"[red]- {field}: {shown(current.get(field))}[/red]")
                console.print(f"[green]+ {field}: {shown(content.get(field))}[/green]")
    else:
        console.print("proposal: new record family (replaces nothing)")


@review_app.command("approve")
def review_approve(candidate_id: Annotated[str | None, typer.Argument()] = None, note: str | None = None,
                   summary: Annotated[str | None, typer.Option("--edit-summary", "--summary")] = None,
                   root_cause: Annotated[str | None, typer.Option("--edit-root-cause")] = None,
                   category: Annotated[str | None, typer.Option("--edit-category")] = None,
                   services: Annotated[str | None, typer.Option("--edit-services", help="comma-separated")] = None,
                   resolution_text: Annotated[str | None, typer.Option("--edit-resolution")] = None,
                   as_new_family: bool = False,
                   every: Annotated[bool, typer.Option("--all", help="every pending candidate")] = False,
                   imported: Annotated[bool, typer.Option("--imported", help="with --all: imported ones")] = False,
                   dry_run: Annotated[bool, typer.Option("--dry-run", help="with --all: list, change nothing")] = False,
                   ) -> None:
    """Approve a candidate, optionally edited first (summary, root cause, category, services, resolution);
    409 if its target record moved since.
    `--all [--imported] [--dry-run]`: every pending (imported) candidate, each its own review and audit row."""
    client = _client()
    if every:
        print_bulk(_call(bulk_review, client, approve=True, imported=imported, reason=note, dry_run=dry_run),
                   "approved", dry_run)
        return
    if candidate_id is None:
        raise typer.BadParameter("name a candidate, or use --all")
    c = _call(client.request, "GET", f"/v1/candidates/{candidate_id}")
    proposal = c.get("proposal") or {}
    body: dict[str, Any] = {"note": note, "expected_version": proposal.get("current_version")}
    edits: dict[str, Any] = {k: v for k, v in (("summary", summary), ("root_cause", root_cause),
                                               ("root_cause_category", category), ("resolution", resolution_text)) if v}
    if services is not None:
        edits["services"] = [s.strip() for s in services.split(",") if s.strip()]
    if edits:
        body["edits"] = edits
    if as_new_family:
        body["resolution"], body["expected_version"] = "new_family", None
    elif proposal.get("kind") == "conflict":
        body["resolution"] = "new_version"
    out = _call(client.approve, candidate_id, **body)
    console.print(f"approved -> family {out['family_id']} version {out['version']}")


@review_app.command("reject")
def review_reject(reason: Annotated[str, typer.Option(help="why")],
                  candidate_id: Annotated[str | None, typer.Argument()] = None,
                  every: Annotated[bool, typer.Option("--all", help="every pending candidate")] = False,
                  imported: Annotated[bool, typer.Option("--imported", help="with --all: imported ones")] = False,
                  dry_run: Annotated[bool, typer.Option("--dry-run", help="with --all: list, change nothing")] = False,
                  ) -> None:
    """Reject a candidate with a reason; `--all [--imported] [--dry-run]`: every pending (imported) one."""
    if every:
        print_bulk(_call(bulk_review, _client(), approve=False, imported=imported, reason=reason, dry_run=dry_run),
                   "rejected", dry_run)
        return
    if candidate_id is None:
        raise typer.BadParameter("name a candidate, or use --all")
    _call(_client().reject, candidate_id, reason)
    console.print("rejected")


@records_app.command("history")
def records_history(family_id: str) -> None:
    """Show every version of a family and its audit trail."""
    rec = _call(_client().record, family_id)
    table = Table("version", "state", "created", "by", "summary")
    for v in rec["versions"]:
        table.add_row(str(v["version"]), shown(v["state"]), str(v["created_at"])[:19], shown(v["created_by"]),
                      shown(v["summary"][:60], one_line=True))
    console.print(table)


@records_app.command("retract")
def records_retract(family_id: str, reason: Annotated[str, typer.Option(help="why")]) -> None:
    """Retract a family (logical; reversible by rollback)."""
    out = _call(_client().record_op, family_id, "retract", {"reason": reason})
    console.print(f"retracted version {out['version']}")


@records_app.command("rollback")
def records_rollback(family_id: str, to: Annotated[int, typer.Option("--to")],
                     reason: Annotated[str, typer.Option(help="why")] = "rollback") -> None:
    """Restore the content of an earlier version as a new current version."""
    out = _call(_client().record_op, family_id, "rollback", {"to_version": to, "reason": reason})
    console.print(f"family {out['family_id']} now at version {out['version']}")


if __name__ == "__main__":
    app()
