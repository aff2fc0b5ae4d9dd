"""Calendars: one item per business calendar, an owner's calendars in one partition.

``PK = CAL#<owner>``, ``SK = <name>`` (docs/architecture.md, "The table"): the API lists them with one
``Query``, a dispatch reads the few its jobs name with one ``BatchGetItem``. A create is conditional
on the name being free, a replace on the version read; the item holds the rules as they are and the
exchanges' closed days as the API expanded them (the dispatcher never imports ``exchange-calendars``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date
from typing import Any

from punctual_functions.core.calendars import Calendar, HolidaySource
from punctual_functions.core.ports import CalendarExists, VersionChanged
from punctual_functions.core.resources import PK, SK
from punctual_functions.core.store.base import TableBase, chunks
from punctual_functions.core.store.keys import calendar_key, calendar_pk

BATCH_KEYS = 100  # BatchGetItem's most keys per request
UNPROCESSED_ROUNDS = 2


def _strings(values: Collection[str]) -> dict[str, Any]:
    return {"L": [{"S": value} for value in values]}


def calendar_to_item(owner: str, calendar: Calendar) -> dict[str, Any]:
    """The calendar's item; its lists sorted, so one calendar always makes the same item."""
    holidays: list[dict[str, Any]] = []
    for source in calendar.holidays:
        entry: dict[str, Any] = {"country": {"S": source.country}}
        if source.subdivision is not None:
            entry["subdivision"] = {"S": source.subdivision}
        holidays.append({"M": entry})
    item: dict[str, Any] = {
        **calendar_key(owner, calendar.name),
        "timezone": {"S": calendar.timezone},
        "weekdays": {"L": [{"N": str(day)} for day in sorted(calendar.weekdays)]},
        "holidays": {"L": holidays},
        "dates": _strings(sorted(day.isoformat() for day in calendar.dates)),
        "yearly": _strings([f"{month:02d}-{day:02d}" for month, day in sorted(calendar.yearly)]),
        "exchanges": _strings(calendar.exchanges),
        "exchange_closed": _strings(sorted(day.isoformat() for day in calendar.exchange_closed)),
        "version": {"N": str(calendar.version)},
    }
    if calendar.expanded_until is not None:
        item["expanded_until"] = {"S": calendar.expanded_until.isoformat()}
    return item


def _texts(item: Mapping[str, Any], name: str) -> list[str]:
    return [str(value["S"]) for value in item.get(name, {}).get("L", [])]


def calendar_from_item(item: Mapping[str, Any]) -> Calendar:
    holidays = tuple(
        HolidaySource(entry["M"]["country"]["S"], entry["M"].get("subdivision", {}).get("S"))
        for entry in item.get("holidays", {}).get("L", [])
    )
    yearly = frozenset((int(text[:2]), int(text[3:])) for text in _texts(item, "yearly"))
    until = item.get("expanded_until", {}).get("S")
    return Calendar(
        name=str(item[SK]["S"]),
        timezone=str(item["timezone"]["S"]),
        weekdays=frozenset(int(value["N"]) for value in item["weekdays"]["L"]),
        holidays=holidays,
        dates=frozenset(date.fromisoformat(text) for text in _texts(item, "dates")),
        yearly=yearly,
        exchanges=tuple(_texts(item, "exchanges")),
        exchange_closed=frozenset(date.fromisoformat(text) for text in _texts(item, "exchange_closed")),
        expanded_until=date.fromisoformat(until) if until else None,
        version=int(item["version"]["N"]),
    )


def as_stored_calendar(owner: str, calendar: Calendar) -> Calendar:
    """The calendar as a read gives it back (what the in-memory fake keeps)."""
    return calendar_from_item(calendar_to_item(owner, calendar))


class CalendarTable(TableBase):
    """Implements ``punctual_functions.core.ports.CalendarStore``."""

    def get_calendar(self, owner: str, name: str) -> Calendar | None:
        item = self.client.get_item(TableName=self.table, Key=calendar_key(owner, name), ConsistentRead=True)
        found = item.get("Item")
        return calendar_from_item(found) if found is not None else None

    def get_calendars(self, owner: str, names: Collection[str]) -> dict[str, Calendar]:
        """Consistent, up to a hundred to a request (a dispatch names a few); keys the table left
        unprocessed (throttled) are asked again, then read one by one rather than reported missing."""
        found: dict[str, Calendar] = {}
        for chunk in chunks(list(dict.fromkeys(names)), BATCH_KEYS):
            pending: list[Any] = [calendar_key(owner, name) for name in chunk]
            for _ in range(UNPROCESSED_ROUNDS):
                response = self.client.batch_get_item(
                    RequestItems={self.table: {"Keys": pending, "ConsistentRead": True}}
                )
                for item in response.get("Responses", {}).get(self.table, []):
                    calendar = calendar_from_item(item)
                    found[calendar.name] = calendar
                unprocessed: dict[str, Any] = response.get("UnprocessedKeys") or {}
                pending = unprocessed.get(self.table, {}).get("Keys", [])
                if not pending:
                    break
            for key in pending:
                alone = self.get_calendar(owner, key[SK]["S"])
                if alone is not None:
                    found[alone.name] = alone
        return found

    def list_calendars(self, owner: str) -> list[Calendar]:
        calendars: list[Calendar] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": PK},
            "ExpressionAttributeValues": {":pk": {"S": calendar_pk(owner)}},
            "ConsistentRead": True,
        }
        while True:
            response = self.client.query(**request)
            calendars.extend(calendar_from_item(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return calendars
            request["ExclusiveStartKey"] = last

    def put_calendar(self, owner: str, calendar: Calendar, *, expected_version: int | None) -> None:
        request: dict[str, Any] = {"Item": calendar_to_item(owner, calendar)}
        if expected_version is None:
            request["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            request["ConditionExpression"] = "#version = :expected"
            request["ExpressionAttributeNames"] = {"#version": "version"}
            request["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
        if self.conditional(self.client.put_item, **request):
            return
        # Not read back to tell our own write retried by the SDK (its answer lost) from another's: an
        # identical calendar written by someone else must still refuse a create. The caller reads again.
        if expected_version is None:
            raise CalendarExists(f"calendar {calendar.name!r} exists")
        raise VersionChanged(f"calendar {calendar.name!r} changed since version {expected_version}")

    def delete_calendar(self, owner: str, name: str, *, expected_version: int | None = None) -> bool:
        request: dict[str, Any] = {
            "Key": calendar_key(owner, name),
            "ConditionExpression": "attribute_exists(pk)",
        }
        if expected_version is not None:
            request["ConditionExpression"] += " AND #version = :expected"
            request["ExpressionAttributeNames"] = {"#version": "version"}
            request["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
        return self.conditional(self.client.delete_item, **request)
