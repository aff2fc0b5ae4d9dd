"""Property tests: generated crons and instants around real DST transitions, checked against an oracle.

The oracle enumerates every wall time the cron fields name, day by day, and maps each to UTC by the
contract's own words (first occurrence of a repeated time; a skipped time goes to the first wall time
that exists after the gap), without croniter and without the module's bisection.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from itertools import pairwise, product
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from punctual_functions.core.schedule import Schedule

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata")
ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
PROPERTY_SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@dataclass(frozen=True)
class Field:
    text: str
    values: frozenset[int]


@dataclass(frozen=True)
class CronCase:
    expression: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # Unix numbering, Sunday = 0
    day_restricted: bool
    weekday_restricted: bool

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        by_day = day.day in self.days
        by_weekday = day.isoweekday() % 7 in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return by_day or by_weekday
        return by_day and by_weekday

    def wall_matches(self, wall: datetime) -> bool:
        return (
            self.day_matches(wall.date())
            and wall.hour in self.hours
            and wall.minute in self.minutes
            and wall.second in self.seconds
        )


def field(
    low: int, high: int, *, names: tuple[str, ...] = (), name_base: int = 0, max_span: int = 60
) -> st.SearchStrategy[Field]:
    """Fields in every syntax the dialects share: *, n, a-b, */n, a/n, a-b/n and lists of those."""

    def spell(value: int, use_name: bool) -> str:
        index = value - name_base
        return names[index] if use_name and names and 0 <= index < len(names) else str(value)

    @st.composite
    def item(draw: st.DrawFn) -> Field:
        form = draw(st.sampled_from(["value", "range", "star-step", "start-step", "range-step"]))
        use_name = draw(st.booleans())
        start = draw(st.integers(low, high))
        if form == "value":
            return Field(spell(start, use_name), frozenset({start}))
        if form == "star-step":
            step = draw(st.integers(1, high - low + 1))
            return Field(f"*/{step}", frozenset(range(low, high + 1, step)))
        step = draw(st.integers(1, max(1, max_span // 2)))
        if form == "start-step":
            return Field(f"{spell(start, use_name)}/{step}", frozenset(range(start, high + 1, step)))
        end = draw(st.integers(start, min(high, start + max_span)))
        text = f"{spell(start, use_name)}-{spell(end, use_name)}"
        if form == "range":
            return Field(text, frozenset(range(start, end + 1)))
        return Field(f"{text}/{step}", frozenset(range(start, end + 1, step)))

    @st.composite
    def listed(draw: st.DrawFn) -> Field:
        items = draw(st.lists(item(), min_size=1, max_size=3))
        return Field(
            ",".join(part.text for part in items), frozenset().union(*(part.values for part in items))
        )

    return st.one_of(st.just(Field("*", frozenset(range(low, high + 1)))), listed())


def case(
    expression: str,
    *,
    seconds: Field,
    minutes: Field,
    hours: Field,
    days: Field,
    months: Field,
    weekdays: frozenset[int],
    restricted: tuple[bool, bool],
) -> CronCase:
    return CronCase(
        expression=expression,
        seconds=seconds.values,
        minutes=minutes.values,
        hours=hours.values,
        days=days.values,
        months=months.values,
        weekdays=weekdays,
        day_restricted=restricted[0],
        weekday_restricted=restricted[1],
    )


def mostly_star(strategy: st.SearchStrategy[Field], low: int, high: int) -> st.SearchStrategy[Field]:
    """Day fields are ``*`` two times in three, so that transition days are not filtered out too often."""
    star = Field("*", frozenset(range(low, high + 1)))
    return st.sampled_from([0, 1, 2]).flatmap(lambda pick: strategy if pick == 0 else st.just(star))


def day_fits_a_month(days: Field, months: Field, restricted: tuple[bool, bool]) -> bool:
    """False for what the parser refuses up front ("day-of-month 30 never occurs in FEB"): days
    restricted alone (a restricted weekday would match on its own), none of which any month has."""
    longest = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    day_only = restricted[0] and not restricted[1]
    return not day_only or min(days.values) <= max(longest[month - 1] for month in months.values)


@st.composite
def crons(draw: st.DrawFn, *, transition_hours: bool = False) -> CronCase:
    """A Unix, seconds-first or EventBridge cron, small enough per day for the oracle to enumerate."""
    dialect = draw(st.sampled_from(["unix", "seconds", "eventbridge"]))
    seconds = draw(field(0, 59)) if dialect == "seconds" else Field("0", frozenset({0}))
    minutes = draw(field(0, 59, max_span=10))
    if transition_hours or draw(st.booleans()):
        hours = draw(st.sampled_from([Field(t, frozenset(v)) for t, v in TRANSITION_HOURS]))
    else:
        hours = draw(field(0, 23))
    budget = len(seconds.values) * len(minutes.values) * len(hours.values)
    if budget > 1500:
        seconds, minutes = Field("0", frozenset({0})), Field("0,30", frozenset({0, 30}))
    days = draw(mostly_star(field(1, 31, max_span=10), 1, 31))
    months = draw(mostly_star(field(1, 12, names=MONTH_NAMES, name_base=1), 1, 12))
    if dialect == "eventbridge":
        weekdays_eb = draw(field(1, 7, names=DAY_NAMES, name_base=1))
        weekdays = Field(weekdays_eb.text, frozenset(value - 1 for value in weekdays_eb.values))
        if draw(st.booleans()):
            day_text, weekday_text = days.text, "?"
            weekdays = Field("*", frozenset(range(7)))
        else:
            day_text, weekday_text = "?", weekdays.text
            days = Field("*", frozenset(range(1, 32)))
        expression = f"cron({minutes.text} {hours.text} {day_text} {months.text} {weekday_text} *)"
        restricted = (day_text not in ("?", "*"), weekday_text not in ("?", "*"))
        assume(day_fits_a_month(days, months, restricted))
        return case(
            expression,
            seconds=seconds,
            minutes=minutes,
            hours=hours,
            days=days,
            months=months,
            weekdays=weekdays.values,
            restricted=restricted,
        )
    weekdays = draw(mostly_star(field(0, 7, names=DAY_NAMES), 0, 6))
    unix_weekdays = frozenset(value % 7 for value in weekdays.values)
    parts = [minutes.text, hours.text, days.text, months.text, weekdays.text]
    if dialect == "seconds":
        parts.insert(0, seconds.text)
    restricted = (days.text != "*", weekdays.text != "*")
    assume(day_fits_a_month(days, months, restricted))
    return case(
        " ".join(parts),
        seconds=seconds,
        minutes=minutes,
        hours=hours,
        days=days,
        months=months,
        weekdays=unix_weekdays,
        restricted=restricted,
    )


# Hours around which the transitions of the sample zones happen, so gaps and repeats are hit often.
TRANSITION_HOURS = (("1", {1}), ("2", {2}), ("1-3", {1, 2, 3}), ("0,2", {0, 2}), ("2,3", {2, 3}))


@cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """UTC instants in 2026-2028 at which the zone's offset changes (found hour by hour)."""
    zone = ZoneInfo(zone_name)
    found = []
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    previous = moment.astimezone(zone).utcoffset()
    while moment.year < 2029:
        moment += timedelta(minutes=30)
        offset = moment.astimezone(zone).utcoffset()
        if offset != previous:
            found.append(moment)
            previous = offset
    return tuple(found)


