"""Times in postmortems: the zone written after a time, the document's declared zone, and the default (a
复盘 in local time, UTC+8; anything else UTC). Before, every time without `UTC`/`GMT`/`Z` was read as UTC, so
a 复盘's 22:52 Beijing time became 22:52 UTC (eight hours late) and `(UTC+8)` was dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from services.postmortems.markdown import parse_markdown
from services.postmortems.times import CHINA, parse_time

EST = timezone(timedelta(hours=-5))


@pytest.mark.parametrize(("text", "want"), [
    ("2021-07-13 22:52", datetime(2021, 7, 13, 22, 52, tzinfo=UTC)),
    ("2021-07-13 22:52 (UTC+8)", datetime(2021, 7, 13, 14, 52, tzinfo=UTC)),
    ("2021-07-13 22:52 UTC+08:00", datetime(2021, 7, 13, 14, 52, tzinfo=UTC)),
    ("2021年7月13日 22:52 北京时间", datetime(2021, 7, 13, 14, 52, tzinfo=UTC)),
    ("2018-10-21 22:52 UTC", datetime(2018, 10, 21, 22, 52, tzinfo=UTC)),
    ("2018-10-21 22:52 PDT", datetime(2018, 10, 22, 5, 52, tzinfo=UTC)),
    ("2018-10-21 22:52 GMT-5", datetime(2018, 10, 22, 3, 52, tzinfo=UTC)),
    ("2021-07-13T22:52:00+08:00", datetime(2021, 7, 13, 14, 52, tzinfo=UTC)),
])
def test_the_zone_written_after_a_time(text: str, want: datetime) -> None:
    assert parse_time(text) == want


def test_a_time_without_a_zone_is_in_the_documents_zone() -> None:
    assert parse_time("2021-07-13 22:52", CHINA) == datetime(2021, 7, 13, 14, 52, tzinfo=UTC)
    assert parse_time("2021-07-13 22:52 UTC", CHINA) == datetime(2021, 7, 13, 22, 52, tzinfo=UTC)


FUPAN = """# 【故障复盘】订单服务超时

| 项目 | 内容 |
|---|---|
| 发生时间 | 2023-03-01 10:00 |
| 影响服务 | 订单服务 |
{extra}
## 影响范围

下单接口大量超时，用户无法支付。

## 根因分析

数据库连接池被慢查询占满。
"""


def test_a_chinese_document_writes_local_time_unless_it_says_otherwise() -> None:
    assert parse_markdown(FUPAN.format(extra="")).started_at == datetime(2023, 3, 1, 2, 0, tzinfo=UTC)
    declared = parse_markdown(FUPAN.format(extra="| 时区 | UTC |\n"))
    assert declared.started_at == datetime(2023, 3, 1, 10, 0, tzinfo=UTC)


def test_an_english_document_declares_its_zone_in_front_matter() -> None:
    doc = ("---\ntimezone: EST\ndate: 2023-03-01 10:00\nservices: [checkout]\n---\n# Checkout outage\n\n"
           "## Impact\n\nCheckout failed.\n\n## Root cause\n\nA bad deploy.\n")
    assert parse_markdown(doc).started_at == datetime(2023, 3, 1, 10, 0, tzinfo=EST)
    assert parse_markdown(doc.replace("timezone: EST\n", "")).started_at == datetime(2023, 3, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", ["2024-03-05 10:00 GMT-25:00", "2024-03-05 10:00 UTC+99", "2024-03-05 10:00 UTC+5:75"])
def test_an_offset_no_zone_has_is_no_zone(text: str) -> None:
    """`timezone()` raised on a day-long offset and the import answered 500; the time is read in the default zone."""
    assert parse_time(text) == datetime(2024, 3, 5, 10, tzinfo=UTC)
    assert parse_time("2024-03-05 10:00 UTC+14") == datetime(2024, 3, 4, 20, tzinfo=UTC)  # Kiribati: in use
