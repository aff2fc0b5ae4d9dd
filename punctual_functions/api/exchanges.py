"""An exchange's closed days, expanded from ``exchange-calendars`` when a calendar is written.

The API's alone: ``exchange_calendars`` brings pandas and numpy (130 MB, 0.4 s to import), so it is
imported here on first use, never by the dispatcher or the worker, which read the expanded days from
the calendar's item (``Calendar.exchange_closed``, up to ``expanded_until``). Deployed, the package
reaches the API function only, in a layer of its own (punctual/cdk/assets.py).

**The horizon.** The package computes an exchange's regular holidays from rules (Thanksgiving, Good
Friday, ...) for any year, and knows the irregular closures (a day of mourning, a storm) once they are
announced and a release adds them; its own default ends a year ahead. The expansion covers the
trading days from a year back to ``HORIZON_YEARS`` (3) years ahead: far enough for a schedule's
previews and moves, near enough that the rules still hold. A later write of the calendar (any ``PUT``)
expands it again from that day, picking up the closures the package has learnt meanwhile; beyond
``expanded_until`` a day is never guessed open (``Calendar.excludes`` refuses it).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable
from datetime import date, timedelta
from functools import lru_cache

from punctual_functions.core.calendars import CalendarError

HORIZON_YEARS = 3
PAST_DAYS = 366


@lru_cache(maxsize=1)
def known_exchanges() -> frozenset[str]:
    """The MIC codes (and the package's other calendar names) ``exchange-calendars`` knows."""
    import exchange_calendars

    return frozenset(exchange_calendars.get_calendar_names(include_aliases=False))


def check_exchange(code: str, field: str) -> str:
    """The exchange's code as the package names it, or ``CalendarError`` naming ``field``."""
    wanted = code.strip().upper()
    known = known_exchanges()
    if wanted not in known:
        examples = ", ".join(sorted(name for name in known if name.startswith("X"))[:8])
        raise CalendarError(f"unknown exchange {code!r} (a MIC code such as {examples})", field)
    return wanted


def horizon(today: date) -> tuple[date, date]:
    """The first and last day an expansion made on ``today`` covers."""
    try:
        end = today.replace(year=today.year + HORIZON_YEARS)
    except ValueError:  # 29 February
        end = today.replace(year=today.year + HORIZON_YEARS, day=28)
    return today - timedelta(days=PAST_DAYS), end


def closed_days(
    exchanges: Iterable[str], weekdays: Collection[int], today: date
) -> tuple[frozenset[date], date]:
    """The days of the horizon that are working days of the calendar (``weekdays``) on which one of
    ``exchanges`` (checked codes) holds no session, and the last day of the horizon. Days the
    calendar's weekdays exclude anyway are left out: the item stays small (a few dozen dates)."""
    import exchange_calendars

    start, until = horizon(today)
    closed: set[date] = set()
    for index, code in enumerate(exchanges):
        end = min(until, _bound_max(code) or until)  # some record their holidays only so far ahead
        try:
            with warnings.catch_warnings():  # pandas' deprecations inside the package: not ours to fix
                warnings.simplefilter("ignore")
                calendar = exchange_calendars.get_calendar(code, start=start.isoformat(), end=end.isoformat())
                sessions = {session.date() for session in calendar.sessions}
        except Exception as error:
            raise CalendarError(
                f"exchange {code}: exchange-calendars cannot build its trading days from {start} to {end}"
                f" ({type(error).__name__}: {str(error)[:200]})",
                f"exchanges[{index}]",
            ) from error
        day = start
        while day <= end:
            if day.isoweekday() in weekdays and day not in sessions:
                closed.add(day)
            day += timedelta(days=1)
        until = end
    return frozenset(closed), until


def _bound_max(code: str) -> date | None:
    """The last day the package's calendar of ``code`` may be built to, if it has one (the package
    exposes it on the class; its factories are keyed by name)."""
    from exchange_calendars import calendar_utils

    factory = getattr(calendar_utils, "_default_calendar_factories", {}).get(code)
    bound = factory.bound_max() if factory is not None else None
    return bound.date() if bound is not None else None
