"""A worker process's Prometheus endpoint (the projector's and the governance worker's)."""

from __future__ import annotations

import logging


def serve_metrics(host: str, port: int) -> bool:
    """A worker's /metrics on its own port (0: off). A port already taken (a second worker on one host) is
    logged and skipped: metrics are not worth stopping the worker for."""
    from prometheus_client import start_http_server

    if port == 0:
        return False
    try:
        start_http_server(port, addr=host)
    except OSError as exc:
        logging.getLogger("opslore.metrics").warning("metrics port %s:%s unavailable (%s); serving none",
                                                     host, port, exc)
        return False
    return True
