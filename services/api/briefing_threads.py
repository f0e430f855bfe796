"""`BriefingThreads`: the API process's bulkhead of threads that compute briefings.

A briefing is CPU in Python and round trips to PostgreSQL on a synchronous connection, so it runs on a thread
while the event loop serves other requests. `OPSLORE_API_BRIEFING_THREADS` of them at once; more wait in the
executor's queue, so that threads do not only contend for the GIL and the database's cores (32 clients on 2
cores made 88 briefings/s with 40 threads contending, 148/s with 4), and no other route's thread pool is used.

A plain `ThreadPoolExecutor` behind `loop.run_in_executor`, not anyio's `to_thread.run_sync` with a capacity
limiter: the same hop without the limiter, the run variables and the cancel scope (9% of an API worker's GIL
samples were that call under 8 clients). The caller's context variables (the request's log context) go with
the call, as anyio's did.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class BriefingThreads:
    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="briefing")

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)` on a briefing thread, in a copy of the caller's context."""
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def close(self) -> None:
        """Wait for the briefings still being computed (graceful shutdown)."""
        self._executor.shutdown(wait=True)
