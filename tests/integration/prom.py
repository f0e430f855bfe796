"""A real Prometheus server (Debian package) on its own port and data directory, scraping an exporter
whose metrics the test sets. Scrapes every second so tests can wait for a new value quickly."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry, Gauge, start_http_server

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


@dataclass
class LivePrometheus:
    url: str
    pool_pending: Gauge

    def wait_for(self, query: str, value: float, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = httpx.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5).json()
            result = r.get("data", {}).get("result", [])
            if result and float(result[0]["value"][1]) == value:
                return
            time.sleep(0.25)
        raise AssertionError(f"prometheus never saw {query} == {value}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_prometheus(workdir: Path) -> Iterator[LivePrometheus]:
    if not Path(PROMETHEUS).exists():
        raise RuntimeError("prometheus is not installed: run deploy/local/install.sh")
    registry = CollectorRegistry()
    gauge = Gauge("db_pool_pending", "Requests waiting for a DB connection", ["service"], registry=registry)
    exporter_port, prom_port = _free_port(), _free_port()
    server, _thread = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    config = workdir / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n  - job_name: test-exporter\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n",
        encoding="utf-8")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.retention.time=1h"],
        stdout=subprocess.DEVNULL, stderr=(workdir / "prometheus.log").open("wb"))
    url = f"http://127.0.0.1:{prom_port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"prometheus did not start: {(workdir / 'prometheus.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield LivePrometheus(url, gauge)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        server.shutdown()
