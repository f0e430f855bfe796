"""Closed-loop HTTP load: `clients` threads, one connection each, every thread sending its next request as soon
as the last one answered. The benchmarks that measure the API under concurrency (`bench.throughput`,
`bench.semantic`) drive it through this one loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

Request = Callable[[httpx.Client, int, int], httpx.Response]  # (connection, client index, its n-th request)


def closed_loop(url: str, key: str, request: Request, clients: int, seconds: float, each: int | None = None,
                timeout: float = 600, statuses: dict[int, int] | None = None) -> tuple[list[float], int, float]:
    """Run for `seconds` (or `each` requests per client): latencies (ms), the count of non-200 answers or
    transport errors, and the wall time; `statuses` (when given) counts the answers by status (0: no answer)."""
    lock = threading.Lock()
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    stop = time.monotonic() + seconds

    def worker(i: int) -> None:
        with httpx.Client(base_url=url, timeout=timeout, headers={"Authorization": f"Bearer {key}"}) as http:
            n = 0
            while time.monotonic() < stop and (each is None or n < each):
                t0 = time.perf_counter()
                try:
                    status = request(http, i, n).status_code
                except httpx.HTTPError:
                    status = 0
                ok = status == 200
                if statuses is not None:
                    with lock:
                        statuses[status] = statuses.get(status, 0) + 1
                latencies[i].append((time.perf_counter() - t0) * 1000)
                errors[i] += not ok
                n += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for per in latencies for x in per], sum(errors), time.monotonic() - began