@st.composite
def instants_near_transitions(draw: st.DrawFn, zone_name: str) -> datetime:
    near = transitions(zone_name)
    if near:
        base = draw(st.sampled_from(near))
    else:
        base = draw(st.datetimes(datetime(2026, 1, 1), datetime(2028, 12, 31), timezones=st.just(UTC)))
    # Mostly from a day before up to just after the transition, so the one-day window spans it.
    seconds = draw(st.one_of(st.integers(-30 * 3600, 2 * 3600), st.integers(-2 * 86400, 2 * 86400)))
    return base + timedelta(seconds=seconds, microseconds=draw(st.sampled_from([0, 1, 500_000])))


@st.composite
def zoned_cases(draw: st.DrawFn) -> tuple[CronCase, str, datetime]:
    zone_name = draw(st.sampled_from(ZONES))
    return draw(crons()), zone_name, draw(instants_near_transitions(zone_name))


def offset(moment: datetime, zone: ZoneInfo) -> timedelta:
    value = moment.astimezone(zone).utcoffset()
    assert value is not None
    return value


@st.composite
def spring_forward_cases(draw: st.DrawFn) -> tuple[CronCase, str, datetime]:
    """Crons on the hours clocks skip, from some hours before a spring-forward transition."""
    zone_name = draw(st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]))
    zone = ZoneInfo(zone_name)
    forward = [
        moment
        for moment in transitions(zone_name)
        if offset(moment - timedelta(seconds=1), zone) < offset(moment, zone)
    ]
    after = draw(st.sampled_from(forward)) - timedelta(seconds=draw(st.integers(1, 26 * 3600)))
    return draw(crons(transition_hours=True)), zone_name, after


def contract_instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """Where the contract says a wall time fires: its first occurrence, or after the gap it sits in."""
    instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant
    probe = wall.replace(second=0)
    while True:  # the sample zones move their clocks on whole minutes
        probe += timedelta(minutes=1)
        candidate = probe.replace(tzinfo=zone).astimezone(UTC)
        if candidate.astimezone(zone).replace(tzinfo=None) == probe:
            return candidate


def oracle(case: CronCase, zone: ZoneInfo, after: datetime, until: datetime) -> list[datetime]:
    first_day = after.astimezone(zone).date() - timedelta(days=1)
    last_day = until.astimezone(zone).date() + timedelta(days=1)
    found: set[datetime] = set()
    day = first_day
    clock = sorted(product(case.hours, case.minutes, case.seconds))
    while day <= last_day:
        if case.day_matches(day):
            for hour, minute, second in clock:
                instant = contract_instant(datetime.combine(day, time(hour, minute, second)), zone)
                if after < instant <= until:
                    found.add(instant)
        day += timedelta(days=1)
    return sorted(found)


