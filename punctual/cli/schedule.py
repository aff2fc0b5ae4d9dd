"""``punctual schedule preview``: a schedule's next fire times and what an outage would do to it,
without creating a job (``POST /v1/schedules/preview``)."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click

from punctual.cli.common import EXIT_USAGE, Context, api_command, choice, main
from punctual.output import emit_json, fields, schedule_text, table
from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import MisfirePolicy

_RATE = re.compile(r"^(rate\(.*\)|\d+\s*[A-Za-z]+)$", re.IGNORECASE | re.DOTALL)
_AT = re.compile(r"^(at\(.*\)|\d{4}-\d{2}-\d{2}T.*)$", re.IGNORECASE | re.DOTALL)
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")


def schedule_form(expression: str) -> str:
    """Which form an expression is: ``rate`` ("5 minutes", "rate(1 hour)"), ``at`` (an ISO date-time
    or "at(...)"), else ``cron`` (the API says what is wrong with it)."""
    text = expression.strip()
    if _RATE.match(text):
        return "rate"
    if _AT.match(text):
        return "at"
    return "cron"


def outage_window(text: str, zone_name: str, now: datetime) -> dict[str, str]:
    """``FROM..TO``: ISO date-times, or clock times ``HH:MM`` in the schedule's zone, meaning the
    next such window (starting after ``now``; ``TO`` at or before ``FROM`` ends the next day)."""
    start_text, separator, end_text = text.partition("..")
    if not separator or not start_text.strip() or not end_text.strip():
        raise click.BadParameter("write FROM..TO, e.g. 01:00..04:00 or 2026-11-25T01:00..2026-11-25T04:00")
    clocks = [_CLOCK.match(part.strip()) for part in (start_text, end_text)]
    if not any(clocks):
        return {"from": start_text.strip(), "to": end_text.strip()}
    if not all(clocks):
        raise click.BadParameter("give both ends as clock times (01:00..04:00) or both as date-times")
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise click.BadParameter(f"unknown time zone {zone_name!r}", param_hint="--timezone") from error
    try:
        start_clock, end_clock = (time(int(m.group(1)), int(m.group(2))) for m in clocks if m is not None)
    except ValueError as error:
        raise click.BadParameter(f"{error}") from error
    local_now = now.astimezone(zone).replace(tzinfo=None)
    start = datetime.combine(local_now.date(), start_clock)
    if start <= local_now:
        start += timedelta(days=1)
    end = datetime.combine(start.date(), end_clock)
    if end <= start:
        end += timedelta(days=1)
    return {"from": start.isoformat(timespec="minutes"), "to": end.isoformat(timespec="minutes")}


@main.group()
def schedule() -> None:
    """Try schedules out without creating a job."""


@schedule.command("preview")
@click.argument("expression")
@click.option("--timezone", "tz", default="UTC", show_default=True, help="IANA time zone of the schedule.")
@click.option("--count", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--after", help="List fire times after this ISO date-time (default: now).")
@click.option("--start-at")
@click.option("--end-at")
@click.option(
    "--outage",
    help="FROM..TO: nothing dispatched in between; what runs afterwards? 01:00..04:00 (the next such "
    "window, in --timezone) or ISO date-times.",
)
@click.option(
    "--misfire", type=choice(MisfirePolicy), default=MisfirePolicy.RUN_ONCE.value, show_default=True
)
@click.option("--catchup-seconds", type=int)
@click.option("--calendar", help="Name of one of your business calendars (punctual calendars list).")
@click.option(
    "--on-excluded",
    type=choice(OnExcluded),
    default=OnExcluded.SKIP.value,
    show_default=True,
    help="With --calendar: skip a fire time on an excluded day, or move it to a business day.",
)
@click.option(
    "--until", help="List every fire time up to this ISO date-time (at most 1,000) instead of --count."
)
@api_command
def preview(
    ctx: Context,
    expression: str,
    tz: str,
    count: int,
    after: str | None,
    start_at: str | None,
    end_at: str | None,
    outage: str | None,
    misfire: str,
    catchup_seconds: int | None,
    calendar: str | None,
    on_excluded: str,
    until: str | None,
) -> None:
    """The next fire times of EXPRESSION (a cron, a rate like "5 minutes", or an ISO date-time), in
    UTC and in its zone, with DST gaps and repeats marked.

    \b
      punctual schedule preview "0 2 * * *" --timezone Europe/Berlin --count 20 --outage 01:00..04:00
      punctual schedule preview "0 9 * * *" --timezone Europe/Berlin --calendar bavaria --until 2027-12-31
    """
    spec: dict[str, Any] = {schedule_form(expression): expression, "timezone": tz, "misfire": misfire}
    for key, value in (("start_at", start_at), ("end_at", end_at), ("catchup_seconds", catchup_seconds)):
        if value is not None:
            spec[key] = value
    if calendar is not None:
        spec.update(calendar=calendar, on_excluded=on_excluded)
    body: dict[str, Any] = {"schedule": spec, "count": count}
    if after:
        body["after"] = after
    if until:
        body["until"] = until
    if outage:
        try:
            body["outage"] = outage_window(outage, tz, datetime.now().astimezone())
        except click.BadParameter as error:
            click.echo(f"error: --outage: {error.message}", err=True)
            raise SystemExit(EXIT_USAGE) from error
    data = ctx.client.preview_schedule(body)
    if ctx.as_json:
        emit_json(data)
        return
    click.echo(fields([("schedule", schedule_text(data["schedule"])), ("timezone", data["timezone"])]))
    click.echo()
    rows = [
        [index, time_["at"], time_["local"], _dst_text(time_.get("dst"))]
        for index, time_ in enumerate(data["fire_times"], start=1)
    ]
    headers = ["#", "utc", "local", "dst"]
    if any(time_.get("moved_from") for time_ in data["fire_times"]):
        headers.append("moved here from")
        for row, time_ in zip(rows, data["fire_times"], strict=True):
            row.append(_moved_text(time_.get("moved_from")))
    click.echo(table(rows, headers))
    for note in data["notes"]:
        click.echo(f"note: {note}")
    calendar_part = data.get("calendar")
    if calendar_part:
        click.echo()
        excluded = calendar_part["excluded"]
        click.echo(
            f"calendar {calendar_part['name']} (on_excluded {calendar_part['on_excluded']}): "
            f"{len(excluded)} excluded day(s) with fire times in this span"
        )
        if excluded:
            rows = [[day["day"], day["reason"], day["fate"], day["moved_to"] or "-"] for day in excluded]
            click.echo(table(rows, ["day", "why", "fate", "runs at"]))
    window = data.get("outage")
    if window:
        click.echo()
        counts = window["counts"]
        click.echo(
            f"outage {window['from']} .. {window['to']} (misfire {window['misfire']}): "
            f"{counts['runs']} run afterwards, {counts['skipped']} skipped, {counts['collapsed']} collapsed"
        )
        if window["occurrences"]:
            rows = [
                [item["scheduled_for"], item["local"], item["fate"], _late_text(item["lateness_ms"])]
                for item in window["occurrences"]
            ]
            click.echo(table(rows, ["scheduled for", "local", "fate", "late by"]))
            if not window["listed_all"]:
                click.echo(f"(the first {len(window['occurrences'])} listed)")
        click.echo(f"on time again from {window['resumes_with'] or '- (no later fire time)'}")


def _dst_text(mark: dict[str, str] | None) -> str:
    if not mark:
        return ""
    wall = mark["local"][11:]  # the local clock time the schedule names
    if mark["kind"] == "gap":
        return f"gap: {wall} does not exist that day, fires after the jump"
    return f"repeat: {wall} happens twice, fires on the first pass"


def _moved_text(origins: list[str] | None) -> str:
    if not origins:
        return ""
    return ", ".join(origin[:10] for origin in origins)


def _late_text(milliseconds: int | None) -> str:
    if milliseconds is None:
        return "-"
    seconds = milliseconds / 1000
    return (
        f"{seconds:.0f} s"
        if seconds < 120
        else f"{seconds / 60:.0f} min"
        if seconds < 7200
        else f"{seconds / 3600:.1f} h"
    )
