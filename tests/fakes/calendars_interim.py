"""Interim: the calendar part of the fake store until its own lands (tests/fakes/calendars.py)."""

from __future__ import annotations

from collections.abc import Collection

from functions.core.calendars import Calendar
from functions.core.ports import CalendarExists, VersionChanged
from tests.fakes.store import MemoryStore


class CalendarMemoryStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.calendars: dict[tuple[str, str], Calendar] = {}

    def get_calendar(self, owner: str, name: str) -> Calendar | None:
        return self.calendars.get((owner, name))

    def get_calendars(self, owner: str, names: Collection[str]) -> dict[str, Calendar]:
        return {name: self.calendars[(owner, name)] for name in names if (owner, name) in self.calendars}

    def list_calendars(self, owner: str) -> list[Calendar]:
        return sorted((c for (o, _), c in self.calendars.items() if o == owner), key=lambda c: c.name)

    def put_calendar(self, owner: str, calendar: Calendar, *, expected_version: int | None) -> None:
        stored = self.calendars.get((owner, calendar.name))
        if expected_version is None and stored is not None:
            raise CalendarExists()
        if expected_version is not None and (stored is None or stored.version != expected_version):
            raise VersionChanged()
        self.calendars[(owner, calendar.name)] = calendar

    def delete_calendar(self, owner: str, name: str, *, expected_version: int | None = None) -> bool:
        return self.calendars.pop((owner, name), None) is not None
