"""The projector's commit order (runner docstring), observed step by step with a scripted consumer, a
scripted dead-letter producer and the in-memory storage: dead letters are flushed before the projection
commits, the projection and its offsets commit together, and the Kafka offsets are committed only after.
The crash-and-resume behaviour against the real broker and database is in test_projector_recovery."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from kafka import TopicPartition

from services.common.settings import Settings
from services.projector.memory import InMemoryProjectionStorage
from services.projector.runner import ProjectorRunner
from services.projector.store import ProjectionTransaction
from tests.factories import record, resolved_incident

TOPIC = "ledger-under-test"


@dataclass
class Message:
    partition: int
    offset: int
    value: bytes
    headers: list[tuple[str, bytes]] | None = None


class ScriptedConsumer:
    def __init__(self, journal: list[str], batches: list[list[Message]]) -> None:
        self.journal, self.batches = journal, batches
        self.fail_commit = False

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Message]]:
        if not self.batches:
            return {}
        batch = self.batches.pop(0)
        return {TopicPartition(TOPIC, 0): batch}

    def commit_async(self, offsets: dict[TopicPartition, Any], callback: Any = None) -> None:
        if self.fail_commit:
            raise RuntimeError("broker went away")
        self.journal.append("kafka-commit " + ",".join(f"{tp.partition}:{o.offset}" for tp, o in offsets.items()))

    def highwater(self, tp: TopicPartition) -> int:
        return 0


class ScriptedProducer:
    def __init__(self, journal: list[str]) -> None:
        self.journal = journal
        self.sent: list[bytes] = []

    def send(self, topic: str, key: bytes, value: bytes) -> None:
        self.sent.append(key)

    def flush(self, timeout: float) -> None:
        self.journal.append(f"dlq-flush {len(self.sent)}")


class JournaledStorage(InMemoryProjectionStorage):
    def __init__(self, journal: list[str]) -> None:
        super().__init__()
        self.journal = journal
        self.fail_before_commit = False

    @contextmanager
    def transaction(self) -> Iterator[ProjectionTransaction]:
        with super().transaction() as tx:
            yield tx
            if self.fail_before_commit:
                raise RuntimeError("database went away before the commit")
        self.journal.append("projection-commit")


def messages(start: int = 0) -> list[Message]:
    events = [record(raw) for raw in resolved_incident("INC-ORDER")]
    out = [Message(0, start + i, e.to_json()) for i, e in enumerate(events)]
    tampered = events[0].model_copy(update={"content_hash": "0" * 64})
    return [*out, Message(0, start + len(out), tampered.to_json())]


def runner_with(journal: list[str], batches: list[list[Message]]) -> tuple[ProjectorRunner, JournaledStorage]:
    storage = JournaledStorage(journal)
    runner = ProjectorRunner(Settings(topic=TOPIC), None, consumer_name="order-test", storage=storage)
    runner.consumer = ScriptedConsumer(journal, batches)
    runner.dlq = ScriptedProducer(journal)
    return runner, storage


def test_dead_letters_then_projection_with_offsets_then_kafka() -> None:
    journal: list[str] = []
    batch = messages()
    runner, storage = runner_with(journal, [batch])
    result = runner.poll_once()
    assert (result.applied, result.duplicates, result.dead_letters) == (5, 0, 1)
    assert journal == ["dlq-flush 1", "projection-commit", f"kafka-commit 0:{len(batch)}"]
    assert storage.load_offsets("order-test", TOPIC) == {0: len(batch)}
    episode = storage.tables.episodes[("acme", "INC-ORDER")]
    assert episode.status == "resolved" and episode.event_count == 5 and len(storage.tables.candidates) == 1


def test_a_failed_projection_commit_commits_nothing_to_kafka() -> None:
    journal: list[str] = []
    runner, storage = runner_with(journal, [messages()])
    storage.fail_before_commit = True
    with pytest.raises(RuntimeError):
        runner.poll_once()
    assert "kafka-commit" not in " ".join(journal) and "projection-commit" not in journal
    assert storage.tables.events == {} and storage.load_offsets("order-test", TOPIC) == {}


def test_a_failed_kafka_commit_keeps_the_projection_and_a_redelivery_applies_nothing_twice() -> None:
    journal: list[str] = []
    batch = messages()
    runner, storage = runner_with(journal, [batch, batch])  # the broker hands the same batch out again
    assert isinstance(runner.consumer, ScriptedConsumer)
    runner.consumer.fail_commit = True
    assert runner.poll_once().applied == 5  # the Kafka commit failed: informational only
    again = runner.poll_once()
    assert (again.applied, again.duplicates) == (0, 5)
    assert storage.tables.episodes[("acme", "INC-ORDER")].event_count == 5 and len(storage.tables.candidates) == 1
