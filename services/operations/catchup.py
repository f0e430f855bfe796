"""Run the projector in this process until it has projected the ledger up to its current end offsets."""

from __future__ import annotations

import time

from kafka import TopicPartition

from services.common.db import Database
from services.common.settings import Settings
from services.projector.runner import ProjectorRunner


def project_until_caught_up(settings: Settings, timeout_s: float = 600.0) -> int:
    """Project until this consumer's positions reach the ledger's end offsets (everything up to them is then
    committed with the projection, since positions only pass a batch after its transaction); returns the
    number of events applied. Raises TimeoutError if that takes longer than `timeout_s`."""
    db = Database(settings.database_url, max_size=2)
    db.open()
    runner = ProjectorRunner(settings, db)
    applied = 0
    try:
        runner.start()
        assert runner.consumer is not None
        partitions = [TopicPartition(settings.topic, p)
                      for p in sorted(runner.consumer.partitions_for_topic(settings.topic) or [])]
        ends = {tp.partition: off for tp, off in runner.consumer.end_offsets(partitions).items()}
        deadline = time.monotonic() + timeout_s
        while True:
            result = runner.poll_once()
            applied += result.applied
            assigned = runner.consumer.assignment()
            # positions, not stored offsets: a transaction's commit marker takes an offset no record has
            if (not result.applied and not result.duplicates and len(assigned) == len(partitions)
                    and all(runner.consumer.position(tp) >= ends[tp.partition] for tp in assigned)):
                return applied
            if time.monotonic() > deadline:
                raise TimeoutError(f"projection did not reach the ledger's end within {timeout_s:.0f}s")
    finally:
        runner.close()
        db.close()
