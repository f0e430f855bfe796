"""WorkerLifetime: an API worker process lives no longer than the server process that started it.

`opslore api` with more than one worker is a uvicorn supervisor and its worker processes sharing one listening
socket. When the supervisor dies without stopping them (SIGKILL, the OOM killer, a crash), the workers would keep
serving the port with the old code, and the next `opslore api` (or `stack.sh up`) would fail with "address
already in use" while they answer. `tie_to_parent` asks the kernel to send the worker SIGTERM when its parent
dies (Linux `PR_SET_PDEATHSIG`), and stops it at once if the parent is already gone. A process that is not a
multiprocessing child (a single-worker server, the tests' in-process app) is left alone: its parent is a shell.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import signal
import sys

log = logging.getLogger(__name__)
PR_SET_PDEATHSIG = 1


def tie_to_parent() -> bool:
    """In a multiprocessing child on Linux: SIGTERM when the parent dies; True when the tie is in place."""
    parent = multiprocessing.parent_process()
    if parent is None or not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("could not tie worker %d to its server process: errno %d", os.getpid(), ctypes.get_errno())
        return False
    if parent.pid is not None and os.getppid() != parent.pid:  # the server died before the tie
        log.warning("worker %d: its server process %s is gone; stopping", os.getpid(), parent.pid)
        os.kill(os.getpid(), signal.SIGTERM)
    return True
