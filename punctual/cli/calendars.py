"""``punctual calendars``: business calendars (docs/api.md, "Calendars"): create, list, get, update,
delete, and the days one excludes in a range."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import click

from punctual.cli.common import EXIT_CONFLICT, Context, api_command, main
from punctual.client import ApiError
from punctual.output import emit_json, fields, table


@main.group()
def calendars() -> None:
    """Business calendars: the days a job's schedule does not fire on."""


def _weekdays(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[int] | None:
    """``1-5``, ``1,2,3`` or ``1-3,5`` (ISO: Monday is 1) as the list the API takes."""
    if value is None:
        return None
    days: list[int] = []
    for part in value.split(","):
        found = re.fullmatch(r"\s*([1-7])\s*(?:-\s*([1-7])\s*)?", part)
        if found is None:
            raise click.BadParameter(f"{part!r}: weekdays are 1 (Monday) to 7 (Sunday), as 1-5 or 1,3,5")
        first, last = int(found[1]), int(found[2] or found[1])
        if last < first:
            raise click.BadParameter(f"{part!r}: a range goes up, as 1-5")
        days += range(first, last + 1)
    return sorted(set(days))


def rule_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """The options of a calendar's rules, shared by create and update."""
    options = [
        click.option("--timezone", "tz", help="IANA time zone a day is judged in (default UTC)."),
        click.option(
            "--weekdays", callback=_weekdays, help="Working days, ISO (Monday 1): 1-5 (default), 1-4, 1,3,5."
        ),
        click.option(
            "--holidays",
            "holidays",
            multiple=True,
            help="Public holidays of a country or subdivision: DE, DE-BY, US (repeatable).",
        ),
        click.option(
            "--exchange", "exchanges", multiple=True, help="An exchange's closed days: XNYS (repeatable)."
        ),
        click.option("--date", "dates", multiple=True, help="An excluded date, YYYY-MM-DD (repeatable)."),
        click.option("--yearly", multiple=True, help="A date excluded every year, MM-DD (repeatable)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _rules(options: dict[str, Any]) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    if options["tz"] is not None:
        rules["timezone"] = options["tz"]
    if options["weekdays"] is not None:
        rules["weekdays"] = options["weekdays"]
    for key in ("holidays", "exchanges", "dates", "yearly"):
        if options[key]:
            rules[key] = list(options[key])
    return rules


@calendars.command("create")
@click.argument("name")
@rule_options
@api_command
def calendars_create(ctx: Context, name: str, **options: Any) -> None:
    """Create calendar NAME: weekends and the given holidays, exchanges and dates excluded."""
    _show(ctx, ctx.client.create_calendar({"name": name, **_rules(options)}))


@calendars.command("update")
@click.argument("name")
@rule_options
@api_command
def calendars_update(ctx: Context, name: str, **options: Any) -> None:
    """Replace calendar NAME's rules as a whole (those not given take their defaults); creates it if
    you have none of that name. Its exchanges are expanded again."""
    _show(ctx, ctx.client.replace_calendar(name, _rules(options)))


@calendars.command("list")
@api_command
def calendars_list(ctx: Context) -> None:
    """Your calendars, by name."""
    page = ctx.client.list_calendars()
    if ctx.as_json:
        emit_json(page)
        return
    rows = [
        [
            calendar["name"],
            calendar["timezone"],
            _weekday_text(calendar["weekdays"]),
            _holiday_text(calendar["holidays"]) or "-",
            ", ".join(calendar["exchanges"]) or "-",
            len(calendar["dates"]) + len(calendar["yearly"]),
            calendar["version"],
        ]
        for calendar in page["items"]
    ]
    click.echo(table(rows, ["name", "timezone", "weekdays", "holidays", "exchanges", "dates", "version"]))


@calendars.command("get")
@click.argument("name")
@api_command
def calendars_get(ctx: Context, name: str) -> None:
    """One calendar's rules."""
    _show(ctx, ctx.client.get_calendar(name))


@calendars.command("delete")
@click.argument("name")
@api_command
def calendars_delete(ctx: Context, name: str) -> None:
    """Delete calendar NAME; refused while live jobs use it (they are listed)."""
    try:
        deleted = ctx.client.delete_calendar(name)
    except ApiError as error:
        jobs = error.body.get("jobs")
        if error.status != 409 or not isinstance(jobs, list):
            raise
        click.echo(f"error: {error}", err=True)
        # The jobs in the way, with the error on stderr: a refusal prints nothing on stdout.
        rows = [[job["job_id"], job["name"], job["status"]] for job in jobs]
        click.echo(table(rows, ["job id", "name", "status"]), err=True)
        more = int(error.body.get("job_count", len(jobs))) - len(jobs)
        if more > 0:
            click.echo(f"... and {more} more", err=True)
        sys.exit(EXIT_CONFLICT)
    if ctx.as_json:
        emit_json(deleted)
    else:
        click.echo(f"deleted calendar {deleted['name']}")


@calendars.command("days")
@click.argument("name")
@click.option("--from", "from_day", help="YYYY-MM-DD (default: today in the calendar's zone).")
@click.option("--to", "to_day", help="YYYY-MM-DD, included (default: a month on; at most 400 days).")
@api_command
def calendars_days(ctx: Context, name: str, from_day: str | None, to_day: str | None) -> None:
    """The days from --from to --to that calendar NAME excludes, and why."""
    days = ctx.client.calendar_days(name, from_day=from_day, to_day=to_day)
    if ctx.as_json:
        emit_json(days)
        return
    click.echo(f"{days['name']}: {days['from']} to {days['to']}, {len(days['excluded'])} excluded")
    click.echo(table([[day["date"], day["reason"]] for day in days["excluded"]], ["date", "reason"]))


def _show(ctx: Context, calendar: dict[str, Any]) -> None:
    if ctx.as_json:
        emit_json(calendar)
        return
    pairs: list[tuple[str, Any]] = [
        ("name", calendar["name"]),
        ("timezone", calendar["timezone"]),
        ("weekdays", _weekday_text(calendar["weekdays"])),
        ("holidays", _holiday_text(calendar["holidays"]) or "-"),
        ("exchanges", ", ".join(calendar["exchanges"]) or "-"),
    ]
    if calendar["expanded_until"]:
        pairs.append(("known until", calendar["expanded_until"]))
    pairs += [
        ("dates", ", ".join(calendar["dates"]) or "-"),
        ("yearly", ", ".join(calendar["yearly"]) or "-"),
        ("version", calendar["version"]),
    ]
    click.echo(fields(pairs))


_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _weekday_text(days: list[int]) -> str:
    return " ".join(_DAY_NAMES[day - 1] for day in days)


def _holiday_text(sources: list[dict[str, Any]]) -> str:
    return ", ".join(s["country"] + (f"-{s['subdivision']}" if s["subdivision"] else "") for s in sources)
