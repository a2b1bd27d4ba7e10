"""Numbers and dates as people read them: the shared helper of the pages' tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.figures.format import day, device_words, number, table_text, time_of_day


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (6307.0, "6,307"),
        (6307, "6,307"),
        (1234.567, "1,235"),
        (12, "12"),
        (0.0, "0"),
        (12.345, "12.3"),
        (0.12345, "0.123"),
        (-0.5, "-0.5"),
        (1.2e-7, "1.2e-07"),
        (None, "–"),
        (float("nan"), "–"),
    ],
)
def test_number_reads_whole_numbers_without_decimals_and_others_to_three_digits(value, text):
    assert number(value) == text


def test_a_day_is_written_as_people_write_it():
    assert day("2026-11-26T02:03:19+00:00") == "26 Nov 2026"
    assert day(None) == "–"


def test_a_moment_today_shows_its_time_and_another_day_its_date_too():
    now = datetime(2026, 12, 4, 20, 0, tzinfo=UTC)
    assert time_of_day("2026-12-04T17:35:49+00:00", now) == "17:35"
    assert time_of_day("2026-11-04T17:35:49+00:00", now) == "4 Nov 17:35"


def test_table_text_fills_the_columns_a_row_lacks_with_a_dash():
    rows = table_text([{"run": "a", "S = 1": 7.5612}, {"run": "b", "slope": 8.8}])
    assert rows == [
        {"run": "a", "S = 1": "7.56", "slope": "–"},
        {"run": "b", "S = 1": "–", "slope": "8.8"},
    ]


def test_devices_are_named_as_people_write_them():
    assert device_words("NVIDIA H100 80GB HBM3") == "NVIDIA H100"
    assert device_words("NVIDIA H200") == "NVIDIA H200"
    assert device_words("cpu (1 threads)") == "CPU, 1 thread"
    assert device_words("cpu (2 threads)") == "CPU, 2 threads"
    assert device_words("cpu", 1) == "CPU, 1 thread"
