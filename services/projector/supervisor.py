"""`opslore projector run --processes N`: N projector processes in one consumer group on this host.

Kafka's group protocol spreads the ledger's partitions over them (more processes than partitions idle);
each keeps its offsets in PostgreSQL in its projection's transaction, so a partition handed over in a
rebalance resumes exactly where the last committed batch ended, and a record seen twice is a duplicate
no-op (ledger rows are unique per tenant and event). The supervisor restarts a process that dies and
forwards SIGTERM; each process serves /metrics on the base port plus its index.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

from services.common.settings import Settings

log = logging.getLogger("opslore.projector.supervisor")
RESTART_DELAY_S = 1.0


def spawn(settings: Settings, index: int) -> subprocess.Popen[bytes]:
    port = settings.projector_metrics_port + index if settings.projector_metrics_port else 0
    env = os.environ | {"OPSLORE_PROJECTOR_METRICS_PORT": str(port)}
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", "projector", "run", "--processes", "1"],
                            env=env)


def supervise(settings: Settings, processes: int) -> None:
    children = {i: spawn(settings, i) for i in range(processes)}
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for child in children.values():
            if child.poll() is None:
                child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("projector supervisor: %d processes", processes)
    while not stopping:
        time.sleep(0.5)
        for i, child in list(children.items()):
            if child.poll() is not None and not stopping:
                log.warning("projector process %d exited with %s; restarting", i, child.returncode)
                time.sleep(RESTART_DELAY_S)
                children[i] = spawn(settings, i)
    for child in children.values():
        child.wait(timeout=60)
