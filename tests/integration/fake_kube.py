"""A local stand-in for the Kubernetes API server: recorded responses, served over real HTTP.

The collector talks to it through the official client exactly as it would to a cluster. Requests are
recorded so tests can check that only read verbs (GET) were used.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s"
ROUTES = {
    "/api/v1/namespaces/prod/pods": "pods.json",
    "/api/v1/namespaces/prod/events": "events.json",
    "/apis/apps/v1/namespaces/prod/deployments/search-api": "deployment.json",
    "/apis/apps/v1/namespaces/prod/replicasets": "replicasets.json",
}


class FakeKube:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.url = ""


@contextmanager
def fake_kube_api() -> Iterator[FakeKube]:
    state = FakeKube()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = urlparse(self.path).path
            state.requests.append(("GET", self.path))
            if "/namespaces/kube-system/" in path:
                self._send(403, (FIXTURES / "forbidden.json").read_bytes())
            elif path in ROUTES:
                self._send(200, (FIXTURES / ROUTES[path]).read_bytes())
            else:
                self._send(404, json.dumps({"kind": "Status", "code": 404, "reason": "NotFound"}).encode())

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
