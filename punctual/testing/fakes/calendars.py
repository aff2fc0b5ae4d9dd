"""The ``CalendarStore`` port in memory, mixed into ``MemoryStore``: the same conditions as
``punctual_functions/core/store/calendars.py`` (create if the name is free, replace or delete of the version
read), each calendar kept as a read of its item gives it back."""

from __future__ import annotations

import threading
from collections.abc import Collection

from punctual_functions.core.calendars import Calendar
from punctual_functions.core.ports import CalendarExists, VersionChanged
from punctual_functions.core.store.calendars import as_stored_calendar


class MemoryCalendars:
    """Implements ``punctual_functions.core.ports.CalendarStore`` on ``self.calendars`` under
    ``self.lock``."""

    lock: threading.RLock
    calendars: dict[tuple[str, str], Calendar]  # (owner, name) -> calendar

    def get_calendar(self, owner: str, name: str) -> Calendar | None:
        with self.lock:
            return self.calendars.get((owner, name))

    def get_calendars(self, owner: str, names: Collection[str]) -> dict[str, Calendar]:
        with self.lock:
            return {name: self.calendars[(owner, name)] for name in names if (owner, name) in self.calendars}

    def list_calendars(self, owner: str) -> list[Calendar]:
        with self.lock:
            # The table's sort key is the name: byte order, as a Query gives them.
            mine = [key for key in self.calendars if key[0] == owner]
            return [self.calendars[key] for key in sorted(mine, key=lambda key: key[1].encode())]

    def put_calendar(self, owner: str, calendar: Calendar, *, expected_version: int | None) -> None:
        with self.lock:
            stored = self.calendars.get((owner, calendar.name))
            if expected_version is None and stored is not None:
                raise CalendarExists(f"calendar {calendar.name!r} exists")
            if expected_version is not None and (stored is None or stored.version != expected_version):
                raise VersionChanged(f"calendar {calendar.name!r} changed since version {expected_version}")
            self.calendars[(owner, calendar.name)] = as_stored_calendar(owner, calendar)

    def delete_calendar(self, owner: str, name: str, *, expected_version: int | None = None) -> bool:
        with self.lock:
            stored = self.calendars.get((owner, name))
            if stored is None or (expected_version is not None and stored.version != expected_version):
                return False
            del self.calendars[(owner, name)]
            return True