def build(case: CronCase, zone_name: str, **bounds: datetime | None) -> Schedule:
    return Schedule("cron", case.expression, zone_name, bounds.get("start_at"), bounds.get("end_at"), ANCHOR)


def assert_matches_oracle(case_zone_after: tuple[CronCase, str, datetime]) -> None:
    case, zone_name, after = case_zone_after
    zone = ZoneInfo(zone_name)
    until = after + timedelta(days=1)
    got = [t for t in build(case, zone_name).upcoming(after, 25) if t <= until]
    expected = oracle(case, zone, after, until)
    assert got == expected[: len(got)], f"{case.expression} in {zone_name} after {after}: fire times differ"
    if len(got) < 25:
        assert got == expected, f"{case.expression} in {zone_name} after {after}: missed fire times"


@PROPERTY_SETTINGS
@given(zoned_cases())
def test_cron_fire_times_equal_the_contract_oracle(case_zone_after: tuple[CronCase, str, datetime]) -> None:
    assert_matches_oracle(case_zone_after)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spring_forward_cases())
def test_cron_fire_times_across_spring_forward_equal_the_contract_oracle(
    case_zone_after: tuple[CronCase, str, datetime],
) -> None:
    assert_matches_oracle(case_zone_after)


@PROPERTY_SETTINGS
@given(zoned_cases())
def test_cron_sequence_is_strictly_increasing_without_repeated_wall_times(
    case_zone_after: tuple[CronCase, str, datetime],
) -> None:
    case, zone_name, after = case_zone_after
    zone = ZoneInfo(zone_name)
    got = build(case, zone_name).upcoming(after, 12)
    assert all(t.tzinfo is UTC for t in got), "fire times are returned in UTC"
    if got:
        assert got[0] > after, "next_after must be strictly after its argument"
    assert all(a < b for a, b in pairwise(got)), f"{case.expression} in {zone_name}: not strictly increasing"
    walls = [t.astimezone(zone).replace(tzinfo=None) for t in got]
    assert len(set(walls)) == len(walls), f"{case.expression} in {zone_name}: a wall time fired twice"
    for instant, wall in zip(got, walls, strict=True):
        if case.wall_matches(wall):
            continue
        before = (instant - timedelta(seconds=1)).astimezone(zone)
        assert before.utcoffset() != instant.astimezone(zone).utcoffset(), (
            f"{case.expression} in {zone_name}: {wall} neither matches the fields nor is a DST transition"
        )
        gap_start = before.replace(tzinfo=None) + timedelta(seconds=1)
        skipped = (gap_start + timedelta(seconds=s) for s in range(int((wall - gap_start).total_seconds())))
        assert any(case.wall_matches(slot) for slot in skipped), (
            f"{case.expression} in {zone_name}: fired at the transition {instant} but no skipped slot matches"
        )


@PROPERTY_SETTINGS
@given(zoned_cases(), st.integers(-86400, 86400), st.integers(60, 3 * 86400))
def test_cron_fire_times_respect_start_and_end(
    case_zone_after: tuple[CronCase, str, datetime], start_shift: int, length: int
) -> None:
    case, zone_name, after = case_zone_after
    start_at = after + timedelta(seconds=start_shift)
    end_at = start_at + timedelta(seconds=length)
    bounded = build(case, zone_name, start_at=start_at, end_at=end_at).upcoming(after, 10)
    free = build(case, zone_name).upcoming(max(after, start_at - timedelta(microseconds=1)), 10)
    expected = [t for t in free if start_at <= t <= end_at]
    assert bounded == expected[: len(bounded)], "bounds must only cut fire times off, never move them"
    assert all(start_at <= t <= end_at for t in bounded), "a fire time fell outside start_at..end_at"
    if len(bounded) < 10:
        assert bounded == expected


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 3000),
    st.sampled_from(["second", "minute", "hour", "day"]),
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)),
    st.integers(-10 * 86400, 10 * 86400),
    st.booleans(),
)
def test_rate_fires_at_exact_multiples_of_its_interval(
    value: int, unit: str, anchor: datetime, after_shift: int, with_start: bool
) -> None:
    anchor = anchor.replace(microsecond=0)
    interval = timedelta(seconds=value * {"second": 1, "minute": 60, "hour": 3600, "day": 86400}[unit])
    start_at = anchor if with_start else None
    schedule = Schedule("rate", f"{value} {unit}s", "Europe/Berlin", start_at, None, anchor)
    after = anchor + timedelta(seconds=after_shift, microseconds=123)
    got = schedule.upcoming(after, 6)
    assert len(got) == 6
    assert got[0] > after
    assert got[0] - interval <= after or got[0] == anchor + (0 if with_start else 1) * interval, (
        "a fire was skipped"
    )
    assert all(b - a == interval for a, b in pairwise(got)), (
        "consecutive rate fires must be one interval apart"
    )
    assert all((t - anchor) % interval == timedelta(0) for t in got), (
        "rate fires must stay in phase with the anchor"
    )
    first = anchor if with_start else anchor + interval
    assert all(t >= first for t in got), "a rate never fires before its first occurrence"
