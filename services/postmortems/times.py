"""Dates and times as postmortems write them, for both import formats. Pure.

A zone written after a time wins (`UTC+8`, `(GMT-05:00)`, `PDT`, `北京时间`); a time without one is in the caller's
default zone (the Markdown importer's: the document's `timezone`, else UTC+8 for a document written in Chinese,
else UTC; the JSON format's: UTC). Dates alone are midnight in that zone.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo

# zones as postmortems write them after a time (or as a document's `timezone`); ambiguous ones (CST, IST) are not
_ZONE_NAMES = {"utc": 0, "gmt": 0, "z": 0, "pst": -480, "pdt": -420, "mst": -420, "mdt": -360, "est": -300,
               "edt": -240, "cet": 60, "cest": 120, "bst": 60, "jst": 540, "kst": 540, "sgt": 480, "hkt": 480,
               "北京时间": 480, "beijing time": 480, "china standard time": 480, "asia/shanghai": 480}
_OFFSET = re.compile(r"\(?\s*(?:UTC|GMT)\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?\s*\)?", re.IGNORECASE)
_NAMED_ZONE = re.compile(r"\(?\s*(?<![A-Za-z])(" + "|".join(sorted(map(re.escape, _ZONE_NAMES), key=len, reverse=True))
                         + r")(?![A-Za-z])\s*\)?", re.IGNORECASE)
CHINA = timezone(timedelta(hours=8), "UTC+08:00")


MAX_OFFSET_MINUTES = 14 * 60  # UTC-12 to UTC+14 are the zones in use


def parse_zone(text: str | None) -> tuple[str, tzinfo | None]:
    """The text without the zone it names (`UTC+8`, `(GMT-05:00)`, `PDT`, `北京时间`), and that zone."""
    if not text:
        return text or "", None
    m = _OFFSET.search(text)
    if m:
        minutes = int(m[2]) * 60 + int(m[3] or 0)
        rest = (text[:m.start()] + " " + text[m.end():]).strip()
        if minutes > MAX_OFFSET_MINUTES or int(m[3] or 0) >= 60:  # "GMT-25:00" is no zone on Earth: none
            return rest, None
        return rest, timezone(timedelta(minutes=-minutes if m[1] == "-" else minutes))
    m = _NAMED_ZONE.search(text)
    if m:
        return (text[:m.start()] + " " + text[m.end():]).strip(), timezone(timedelta(minutes=_ZONE_NAMES[m[1].lower()]))
    return text, None


def parse_time(value: object, default_zone: tzinfo = UTC) -> datetime | None:
    """A date or time as postmortems write them; a time without a zone is in `default_zone` (the document's:
    see `_Builder.default_zone`)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=default_zone)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=default_zone)
    if not isinstance(value, str):
        return None
    text = value.strip().strip("*_` ")
    m = re.match(r"(\d{4})年(\d{1,2})月(\d{1,2})日\s*(\d{1,2}:\d{2})?", text)
    if m:
        text = f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}" + (f" {m[4]}" if m[4] else "") + text[m.end():]
    text = re.sub(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)",
                  lambda g: f"{g[1]}-{int(g[2]):02d}-{int(g[3]):02d}", text)  # 2024/3/5, 2024-1-5: ISO
    text = re.sub(r"(\d{4}-\d{2}-\d{2})[ T](\d):", r"\1 0\2:", text)
    text, zone = parse_zone(text)
    text = re.sub(r"\s*\(.*\)\s*$", "", text).strip()
    candidates = [text, text.split(" - ")[0].strip(), text.split(" to ")[0].strip(), text[:10]]
    for c in candidates:
        try:
            parsed = datetime.fromisoformat(c.replace(" +", "+"))
        except ValueError:
            parsed = None
        if parsed is None:
            for fmt in ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%B %d %Y", "%A, %B %d, %Y"):
                try:
                    parsed = datetime.strptime(c.replace(",", ", ").replace("  ", " ")
                                               if "%d, %Y" in fmt else c, fmt)
                    break
                except ValueError:
                    continue
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=zone or default_zone)
    return None
