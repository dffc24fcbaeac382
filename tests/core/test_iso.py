"""Timestamps as tools write them read the same on Python 3.10 as on 3.11+."""

from datetime import datetime, timedelta, timezone

import pytest

from kernel_evidence._iso import parse_iso


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2026-03-17T06:19:54.5Z", datetime(2026, 3, 17, 6, 19, 54, 500000, tzinfo=timezone.utc)),
        ("2026-03-17T06:19:52.543776Z", datetime(2026, 3, 17, 6, 19, 52, 543776, tzinfo=timezone.utc)),
        ("2026-03-17T06:19:53.0000019Z", datetime(2026, 3, 17, 6, 19, 53, 1, tzinfo=timezone.utc)),
        ("2026-05-02 11:15:00+02:00", datetime(2026, 5, 2, 11, 15, tzinfo=timezone(timedelta(hours=2)))),
        ("2026-05-02T09:15:00", datetime(2026, 5, 2, 9, 15)),
        ("2026-05-02T09:15:00.12+00:00", datetime(2026, 5, 2, 9, 15, 0, 120000, tzinfo=timezone.utc)),
    ],
)
def test_tool_timestamps(text: str, want: datetime) -> None:
    assert parse_iso(text) == want


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00Z", "2026-03-17T25:00:00Z"])
def test_not_a_time(text: str) -> None:
    with pytest.raises(ValueError):
        parse_iso(text)
