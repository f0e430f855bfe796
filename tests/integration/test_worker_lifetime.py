"""A multi-worker API killed without warning takes its workers with it (`services.api.worker_lifetime`): after
SIGKILL of the server process no worker keeps the port, so the next start binds it. Before, the orphaned
workers kept answering with the old code and a restart failed with "address already in use"."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text().split()  # a zombie has exited: its parent (init) reaps it
    return stat[2] != "Z"


def _serve(port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", "api", "--port", str(port), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _healthy(port: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


def test_workers_stop_with_a_killed_server_and_the_port_can_be_bound_again() -> None:
    port = _free_port()
    server = _serve(port)
    try:
        assert _healthy(port), "the API did not start"
        workers = _children(server.pid)
        assert len(workers) >= 2
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "a worker outlived its server"
        again = _serve(port)
        try:
            assert _healthy(port), "the port was not free for the next server"
        finally:
            again.terminate()
            again.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
