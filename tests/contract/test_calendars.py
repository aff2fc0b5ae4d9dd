"""The contract of ``CalendarStore``: a calendar reads back as written, a create refuses a taken
name, a replace and a delete refuse a version that moved on, and each owner sees only their own."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from punctual_functions.core.calendars import Calendar, HolidaySource
from punctual_functions.core.ports import CalendarExists, Tables, VersionChanged

FULL = Calendar(
    name="trading",
    timezone="America/New_York",
    weekdays=frozenset({1, 2, 3, 4, 5}),
    holidays=(HolidaySource("US"), HolidaySource("DE", "BY")),
    dates=frozenset({date(2026, 12, 24), date(2027, 1, 2)}),
    yearly=frozenset({(12, 31), (1, 1)}),
    exchanges=("XNYS",),
    exchange_closed=frozenset({date(2026, 11, 26), date(2026, 12, 25)}),
    expanded_until=date(2029, 11, 26),
    version=3,
)


def test_a_calendar_reads_back_exactly_as_written(tables: Tables) -> None:
    tables.put_calendar("alice", FULL, expected_version=None)
    assert tables.get_calendar("alice", "trading") == FULL
    plain = Calendar(name="plain")
    tables.put_calendar("alice", plain, expected_version=None)
    assert tables.get_calendar("alice", "plain") == plain
    assert tables.get_calendar("alice", "nothing") is None


def test_a_create_refuses_a_name_the_owner_has_and_leaves_the_calendar_as_it_was(tables: Tables) -> None:
    tables.put_calendar("alice", FULL, expected_version=None)
    with pytest.raises(CalendarExists):
        tables.put_calendar("alice", replace(FULL, timezone="UTC", version=1), expected_version=None)
    assert tables.get_calendar("alice", "trading") == FULL
    tables.put_calendar("bob", replace(FULL, version=1), expected_version=None)  # another owner's: free
    assert tables.get_calendar("bob", "trading") == replace(FULL, version=1)


def test_a_replace_needs_the_version_it_read(tables: Tables) -> None:
    tables.put_calendar("alice", FULL, expected_version=None)
    changed = replace(FULL, timezone="Europe/Berlin", version=4)
    with pytest.raises(VersionChanged):
        tables.put_calendar("alice", changed, expected_version=2)
    tables.put_calendar("alice", changed, expected_version=3)
    assert tables.get_calendar("alice", "trading") == changed
    with pytest.raises(VersionChanged):  # the one that read version 3 too comes second
        tables.put_calendar("alice", replace(changed, timezone="UTC"), expected_version=3)
    with pytest.raises(VersionChanged):  # a replace never creates
        tables.put_calendar("alice", Calendar(name="gone", version=2), expected_version=1)
    assert tables.get_calendar("alice", "gone") is None


def test_a_listing_holds_the_owners_calendars_by_name_and_a_batch_read_those_that_exist(
    tables: Tables,
) -> None:
    for name in ("zeta", "alpha", "Mid", "beta"):
        tables.put_calendar("alice", Calendar(name=name), expected_version=None)
    tables.put_calendar("bob", Calendar(name="other"), expected_version=None)
    assert [calendar.name for calendar in tables.list_calendars("alice")] == ["Mid", "alpha", "beta", "zeta"]
    assert tables.list_calendars("carol") == []
    found = tables.get_calendars("alice", ["beta", "zeta", "missing", "other", "beta"])
    assert found == {"beta": Calendar(name="beta"), "zeta": Calendar(name="zeta")}
    assert tables.get_calendars("alice", []) == {}


def test_a_batch_read_of_more_than_a_hundred_names_finds_them_all(tables: Tables) -> None:
    names = [f"cal-{n:03d}" for n in range(130)]
    for name in names[::2]:
        tables.put_calendar("alice", Calendar(name=name), expected_version=None)
    assert sorted(tables.get_calendars("alice", names)) == names[::2]


def test_a_delete_removes_the_calendar_once_and_of_the_version_given(tables: Tables) -> None:
    tables.put_calendar("alice", FULL, expected_version=None)
    assert not tables.delete_calendar("alice", "trading", expected_version=2)
    assert tables.get_calendar("alice", "trading") == FULL
    assert not tables.delete_calendar("bob", "trading")
    assert tables.delete_calendar("alice", "trading", expected_version=3)
    assert tables.get_calendar("alice", "trading") is None
    assert not tables.delete_calendar("alice", "trading")
    tables.put_calendar("alice", replace(FULL, version=1), expected_version=None)  # the name is free again
    assert tables.delete_calendar("alice", "trading")
